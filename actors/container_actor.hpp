// The container actor: the process's resource manager, owner of every
// variable (TensorFlow's ResourceMgr, as an actor).
//
// Variables live in named containers ("localhost" by default) under their
// shared names; the same (container, shared_name) is the same variable for
// every graph and session of the process. Kernels reach a variable only by
// messages carrying its handle (ops/state/variable_access.hpp):
//   VarReadRequest        -> VarReadResponse        values (or whether initialized)
//   VarUpdateRequest      -> VarUpdateResponse      Assign*, Apply*
//   ResetContainersRequest -> ResetContainersResponse drop containers' variables
//   QueueOpenRequest      -> QueueOpenResponse      the actor of a queue or gradient
//                                                   accumulator, created on first use
//
// The kernels of this process's devices resolve a variable once
// (VarResolveRequest) and then read and update it directly under its lock
// (ops/state/local_variable.hpp), in parallel with each other and with this
// actor. Requests that come by message (from another process, or a read that
// checks only) are applied in arrival order, each whole under the variables'
// locks, so every such update is atomic with respect to other updates and
// reads. Reads share the variable's buffer; an update that finds a reader
// still holding it writes a new buffer instead (copy on write). Small
// requests whose locks are free run in the handler; the others on the compute
// pool (where a job may wait for a lock a kernel holds while it computes),
// while later requests touching the same variables wait in the actor.
//
// Memory: every request is answered, and no exception escapes a handler or a
// pool job. An update whose copy-on-write buffer (or Assign's copy) does not
// fit the budget fails with ResourceExhausted naming the op, the variables
// and the bytes asked; the variables keep their values; other requests go on.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

class ComputePool;
struct LocalVar;

/// From an actor of this process: the variables `handles` name, created
/// (uninitialized) on first use, for its kernels to read and update directly.
/// Never crosses a process (the variables are this process's memory).
struct VarResolveRequest {
  std::vector<std::string> handles;  // encoded ResourceHandles
};
struct VarResolveResponse {
  Status status;
  std::vector<std::shared_ptr<LocalVar>> vars;  // one per handle
};

caf::actor SpawnContainerActor(caf::actor_system& sys, ComputePool* pool);

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::VarResolveRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::VarResolveResponse)
