// The rendezvous actor: where the partitions of one step hand tensors to each
// other (TensorFlow's per-step Rendezvous, as one actor per process).
//
// Protocol (messages in net/rendezvous_service.hpp):
//   RendezvousSend                                      a _Send's tensor; no answer, never waits
//   RendezvousRecv        -> RendezvousRecvResponse     answered when the tensor is there
//   RendezvousBatch                                     a device actor's Sends and Recvs at once;
//                                                       its Recvs are answered by RendezvousDeliver
//   RendezvousAbort                                     fail the step's waiting and later Recvs
//   RendezvousStepDone                                  the step is over: drop its entries
//
// Entries are kept per step id (the client's, shared by all partitions of the
// step) and key. Whichever of Send and Recv comes first waits for the other.
// In one process the tensor travels by reference: the Recv gets the sender's
// buffer, no copy. A step that fails anywhere is aborted: its waiting Recvs are
// answered with the step's error (Cancelled when none is given) and so is every
// later Recv; its later Sends are dropped. A key sent twice in one step (a
// partitioning bug) aborts the step with Internal. The client sends StepDone
// when all partitions of a step have answered, which drops whatever the step
// left.
//
// Across processes (a task of a cluster), a Send for a device of another task
// leaves through the tensor transport; the receiving process's rendezvous
// takes it as a local Send. A key's step and text are the same on both sides.
//
// Memory: no exception escapes a handler. A Send or Recv the actor has no
// memory to record aborts its step with ResourceExhausted naming the key; an
// answer it has no memory to build carries OutOfMemoryStatus(); a delivery
// it could not send is tried again shortly. Other steps go on.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {

class ComputePool;
class TensorTransport;

/// `pool` (optional) picks the worker that runs a device actor a delivery wakes.
/// `transport` (optional; a process that is a task of a cluster): a Send whose
/// receiving device is on another task than `task` goes there through it
/// (comm/tensor_transport.hpp); tensors it brings arrive as RendezvousSend,
/// tensors it could not take as RendezvousAbort, and a peer it lost as
/// RendezvousPeerFailed, which fails every step waiting for a tensor from
/// that task with the given status.
caf::actor SpawnRendezvousActor(caf::actor_system& sys, ComputePool* pool = nullptr,
                                TensorTransport* transport = nullptr, std::string task = std::string());

/// From this process's transport only (never crosses a process).
struct RendezvousPeerFailed {
  std::string task;
  Status status;
};

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::RendezvousPeerFailed)
