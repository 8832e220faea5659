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
// Requests on one variable are applied in arrival order, each whole before the
// next begins, so every update is atomic with respect to other updates and
// reads. Reads share the variable's buffer; an update that finds a reader
// still holding it writes a new buffer instead (copy on write). Small updates
// run in the handler; large ones on the compute pool, while later requests
// touching the same variables wait in the actor (no thread waits).
//
// Memory: every request is answered, and no exception escapes a handler or a
// pool job. An update whose copy-on-write buffer (or Assign's copy) does not
// fit the budget fails with ResourceExhausted naming the op, the variables
// and the bytes asked; the variables keep their values; other requests go on.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace actorflow {

class ComputePool;

caf::actor SpawnContainerActor(caf::actor_system& sys, ComputePool* pool);

}  // namespace actorflow
