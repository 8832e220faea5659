#include "actorflow/devices/inline_delivery.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/execution_unit.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduled_actor.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "actorflow/devices/compute_pool.hpp"

namespace actorflow {

namespace {

// The actors a delivery made runnable, run in order on the calling thread.
class InlineUnit final : public caf::execution_unit {
 public:
  explicit InlineUnit(caf::actor_system* sys) : caf::execution_unit(sys) {}

  void exec_later(caf::resumable* job) override {
    if (job->subtype() == caf::resumable::scheduled_actor && turns_ + queued_ < kInlineTurns &&
        queued_ < jobs_.size() && ((turns_ == 0 && queued_ == 0) || !PastBudget())) {  // the first always runs
      jobs_[(head_ + queued_++) % jobs_.size()] = job;
      return;
    }
    HandOn(job);
  }

  // Runs the queued actors (each one turn) until none is left.
  void Drain() noexcept {
    while (queued_ > 0) {
      caf::resumable* job = jobs_[head_];
      head_ = (head_ + 1) % jobs_.size();
      --queued_;
      if (turns_ > 0 && PastBudget()) {  // this thread has other work: the workers take the rest
        HandOn(job);
        continue;
      }
      ++turns_;
      caf::resumable::resume_result r;
      ActorTurnBegins();
      try {
        r = job->resume(this, kInlineThroughput);
      } catch (...) {  // CAF handles a handler's exceptions; this is the last line of defence
        std::fprintf(stderr, "actorflow: exception escaped an actor run inline\n");
        r = caf::resumable::done;
      }
      ActorTurnEnded();  // the clients its handlers answered are woken now, the actor idle again
      if (r == caf::resumable::resume_later) HandOn(job);  // more messages: a worker takes its reference
      else caf::intrusive_ptr_release(job);                // the reference CAF took when it made it runnable
    }
  }

  // `client`: a client's delivery (ClientDeliveryScope), whose budget starts
  // when it is first asked about (a short step asks never: no clock read).
  void Reset(ComputePool* pool, bool client) {
    pool_ = pool;
    turns_ = 0;
    timed_ = !client;
    if (timed_) start_ = std::chrono::steady_clock::now();
  }
  // Whether this delivery has run for its time budget already.
  bool PastBudget() {
    const auto now = std::chrono::steady_clock::now();
    if (!timed_) {
      timed_ = true;
      start_ = now;
      return false;
    }
    return now - start_ > kInlineTimeBudget;
  }
  bool running = false;
  std::vector<std::function<void()>> after;  // AfterInlineRun

 private:
  void HandOn(caf::resumable* job) noexcept {
    try {
      pool_->ScheduleActivation(job);
    } catch (...) {  // no memory for a queue node
      pool_->RescheduleAfterFailure(job);
    }
  }

  ComputePool* pool_ = nullptr;
  std::array<caf::resumable*, kInlineTurns> jobs_{};
  size_t head_ = 0, queued_ = 0;
  int turns_ = 0;
  bool timed_ = false;  // start_ is set
  std::chrono::steady_clock::time_point start_{};
};

// One per thread that delivers inline, for the thread's life (an actor run
// here keeps a pointer to it as its last context, read only while it runs).
thread_local std::unique_ptr<InlineUnit> t_owned;
// What the hot checks read, in one trivially constructed thread-local (one
// TLS lookup each: this library is shared, each lookup a __tls_get_addr call).
struct InlineThread {
  InlineUnit* unit;  // t_owned's, once made
  bool client;       // ClientDeliveryScope
  bool kept;         // WakeAfterHandler kept wakes not run yet
  int wake_scopes;   // WakeAfterHandlerScopes open
  int turns;         // actor turns marked (ActorTurnBegins)
};
thread_local InlineThread t_inline{nullptr, false, false, 0, 0};

// This thread's unit, made on its first delivery (null when there is no
// memory for it).
InlineUnit* ThreadUnit(InlineThread& t, caf::actor_system& sys) noexcept {
  try {
    if (!t.unit) {
      t_owned = std::make_unique<InlineUnit>(&sys);
      t.unit = t_owned.get();
    }
  } catch (...) {
    t.unit = nullptr;
  }
  return t.unit;
}

// Runs what a delivery made runnable, ends the run, then its after-run functions.
void FinishRun(InlineUnit* unit) noexcept {
  unit->Drain();
  unit->running = false;
  std::vector<std::function<void()>> after;
  after.swap(unit->after);
  for (auto& fn : after) fn();
}

}  // namespace

bool InInlineDelivery() {
  const InlineThread& t = t_inline;
  return t.unit && t.unit->running;
}

ClientDeliveryScope::ClientDeliveryScope() : prev_(t_inline.client) { t_inline.client = true; }
ClientDeliveryScope::~ClientDeliveryScope() { t_inline.client = prev_; }

bool InClientDelivery() {
  const InlineThread& t = t_inline;
  return t.client && t.unit && t.unit->running;
}

bool DeliverInline(ComputePool* pool, const caf::actor& dest, caf::strong_actor_ptr sender, caf::message_id mid,
                   caf::message msg) noexcept {
  if (!dest) return false;
  InlineThread& t = t_inline;
  InlineUnit* const t_unit = ThreadUnit(t, dest->home_system());
  caf::mailbox_element_ptr element;
  try {
    element = caf::make_mailbox_element(std::move(sender), mid, {}, std::move(msg));
  } catch (...) {
    return false;  // no memory for the message
  }
  auto* actor = caf::actor_cast<caf::abstract_actor*>(dest);
  if (t_unit && &t_unit->system() != &dest->home_system()) {  // a thread serving two systems (tests): no inline runs
    try {
      actor->enqueue(std::move(element), pool->activation_unit());
    } catch (...) {
      return false;
    }
    return true;
  }
  if (!t_unit || t_unit->running) {  // no unit, or a delivery from inside a run: joins it
    try {
      actor->enqueue(std::move(element), t_unit ? static_cast<caf::execution_unit*>(t_unit) : pool->activation_unit());
    } catch (...) {
      return false;
    }
    return true;
  }
  t_unit->Reset(pool, t.client);
  t_unit->running = true;
  bool delivered = true;
  try {
    actor->enqueue(std::move(element), t_unit);
  } catch (...) {  // CAF's enqueue failed for memory
    delivered = false;
  }
  FinishRun(t_unit);
  return delivered;
}

bool RunTurnInline(ComputePool* pool, caf::scheduled_actor* actor, void (*turn)(void*), void* arg) noexcept {
  if (!actor) return false;
  InlineThread& t = t_inline;
  InlineUnit* const t_unit = ThreadUnit(t, actor->home_system());
  if (!t_unit || t_unit->running || &t_unit->system() != &actor->home_system()) return false;
  // A detached actor runs on a thread of its own, which only a message wakes.
  if (actor->getf(caf::abstract_actor::is_detached_flag)) return false;
  // Idle: blocked. Taking it out of that state is what makes this thread
  // the actor's only runner (an enqueue that finds it unblocked only
  // queues); a closed mailbox (the actor ended) stays closed.
  if (!actor->mailbox().try_unblock()) return false;
  t_unit->Reset(pool, t.client);
  t_unit->running = true;
  // Blocked but not initialized: a lazily initialized actor before its first
  // message (whose first turn initializes it). An actor that quit is blocked
  // no more (its mailbox closed in that turn), unless it lingers for streams.
  const bool alive =
      actor->getf(caf::abstract_actor::is_initialized_flag) &&
      !actor->getf(caf::abstract_actor::is_shutting_down_flag | caf::abstract_actor::is_terminated_flag);
  ActorTurnBegins();
  if (alive) {
    actor->context(t_unit);
    actor->current_mailbox_element(nullptr);  // the last turn's message is gone
    turn(arg);
    // What CAF does after a handled message: drop the behaviours the turn
    // left, re-arm the receive timeout, and clean up an actor the turn ended
    // (quit: its mailbox closes, so it neither blocks nor runs again).
    actor->bhvr_stack().cleanup();
    if (actor->finalize()) {
      ActorTurnEnded();
      FinishRun(t_unit);
      return true;
    }
    actor->set_receive_timeout();
  }
  // Messages that came meanwhile (the turn's own resumes and completions):
  // the actor runs on, as a message arriving now would make it.
  const bool more = !actor->mailbox().try_block();
  ActorTurnEnded();  // woken now, a client finds the actor idle (unless `more`)
  if (more) {
    caf::intrusive_ptr_add_ref(actor->ctrl());
    t_unit->exec_later(actor);
  }
  FinishRun(t_unit);
  return alive;
}

namespace {
// WakeAfterHandler's list (made on the thread's first kept wake, freed with
// the thread); t_inline counts the scopes and turns.
std::vector<std::function<void()>>& Wakes() {
  thread_local std::vector<std::function<void()>> wakes;
  return wakes;
}
}  // namespace

WakeAfterHandlerScope::WakeAfterHandlerScope() {
  InlineThread& t = t_inline;
  if (t.wake_scopes++ == 0 && t.kept) RunKeptWakes();  // an earlier handler's, of this turn: not behind this one
}

WakeAfterHandlerScope::~WakeAfterHandlerScope() {
  InlineThread& t = t_inline;
  if (--t.wake_scopes == 0 && t.turns == 0) RunKeptWakes();
}

void ActorTurnBegins() noexcept { ++t_inline.turns; }

void ActorTurnEnded() noexcept {
  InlineThread& t = t_inline;
  if (--t.turns == 0 && t.wake_scopes == 0) RunKeptWakes();
}

void RunKeptWakes() noexcept {
  InlineThread& t = t_inline;
  if (!t.kept) return;
  t.kept = false;
  std::vector<std::function<void()>>& kept = Wakes();
  // The list is taken first: a wake that kept another would not be run twice.
  std::vector<std::function<void()>> wakes;
  wakes.swap(kept);
  for (auto& fn : wakes) fn();
  wakes.clear();
  if (kept.empty()) kept.swap(wakes);  // keeps its capacity: no allocation per step
}

void WakeAfterHandler(std::function<void()> fn) noexcept {
  InlineThread& t = t_inline;
  if (t.wake_scopes > 0) {
    try {
      Wakes().push_back(std::move(fn));
      t.kept = true;
      return;
    } catch (...) {  // no memory to keep it: now
    }
  }
  fn();
}

void AfterInlineRun(std::function<void()> fn) {
  if (InInlineDelivery()) {
    try {
      t_inline.unit->after.push_back(std::move(fn));
      return;
    } catch (...) {  // no memory to keep it: now
    }
  }
  fn();
}

}  // namespace actorflow
