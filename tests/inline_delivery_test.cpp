// Inline delivery (devices/inline_delivery.hpp): a delivery runs its actor on
// the calling thread, and the actors that actor wakes in turn; past
// kInlineTurns turns, or past kInlineTimeBudget, the rest go to the pool's
// workers; AfterInlineRun's functions run once the turns are over, on the
// calling thread. RunTurnInline runs a turn of an idle actor with no
// message, alone, and what came meanwhile after it.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

// Where each actor of a chain ran, and where the chain's after-run function ran.
struct Seen {
  std::mutex mu;
  std::map<int, std::thread::id> ran;
  std::thread::id after;
  bool after_saw_all = false;  // when it ran, every actor of the chain had
  // Every actor ran and the after-run function too (its last write).
  bool done(size_t n) {
    std::lock_guard<std::mutex> l(mu);
    return ran.size() == n && after != std::thread::id();
  }
};

// A chain of `n` actors: actor i records its thread, busy-waits `spin[i]`
// (if given), and sends on to actor i+1; the last one asks for an after-run
// function. Lazily initialised: not scheduled anywhere until their first
// message (a freshly spawned actor runs its start on a worker).
std::vector<caf::actor> Chain(caf::actor_system& sys, int n, Seen* seen,
                              std::map<int, std::chrono::microseconds> spin = {}) {
  std::vector<caf::actor> chain(n);
  for (int i = n - 1; i >= 0; --i) {
    caf::actor next = i + 1 < n ? chain[i + 1] : caf::actor();
    const auto busy = spin.count(i) ? spin[i] : std::chrono::microseconds(0);
    chain[i] = sys.spawn<caf::lazy_init>([i, n, next, busy, seen](caf::event_based_actor* self) -> caf::behavior {
      return {[=](int) {
        {
          std::lock_guard<std::mutex> l(seen->mu);
          seen->ran[i] = std::this_thread::get_id();
        }
        const auto until = std::chrono::steady_clock::now() + busy;
        while (std::chrono::steady_clock::now() < until) {
        }
        if (next) self->send(next, 1);
        if (i == n - 1)
          AfterInlineRun([seen, n] {
            std::lock_guard<std::mutex> l(seen->mu);
            seen->after = std::this_thread::get_id();
            seen->after_saw_all = static_cast<int>(seen->ran.size()) == n;
          });
      }};
    });
  }
  return chain;
}

// Delivers to the chain's first actor from a thread of its own (as a
// transport's I/O thread delivers: one actor system for the thread's life),
// waits (bounded) until every actor and the after-run function ran (nothing
// touches `seen` after), and returns the delivering thread.
std::thread::id Run(Runtime& rt, const std::vector<caf::actor>& chain, Seen* seen) {
  std::thread::id caller;
  bool delivered = false;
  std::thread t([&] {
    caller = std::this_thread::get_id();
    delivered = DeliverInline(rt.compute_pool(), chain[0], nullptr, caf::make_message_id(), caf::make_message(1));
  });
  t.join();
  REQUIRE(delivered);
  REQUIRE(WaitUntil([&] { return seen->done(chain.size()); }, std::chrono::seconds(20)));
  return caller;
}

}  // namespace

TEST_CASE("inline delivery: the actors a delivery wakes run on the caller's thread, then its after-run functions") {
  Runtime rt(TwoThreads());
  // A loaded machine may take the thread away for longer than the time
  // budget in the middle of a run: then the rest went to the pool, correctly.
  // One run in five all inline shows the rule.
  bool all_inline = false;
  for (int attempt = 0; attempt < 5 && !all_inline; ++attempt) {
    Seen seen;
    const std::thread::id caller = Run(rt, Chain(rt.system(), 4, &seen), &seen);
    std::lock_guard<std::mutex> l(seen.mu);
    all_inline = true;
    for (const auto& [i, id] : seen.ran) all_inline = all_inline && id == caller;
    if (all_inline) {
      CHECK(seen.after == caller);
      CHECK(seen.after_saw_all);
    }
  }
  CHECK(all_inline);
}

TEST_CASE("inline delivery: past kInlineTurns turns, the rest run on the pool's workers") {
  Seen seen;  // outlives the runtime's actors
  Runtime rt(TwoThreads());
  const int n = kInlineTurns + 4;
  const std::thread::id caller = Run(rt, Chain(rt.system(), n, &seen), &seen);
  std::lock_guard<std::mutex> l(seen.mu);
  CHECK(seen.ran[0] == caller);  // the first turn always runs there
  for (int i = kInlineTurns; i < n; ++i) CHECK(seen.ran[i] != caller);
}

TEST_CASE("inline delivery: a turn that outlasts the time budget hands every later one to the pool") {
  Seen seen;  // outlives the runtime's actors
  Runtime rt(TwoThreads());
  // The first actor works for 4 budgets.
  const std::thread::id caller = Run(rt, Chain(rt.system(), 4, &seen, {{0, 4 * kInlineTimeBudget}}), &seen);
  std::lock_guard<std::mutex> l(seen.mu);
  CHECK(seen.ran[0] == caller);
  for (int i = 1; i < 4; ++i) CHECK(seen.ran[i] != caller);
}

namespace {

// An actor for RunTurnInline: each int it handles is counted, with the
// thread it ran on and whether a turn run with no message was under way
// then; a `false` blocks its handler until `release` (a busy actor); a
// `true` makes it quit.
struct TurnProbe {
  std::mutex mu;
  std::condition_variable cv;
  int handled = 0;
  std::thread::id handled_on;
  bool during_turn = false;       // a message was handled while a turn ran
  std::atomic<bool> in_turn{false};
  bool blocked = false, release = false;
};

caf::actor SpawnProbe(caf::actor_system& sys, TurnProbe* p) {
  return sys.spawn([p](caf::event_based_actor* self) -> caf::behavior {
    return {[p](int) {
              std::lock_guard<std::mutex> l(p->mu);
              ++p->handled;
              p->handled_on = std::this_thread::get_id();
              if (p->in_turn.load()) p->during_turn = true;
            },
            [p, self](bool quit) {
              if (quit) {
                self->quit();
                return;
              }
              std::unique_lock<std::mutex> l(p->mu);
              p->blocked = true;
              p->cv.notify_all();
              p->cv.wait(l, [p] { return p->release; });
            }};
  });
}

caf::scheduled_actor* Scheduled(const caf::actor& a) {
  return dynamic_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(a));
}

// Runs `turn` as a turn of `a` from a fresh thread (one actor system per
// thread, as RunTurnInline requires), trying again while the actor is still
// finishing its last turn on a worker, for up to `bound` (zero: once).
// Returns whether it ran, and the thread it ran on.
template <class Fn>
bool TurnFromThread(Runtime& rt, const caf::actor& a, Fn turn, std::thread::id* caller,
                    std::chrono::milliseconds bound = std::chrono::seconds(30)) {
  bool ran = false;
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    std::thread t([&] {
      *caller = std::this_thread::get_id();
      ran = RunTurnInline(rt.compute_pool(), Scheduled(a), [](void* f) { (*static_cast<Fn*>(f))(); }, &turn);
    });
    t.join();
    if (ran || std::chrono::steady_clock::now() >= until) return ran;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a retry's pause, orders nothing
  }
}

// Whether `a` runs no turn when asked once: RunTurnInline says so, and the turn did not run.
bool RunsNoTurn(Runtime& rt, const caf::actor& a) {
  bool turned = false;
  std::thread::id caller;
  const bool ran = TurnFromThread(rt, a, [&] { turned = true; }, &caller, std::chrono::milliseconds(0));
  return !ran && !turned;
}

// Sends `a` an int and waits (bounded) until `p` has handled `n` in all.
bool Handles(TurnProbe* p, const caf::actor& a, int n) {
  caf::anon_send(a, 1);
  return WaitUntil(
      [&] {
        std::lock_guard<std::mutex> l(p->mu);
        return p->handled == n;
      },
      std::chrono::seconds(30));
}

// Waits (bounded) until `a` is down.
bool Down(caf::actor_system& sys, const caf::actor& a) {
  caf::scoped_actor self{sys};
  self->monitor(a);
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(std::chrono::seconds(30)) >> [] {});
  return down;
}

}  // namespace

TEST_CASE("run turn inline: an idle actor's turn runs on the caller's thread; what it sends itself runs after, there") {
  TurnProbe p;  // outlives the runtime's actors
  Runtime rt(TwoThreads());
  caf::actor a = SpawnProbe(rt.system(), &p);
  std::thread::id caller, turn_on;
  int seen_in_turn = -1;
  const bool ran = TurnFromThread(rt, a,
                                  [&] {
                                    turn_on = std::this_thread::get_id();
                                    {
                                      std::lock_guard<std::mutex> l(p.mu);
                                      seen_in_turn = p.handled;
                                    }
                                    auto* self = dynamic_cast<caf::event_based_actor*>(Scheduled(a));
                                    self->send(a, 1);  // queued: the actor is this thread's until the turn ends
                                  },
                                  &caller);
  REQUIRE(ran);
  CHECK(turn_on == caller);
  CHECK(seen_in_turn == 0);
  // Before RunTurnInline returned, the message the turn sent ran on its thread.
  std::lock_guard<std::mutex> l(p.mu);
  CHECK(p.handled == 1);
  CHECK(p.handled_on == caller);
}

TEST_CASE("run turn inline: a message sent meanwhile waits for the turn's end, never runs beside it") {
  TurnProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = SpawnProbe(rt.system(), &p);
  std::thread::id caller;
  bool ran_beside = false;
  const bool ran = TurnFromThread(rt, a,
                                  [&] {
                                    p.in_turn = true;
                                    std::thread other([&] { caf::anon_send(a, 1); });
                                    other.join();  // enqueued
                                    // Were the actor made runnable by that send, a worker would
                                    // run it now: give it ample time to show (a bound on a
                                    // violation, orders nothing in a correct run).
                                    ran_beside = WaitUntil(
                                        [&] {
                                          std::lock_guard<std::mutex> l(p.mu);
                                          return p.handled > 0;
                                        },
                                        std::chrono::milliseconds(100));
                                    p.in_turn = false;
                                  },
                                  &caller);
  REQUIRE(ran);
  CHECK_FALSE(ran_beside);
  std::lock_guard<std::mutex> l(p.mu);
  CHECK(p.handled == 1);  // after the turn, on its thread
  CHECK(p.handled_on == caller);
  CHECK_FALSE(p.during_turn);
}

TEST_CASE("run turn inline: a busy actor or an ended one runs no turn") {
  TurnProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = SpawnProbe(rt.system(), &p);
  // Whatever fails below, the blocked handler is let go (else the runtime's end waits for it).
  auto release = [&] {
    {
      std::lock_guard<std::mutex> l(p.mu);
      p.release = true;
    }
    p.cv.notify_all();
  };
  struct Guard {
    std::function<void()> fn;
    ~Guard() { fn(); }
  } guard{release};
  caf::anon_send(a, false);  // its handler holds a worker until released
  {
    std::unique_lock<std::mutex> l(p.mu);
    REQUIRE(p.cv.wait_for(l, std::chrono::seconds(30), [&] { return p.blocked; }));
  }
  CHECK(RunsNoTurn(rt, a));
  release();
  // It still works as an actor: the next message is handled.
  REQUIRE(Handles(&p, a, 1));
  // Ended: its mailbox is closed for good.
  caf::anon_send(a, true);
  REQUIRE(Down(rt.system(), a));
  CHECK(RunsNoTurn(rt, a));
}

TEST_CASE("run turn inline: a lazily initialized actor is not run before its first message") {
  TurnProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = rt.system().spawn<caf::lazy_init>([&p](caf::event_based_actor*) -> caf::behavior {
    return {[&p](int) {
      std::lock_guard<std::mutex> l(p.mu);
      ++p.handled;
    }};
  });
  // Blocked from its spawn on, with no behaviour yet: no turn runs.
  CHECK(RunsNoTurn(rt, a));
  // Its mailbox was given back: the first message initializes and runs it.
  REQUIRE(Handles(&p, a, 1));
}

TEST_CASE("run turn inline: an actor that quits in the turn ends as after a message") {
  TurnProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = SpawnProbe(rt.system(), &p);
  std::thread::id caller;
  // Monitored before the turn: its down message must come (cleanup ran), not hang the test or the runtime's end.
  caf::scoped_actor watcher{rt.system()};
  watcher->monitor(a);
  REQUIRE(TurnFromThread(rt, a, [&] { dynamic_cast<caf::event_based_actor*>(Scheduled(a))->quit(); }, &caller));
  bool down = false;
  watcher->receive([&](caf::down_msg&) { down = true; }, caf::after(std::chrono::seconds(30)) >> [] {});
  CHECK(down);
  CHECK(RunsNoTurn(rt, a));
}

TEST_CASE("wakes after a handler: kept until the outermost scope ends or RunKeptWakes, in order; with no scope, at once") {
  std::vector<int> ran;
  WakeAfterHandler([&] { ran.push_back(0); });
  CHECK(ran == std::vector<int>{0});  // no handler on this thread: now
  {
    WakeAfterHandlerScope outer;
    WakeAfterHandler([&] { ran.push_back(1); });
    {
      WakeAfterHandlerScope inner;  // a handler run inside another's (an inline delivery)
      WakeAfterHandler([&] { ran.push_back(2); });
    }
    CHECK(ran == std::vector<int>{0});  // the inner scope's end keeps them
  }
  CHECK(ran == (std::vector<int>{0, 1, 2}));
  {
    WakeAfterHandlerScope again;  // the list is reused, empty
    WakeAfterHandler([&] { ran.push_back(3); });
    RunKeptWakes();  // a handler with more to do wakes its clients now
    CHECK(ran == (std::vector<int>{0, 1, 2, 3}));
    WakeAfterHandler([&] { ran.push_back(4); });
  }
  CHECK(ran == (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_CASE("wakes after a handler: in an actor's turn, kept until the turn ends; a later handler runs an earlier one's first") {
  std::vector<int> ran;
  ActorTurnBegins();  // as a worker does before it resumes an actor
  {
    WakeAfterHandlerScope handler;
    WakeAfterHandler([&] { ran.push_back(1); });
  }
  CHECK(ran.empty());  // the handler is over, the turn is not
  {
    WakeAfterHandlerScope next;  // the next message's handler, same turn
    CHECK(ran == std::vector<int>{1});  // not kept behind it
    WakeAfterHandler([&] { ran.push_back(2); });
  }
  CHECK(ran == std::vector<int>{1});
  ActorTurnBegins();  // a turn inside a turn (an inline delivery): the outer one's end counts
  ActorTurnEnded();
  CHECK(ran == std::vector<int>{1});
  ActorTurnEnded();
  CHECK(ran == (std::vector<int>{1, 2}));
  // No handler's scope open: a wake made in a turn runs at once, as with no turn.
  ActorTurnBegins();
  WakeAfterHandler([&] { ran.push_back(3); });
  CHECK(ran == (std::vector<int>{1, 2, 3}));
  ActorTurnEnded();
}

namespace {
// An actor whose handler keeps a wake (as the device actor's answer does)
// that records whether the actor's mailbox was blocked (the actor idle) when
// the wake ran.
struct WakeProbe {
  std::mutex mu;
  bool woken = false, idle_at_wake = false;
};

caf::actor SpawnWaker(caf::actor_system& sys, WakeProbe* p) {
  return sys.spawn([p](caf::event_based_actor* self) -> caf::behavior {
    return {[p, self](int) {
      WakeAfterHandlerScope handler;
      WakeAfterHandler([p, self] {
        std::lock_guard<std::mutex> l(p->mu);
        p->woken = true;
        p->idle_at_wake = self->mailbox().blocked();
      });
    }};
  });
}

// Waits (bounded) until the probe's wake has run.
bool Woken(WakeProbe* p) {
  return WaitUntil(
      [p] {
        std::lock_guard<std::mutex> l(p->mu);
        return p->woken;
      },
      std::chrono::seconds(30));
}
}  // namespace

TEST_CASE("wakes after a handler: a worker's turn wakes its clients after the actor is idle again") {
  WakeProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = SpawnWaker(rt.system(), &p);
  caf::anon_send(a, 1);  // from outside the pool: a worker runs the turn
  REQUIRE(Woken(&p));
  std::lock_guard<std::mutex> l(p.mu);
  CHECK(p.idle_at_wake);  // inside the turn, its mailbox would not be blocked yet
}

TEST_CASE("wakes after a handler: an inline turn wakes its clients after the actor is idle again") {
  WakeProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = SpawnWaker(rt.system(), &p);
  std::thread::id caller;
  REQUIRE(TurnFromThread(rt, a,
                         [&] {
                           WakeAfterHandlerScope handler;
                           WakeAfterHandler([&p, a] {
                             std::lock_guard<std::mutex> l(p.mu);
                             p.woken = true;
                             p.idle_at_wake = Scheduled(a)->mailbox().blocked();
                           });
                         },
                         &caller));
  std::lock_guard<std::mutex> l(p.mu);
  CHECK(p.woken);  // before RunTurnInline returned
  CHECK(p.idle_at_wake);
}

TEST_CASE("wakes after a handler: an inline delivery's turn wakes its clients after the actor is idle again") {
  WakeProbe p;
  Runtime rt(TwoThreads());
  caf::actor a = SpawnWaker(rt.system(), &p);
  // Once idle after its spawn (its start ran on a worker), the delivery runs it on the delivering thread.
  REQUIRE(WaitUntil([&] { return Scheduled(a)->mailbox().blocked(); }, std::chrono::seconds(30)));
  bool delivered = false;
  std::thread t([&] {
    delivered = DeliverInline(rt.compute_pool(), a, nullptr, caf::make_message_id(), caf::make_message(1));
  });
  t.join();
  REQUIRE(delivered);
  REQUIRE(Woken(&p));
  std::lock_guard<std::mutex> l(p.mu);
  CHECK(p.idle_at_wake);
}
