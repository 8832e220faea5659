// StepCalls: a partition's step between two processes (RunStepRequest ->
// RunStepResponse) on the tensor transport's control channel
// (comm/tensor_transport.hpp, Channel::kControl) instead of CAF's remote
// messaging.
//
// Why: a step whose partitions sit in two processes waited mostly for BASP.
// Measured on 2 cores (issue 31): a RunStepRequest took 55-120 us from the
// master's send to the remote worker actor, its RunStepResponse 85-115 us
// back (a pipe write to wake the middleman's multiplexer, its serializing,
// an epoll round to write, the peer's multiplexer, a BASP worker job on the
// scheduler), of a 2-process step of ~300 us; the transport carries a small
// message one way in ~10-20 us (one non-blocking sendmsg from the caller's
// thread, the peer's io thread hands it on).
//
// Wire: one transport message per call, on kControl; meta is
//   u8 kind (1 request, 2 response, 3 step over) | u64 id | u64 incarnation   (17 bytes, LE)
// where incarnation is the receiver's the sender expects (0 in a response).
// Graph handles count from 1 in each process: a request meant for a task's
// previous incarnation is refused by the restarted one (Aborted, "task ...
// restarted", both incarnations), nothing of it run; a step over for
// another incarnation is ignored.
// and the tensor a DT_UINT8 vector: the request or response in CAF's binary
// format (the same inspect overloads as over BASP: net/worker_service.hpp).
// A call's id counts up from a random start in each process: an answer
// meant for a restarted task's previous incarnation matches no call of the
// new one. A step over (the master's RendezvousStepDone, after every partition
// answered) has no tensor and the step id as its id: the rendezvous actor
// there drops the step's entries without a CAF message (which woke a worker
// there, then polling for work, every step).
//
// Client half (the master's process): Call sends a request to a task and
// hands its answer, a RunStepResponse message, to the given function on the
// transport's thread. A call that cannot be answered gets a RunStepResponse
// with the reason: Unavailable when its message could not be sent or the
// connection to its task failed (naming the task), DataLoss for an answer
// that does not decode. Liveness stays CAF's too: ClientChannel::StartVia
// monitors the remote worker actor, whose going down answers the call. A
// caller that gives up (its deadline passed) cancels its call.
//
// Server half (every cluster task): a request goes to this process's worker
// actor (actors/worker_session.hpp) as a CAF request whose sender is a
// companion actor, delivered inline on the transport's thread
// (devices/inline_delivery.hpp); the worker's answer (the device actor's, delegated)
// reaches the companion on the answering thread, which sends it back at once
// (Send never blocks). A request that does not decode is answered with
// InvalidArgument. Every request is answered or its caller told: an answer
// that cannot go (no address for the caller, its Send rejected, no memory to
// encode it) fails this process's connections with the caller
// (TensorTransport::FailPeer), whose PeerFailed then fails the call; the
// worker's actor alive, the caller would otherwise wait for ever when its
// step has no deadline. Nothing here throws into the transport or CAF.
// Only messages from a peer whose hello the transport took arrive here
// (with TLS: a certificate the cluster CA signed), the same
// trust as CAF's remote messages; a request runs only a registered graph.
//
// Thread-safe.
#pragma once

#include <caf/actor.hpp>
#include <caf/message.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace caf {
class actor_system;
}  // namespace caf

namespace actorflow {

class ComputePool;
class TensorTransport;
struct RunStepRequest;

class StepCalls {
 public:
  /// `pool`: where the worker actor runs when a request comes in; it runs
  /// on the transport's thread first (devices/inline_delivery.hpp).
  StepCalls(caf::actor_system& sys, ComputePool* pool);
  ~StepCalls();
  StepCalls(const StepCalls&) = delete;
  StepCalls& operator=(const StepCalls&) = delete;

  /// Wiring, once they exist: requests go out on `transport`, requests that
  /// come in run on `worker`, and steps declared over reach `rendezvous`.
  /// Until then (and after Detach) calls fail with Unavailable and requests
  /// are answered with Unavailable.
  void Attach(TensorTransport* transport, caf::actor worker, caf::actor rendezvous);
  /// Before the transport stops: calls in flight are answered Unavailable.
  void Detach();

  /// Sends `req` to task `task`'s worker, which must be incarnation
  /// `incarnation` (else it answers Aborted, running nothing); `done` gets
  /// its answer once. Not OK (nothing was sent, `done` is dropped) when there
  /// is no transport or the transport cannot send to the task (no address
  /// known for it). `id`, when given, receives the call's id (for Cancel).
  Status Call(const std::string& task, uint64_t incarnation, const RunStepRequest& req,
              std::function<void(caf::message)> done, uint64_t* id = nullptr);
  /// Forgets call `id` (its caller stopped waiting): its `done` is dropped
  /// unrun, its answer, if it comes, too. Nothing when it is not pending.
  void Cancel(uint64_t id);

  /// Tells task `task`'s rendezvous actor (of incarnation `incarnation`)
  /// that step `step_id` is over (RendezvousStepDone, one way). Not OK when
  /// it cannot go this way.
  Status StepDone(const std::string& task, uint64_t incarnation, int64_t step_id);

  // The transport's handler of Channel::kControl, and its peer failures.
  static Status Check(const std::string& from, const std::string& meta);
  void Deliver(const std::string& from, const std::string& meta, const Tensor& body);
  void Rejected(const std::string& task, const std::string& meta, const Status& s);
  void PeerFailed(const std::string& task, const Status& s);

  /// Calls waiting for an answer (for tests).
  size_t pending() const;
  /// Answers this process took from the transport, requests it served, and
  /// steps declared over that reached it so (for tests: which path ran).
  uint64_t answered() const;
  uint64_t served() const;
  uint64_t steps_over() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;  // shared with the companion's callback
};

}  // namespace actorflow
