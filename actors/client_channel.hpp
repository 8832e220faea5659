// ClientChannel: how a thread that is not an actor (a caller of Session::Run)
// asks an actor something and waits for the answer.
//
// The channel is a CAF actor_companion: a real actor address that the callee
// answers like any requester, but whose mailbox hands each message straight to
// a callback instead of scheduling it (a local device actor answers a step
// started by StartHereStep by calling the channel instead, and an idle one
// even starts it with no message: RunStepHere). The
// callback stores the reply and wakes the caller, who spins briefly (a step often ends within microseconds) and
// then sleeps on a condition variable. One request at a time per channel;
// ChannelPool keeps channels for reuse across calls and threads.
#pragma once

#include <caf/actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "actorflow/core/status.hpp"

namespace caf {
class actor_system;
class execution_unit;
}

namespace actorflow {

class ComputePool;
struct RunStepRequest;
struct RunStepResponse;

/// Told of every reply to the channels started with it, so one thread can
/// wait for whichever of several requests answers first.
struct ReplyNotifier {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t replies = 0;  // guarded by mu
};

class ClientChannel {
 public:
  /// `pool`, when given, picks the worker that runs the callee when this
  /// channel's message wakes it (ComputePool::ScheduleActivation).
  explicit ClientChannel(caf::actor_system& sys, ComputePool* pool = nullptr);
  ~ClientChannel();
  ClientChannel(const ClientChannel&) = delete;
  ClientChannel& operator=(const ClientChannel&) = delete;

  /// Sends `msg` to `dest` as a request and waits for the reply. `timeout`
  /// zero waits without bound. DeadlineExceeded when no reply came in time —
  /// the channel must then not be reused (a late reply may still arrive).
  /// `spin`: how long the caller may busy-wait before it sleeps (beyond a
  /// few microseconds it always does): waking a sleeping thread costs tens
  /// of microseconds on a virtual machine, as much as a short step.
  Status Ask(const caf::actor& dest, caf::message msg, std::chrono::milliseconds timeout, caf::message* reply,
             std::chrono::nanoseconds spin = std::chrono::nanoseconds(0));
  /// Ask in two halves, so one thread can have requests to several actors in
  /// flight: Start sends, Wait collects the answer (as Ask's second half).
  /// `notifier`, when given, is told when the reply is there.
  Status Start(const caf::actor& dest, caf::message msg, std::shared_ptr<ReplyNotifier> notifier = nullptr);
  /// Start, but a local `dest` runs on this thread at once, with the actors
  /// it wakes, a few turns at most (devices/inline_delivery.hpp), rather than
  /// on a worker woken for it; a remote one, or a channel without a pool, as
  /// Start.
  Status StartHere(const caf::actor& dest, caf::message msg, std::shared_ptr<ReplyNotifier> notifier = nullptr);
  /// StartHere for a step of a local device actor: the request names this
  /// channel as its StepReplySink (net/worker_service.hpp), so the device
  /// answers by a call, not a reply message (after Wait, TakeStepResponse
  /// gives it). An idle device actor runs the step as a turn on this thread
  /// with no message at all (RunStepHere); a busy one gets it as a message,
  /// delivered inline. Where StartHere would fall back to Start,
  /// sent as Start sends it (a request answered by message).
  Status StartHereStep(const caf::actor& dest, RunStepRequest&& req, std::shared_ptr<ReplyNotifier> notifier = nullptr);
  /// The function that hands a channel its answer (StartVia).
  using ReplyFn = std::function<void(caf::message)>;
  /// What a channel that gives up on a request sent by StartVia runs (Wait's
  /// DeadlineExceeded): the sender forgets the request.
  using CancelFn = std::function<void()>;
  /// Start, but the request travels by `send` rather than as a CAF message:
  /// `send` gets the function that answers it (once, from any thread; an
  /// answer that comes after the channel moved on is dropped) and says
  /// whether the request left (not OK: nothing is in flight); it may set
  /// the CancelFn. `dest` stands for the callee and is monitored as with
  /// Start: its going down answers.
  Status StartVia(const caf::actor& dest, const std::function<Status(ReplyFn, CancelFn*)>& send,
                  std::shared_ptr<ReplyNotifier> notifier = nullptr);
  /// Whether the reply to the request in flight is there (Wait returns at once).
  bool Ready() const;
  Status Wait(std::chrono::milliseconds timeout, caf::message* reply,
              std::chrono::nanoseconds spin = std::chrono::nanoseconds(0));
  /// After Wait: a step's answer, as a device gave it to a StartHereStep
  /// request (by a call, no message: its arrival needs no memory), else as
  /// `reply` (ReplyAs).
  Status TakeStepResponse(caf::message& reply, RunStepResponse* resp);
  /// When the last reply reached the channel: the callee's answer time, not
  /// the caller's (which adds the wake-up of a sleeping caller); the epoch
  /// (not taken) for the answer to a request this channel's thread was
  /// delivering inline (StartHere), which came before the caller waits.
  std::chrono::steady_clock::time_point answered_at() const { return answered_at_; }

 private:
  struct Slot;
  // Readies the slot for a request to `dest` (monitored, unless `monitor` is
  // false: the caller monitors it later if need be) and returns its id.
  caf::message_id Arm(const caf::actor& dest, std::shared_ptr<ReplyNotifier> notifier, bool monitor = true);
  // Whether StartHere may run the local `dest` on this thread.
  bool RunsHere(const caf::actor& dest) const;
  // StartHere's second half, once armed: delivers and runs `msg` here, then
  // monitors `dest` if its answer is not there yet.
  Status DeliverHere(const caf::actor& dest, caf::message_id mid, caf::message msg);
  // Monitors `dest`, the callee of a request run inline, unless its answer came already.
  void WatchUnlessReady(const caf::actor& dest);
  std::shared_ptr<Slot> slot_;  // shared with the companion's callback
  caf::strong_actor_ptr companion_;
  ComputePool* pool_;                // or null
  caf::execution_unit* activation_;  // the pool's, or null
  caf::actor callee_;                // of the request in flight, while monitored
  bool monitored_ = false;           // whether callee_ is set and monitored
  CancelFn cancel_;                  // of a request in flight sent by StartVia, or empty
  std::chrono::steady_clock::time_point answered_at_;
};

/// Turns a channel's reply into `Resp`, or the Status of why there is none.
template <class Resp>
Status ReplyAs(caf::message& reply, Resp* resp) {
  if (reply.match_elements<Resp>()) {
    *resp = std::move(reply.get_mutable_as<Resp>(0));
    return Status::OK();
  }
  if (reply.match_elements<caf::error>())
    return errors::Unavailable("actor failed to answer: ", to_string(reply.get_as<caf::error>(0)));
  if (reply.match_elements<caf::down_msg>())
    return errors::Unavailable("actor went down before answering: ", to_string(reply.get_as<caf::down_msg>(0).reason));
  return errors::Internal("unexpected reply: ", to_string(reply));
}

/// Reusable channels of one actor system. Thread-safe.
class ChannelPool {
 public:
  explicit ChannelPool(caf::actor_system& sys, ComputePool* pool = nullptr) : sys_(sys), pool_(pool) {}
  ~ChannelPool();
  ChannelPool(const ChannelPool&) = delete;
  ChannelPool& operator=(const ChannelPool&) = delete;
  std::unique_ptr<ClientChannel> Acquire();
  void Release(std::unique_ptr<ClientChannel> ch);

  /// Ask through a pooled channel; a channel that timed out is discarded.
  /// `answered_at`, when given, receives when the reply arrived (see
  /// ClientChannel::answered_at).
  template <class Resp, class Req>
  Status Ask(const caf::actor& dest, Req req, std::chrono::milliseconds timeout, Resp* resp,
             std::chrono::nanoseconds spin = std::chrono::nanoseconds(0),
             std::chrono::steady_clock::time_point* answered_at = nullptr);

 private:
  caf::actor_system& sys_;
  ComputePool* pool_;
  // One free channel taken and given back with one atomic exchange (a
  // single client's loop of steps never locks); the others under mu_.
  std::atomic<ClientChannel*> spare_{nullptr};
  std::mutex mu_;  // guards free_ (client threads only)
  std::vector<std::unique_ptr<ClientChannel>> free_;
};

template <class Resp, class Req>
Status ChannelPool::Ask(const caf::actor& dest, Req req, std::chrono::milliseconds timeout, Resp* resp,
                        std::chrono::nanoseconds spin, std::chrono::steady_clock::time_point* answered_at) {
  auto ch = Acquire();
  caf::message reply;
  Status s = ch->Ask(dest, caf::make_message(std::move(req)), timeout, &reply, spin);
  if (errors::IsDeadlineExceeded(s)) return s;  // drop the channel with its late reply
  if (answered_at) *answered_at = ch->answered_at();
  Release(std::move(ch));
  AF_RETURN_IF_ERROR(s);
  return ReplyAs(reply, resp);
}

}  // namespace actorflow
