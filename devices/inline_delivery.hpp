// Inline delivery: a thread outside the compute pool (the tensor transport's
// io thread, or a client's thread starting its step in Session::Run:
// ClientChannel::StartHere) hands a message to a local actor and runs that
// actor, and the actors it wakes in turn, itself: a few turns at most,
// instead of waking a pool worker for each. A client's thread (which has
// nothing else to do: ClientDeliveryScope) may also compute there what a
// kernel would otherwise send to the pool and wait for, sharing it with the
// pool's workers (a medium variable update).
//
// Why: a message from another process reached its actor through two thread
// wake-ups (the io thread's, then a sleeping worker's); on the virtual
// machines measured here (2 cores, issue 31) a worker's wake-up took 10-50
// us, and a worker woken then polls for more work, taking the core the
// other process's threads need. The chain a small message starts (the
// rendezvous actor, the device actor it answers, the Send or the answer
// that goes back out on the transport) costs a few microseconds of work.
//
// Contract: only event-based actors run here (CAF's scheduled actors, which
// never block: the project's design rule), each for one turn of at most
// kInlineThroughput messages, and at most kInlineTurns turns and
// kInlineTimeBudget per delivery (the first turn always runs: a turn that
// outlasts the budget hands every later one on; the thread, a transport's I/O
// thread serving many peers, has other messages to read; a client's
// delivery, whose thread has nothing else to do, counts its budget from the
// first time another actor becomes runnable or a second turn begins, so a
// step that runs in its first turn reads no clock);
// an actor with more to do, every actor past the budget and every other job
// (the pool's kernels and shards) go to the pool's workers as a client's
// activation would (ComputePool::ScheduleActivation). An actor already
// scheduled or running elsewhere just gets the message (CAF runs an actor on
// one thread at a time). A delivery made while this thread is already
// running actors inline joins that run.
#pragma once

#include <caf/actor.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>

namespace actorflow {

class ComputePool;

/// Actor turns one delivery runs on the calling thread, at most.
constexpr int kInlineTurns = 8;
/// Messages an actor handles in one inline turn, at most.
constexpr size_t kInlineThroughput = 16;
/// How long one delivery runs actors on the calling thread before it hands
/// the rest to the pool (checked between turns and as actors become
/// runnable; the delivery's first turn always runs).
constexpr std::chrono::microseconds kInlineTimeBudget{500};

/// Sends `msg` (as from `sender`, with `mid`) to the local actor `dest` and
/// runs what becomes runnable on this thread, as above. `pool`: where the
/// rest goes. Never throws. False when the message could not be enqueued
/// (no memory for it, or `dest` is null): nothing was delivered.
bool DeliverInline(ComputePool* pool, const caf::actor& dest, caf::strong_actor_ptr sender, caf::message_id mid,
                   caf::message msg) noexcept;

/// Runs `turn(arg)` as a turn of the local event-based actor `actor` on
/// this thread, with no message: for a caller that would deliver one message
/// inline and whose handler body `turn` is (ClientChannel::StartHereStep).
/// Only when the actor is idle: no message queued, not running or scheduled
/// anywhere (its mailbox blocked), and not detached. Not for an actor that
/// awaits a response (request(...).await) or skips messages: those block
/// with messages cached, which the turn would overtake. The thread then takes the actor's mailbox out of its blocked
/// state, as CAF's enqueue does when a message wakes an idle actor, so no
/// other thread runs the actor until it gives it back; a message that
/// arrives meanwhile is only queued. `turn` runs with this thread's inline
/// unit as the actor's context (what it sends, and what it wakes, runs as in
/// DeliverInline), and with no current message (it must not ask for the
/// sender, nor make a response promise). Afterwards, as after a message, the
/// receive timeout is set again and an actor the turn ended (quit) is
/// cleaned up; else the actor is blocked again or, when messages came
/// meanwhile, made runnable and run here as in DeliverInline. Saves what a message costs (making it, CAF's mailbox,
/// its dispatch by type): about a third of a one-node step.
/// True exactly when `turn` ran. False, with nothing run, when the actor
/// was not idle or not initialized yet (lazily), or this thread cannot run
/// it now (already running actors, or of another actor system): the caller
/// delivers a message instead. `turn` must not throw.
bool RunTurnInline(ComputePool* pool, caf::scheduled_actor* actor, void (*turn)(void*), void* arg) noexcept;

/// Wakes that can wait for the end of the actor turn running on this
/// thread. While a WakeAfterHandlerScope lives (the device actor's handlers
/// hold one: Executor::RunningScope), WakeAfterHandler keeps `fn`. What was
/// kept runs as the turn that ran the handler ends (ActorTurnEnded: once
/// CAF has blocked the actor's mailbox again, the actor idle unless more
/// messages came), or, with no turn marked on this thread, as the outermost
/// scope ends; with no scope, `fn` runs now. A handler's outermost scope
/// that begins while wakes kept by an earlier handler of the same turn wait
/// runs them first; an actor whose handlers keep wakes calls RunKeptWakes
/// first in each handler that opens no scope (the device actor's do), so a
/// wake waits for CAF's bookkeeping between messages, never for another
/// message's handler. A kept wake may run after the actor's end (a turn that
/// quit it): it must not touch the actor or its state.
/// For waking a thread that sleeps until the handler's answer: a futex wake
/// took 6-30 us on a 2-vCPU VM; made inside the turn, the woken client found
/// the device actor still in that turn and started its next step as a
/// message (14-16 us to its first kernel) rather than as a turn of its own
/// (RunTurnInline, 6-7 us).
class WakeAfterHandlerScope {
 public:
  WakeAfterHandlerScope();
  ~WakeAfterHandlerScope();
  WakeAfterHandlerScope(const WakeAfterHandlerScope&) = delete;
  WakeAfterHandlerScope& operator=(const WakeAfterHandlerScope&) = delete;
};
/// `fn` must not throw; without memory to keep it, it runs now.
void WakeAfterHandler(std::function<void()> fn) noexcept;
/// Runs the wakes kept so far now (the scope stays): for a handler that has
/// more to do after an answer (other steps' nodes), whose end may be far.
void RunKeptWakes() noexcept;
/// Mark a turn of an actor on this thread: from before CAF's resume of it
/// (or an inline turn here) to after it returns. WorkerPolicy marks every
/// job its workers resume; DeliverInline and RunTurnInline mark the turns
/// they run. Turns nest (counted); the outermost one's end runs the wakes
/// kept in it, unless a WakeAfterHandlerScope is still open.
void ActorTurnBegins() noexcept;
void ActorTurnEnded() noexcept;

/// Whether this thread is running actors for DeliverInline now (an actor
/// that would hand a delivery to the pool's workers may keep it here).
bool InInlineDelivery();

/// Marks DeliverInline calls made while it lives as a client's (a thread in
/// Session::Run that waits for the answer of the actors it runs: it has
/// nothing else to do, unlike a transport's I/O thread).
class ClientDeliveryScope {
 public:
  ClientDeliveryScope();
  ~ClientDeliveryScope();
  ClientDeliveryScope(const ClientDeliveryScope&) = delete;
  ClientDeliveryScope& operator=(const ClientDeliveryScope&) = delete;

 private:
  bool prev_;
};

/// Whether this thread runs actors inline for a waiting client now: a
/// kernel may compute here (sharded with the pool, ComputePool::ParallelFor)
/// what it would otherwise send to the pool and wait for.
bool InClientDelivery();

/// Runs `fn` once the inline run on this thread is over (its actors' turns
/// done), or now when none is: what can wait for them (a step's answer to a
/// master in another process) goes after what another partition waits for
/// (the step's Sends, which the rendezvous actor routes in its own turn).
/// `fn` must not throw.
void AfterInlineRun(std::function<void()> fn);

}  // namespace actorflow
