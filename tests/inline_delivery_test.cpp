// Inline delivery (devices/inline_delivery.hpp): a delivery runs its actor on
// the calling thread, and the actors that actor wakes in turn; past
// kInlineTurns turns, or past kInlineTimeBudget, the rest go to the pool's
// workers; AfterInlineRun's functions run once the turns are over, on the
// calling thread.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <chrono>
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
