// The accumulator actor: one per gradient accumulator (TensorFlow's
// ConditionalAccumulator), the barrier of synchronous data-parallel training
// (SyncReplicasOptimizer). Workers apply gradients; the chief takes their
// mean once enough have arrived.
//
// TensorFlow's semantics:
// - ApplyGradient(local_step, g): a gradient older than the accumulator's
//   global step (local_step < global step) is dropped silently (a straggler's
//   stale gradient) and counted (NumDropped, an actorflow op); otherwise its
//   dtype must be the declared one and its shape the declared one's and the
//   first gradient's ("Shape mismatch"), and it is added to the sum.
// - TakeGradient(num_required): waits, inside this actor (holding no thread),
//   until at least num_required gradients are in; then answers their mean
//   (MEAN divides by the number accumulated, not num_required) or sum, resets
//   the sum and the count and increments the global step. Takes are served in
//   arrival order.
// - SetGlobalStep(s) sets the global step (smaller values too); NumAccumulated
//   answers the count.
//
// A step that fails (error, deadline, closed session) cancels its waiting
// takes (QueueCancelStep); the gradients stay. Memory: a sum that cannot be
// allocated fails that request with ResourceExhausted naming the
// accumulator; the state is unchanged and every other request goes on. On
// exit every waiting take is answered Cancelled.
//
// Protocol: the queue service's messages (net/queue_service.hpp: QueueKind
// kAccumulator, the accumulator QueueOps); the container actor creates
// accumulators and keeps their shared names with the queues'.
#pragma once

#include <string>

#include "actorflow/ops/queue/queue_access.hpp"

namespace caf {
class actor;
class actor_system;
}  // namespace caf

namespace actorflow {

/// An accumulator actor for `spec` (assumed valid: CheckAccumulatorSpec), named `name` in its messages.
caf::actor SpawnAccumulatorActor(caf::actor_system& sys, const QueueSpec& spec, const std::string& name);

/// InvalidArgument unless `spec` declares an accumulator: one component of
/// float or double, a reduction of 0 (MEAN) or 1 (SUM).
Status CheckAccumulatorSpec(const QueueSpec& spec, const std::string& name);

}  // namespace actorflow
