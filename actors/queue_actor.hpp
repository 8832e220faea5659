// The queue actor: one per queue (FIFO, random shuffle, padding FIFO,
// priority), with TensorFlow's queue semantics.
//
// It owns the queue's elements and every operation waiting on them: an
// enqueue waits while the queue is full, a dequeue while it is empty (the
// shuffle queue: while it holds no more than min_after_dequeue and is open).
// Waiting operations are answered in arrival order as space or elements
// come. Enqueue-many pushes element by element and may wait part-way; a
// dequeue-many takes elements as they come and, when it fails (the queue
// closed with too few), returns them to the queue in order.
//
// After close: enqueues fail with Cancelled, dequeues drain what is left
// (min_after_dequeue no longer holds), one that cannot be satisfied fails
// with OutOfRange, dequeue-up-to returns the remainder. With
// cancel_pending_enqueues, waiting enqueues fail with Cancelled.
//
// Memory: every request is answered, and no exception escapes the actor. A
// request whose memory is refused (a dequeue-many's batch over the host
// budget, an enqueue-many of more elements than its index fits: the index is
// counted against cpu_allocator()'s budget too) fails with ResourceExhausted
// naming the queue and the bytes asked; a dequeue's elements go back to the
// queue; the queue and every other request go on.
//
// Protocol: ops/queue/queue_access.hpp (QueueRequest -> QueueResponse,
// QueueCancelStep). The container actor creates queue actors and keeps the
// directory of shared names (actors/container_actor.hpp).
#pragma once

#include <string>

#include "actorflow/ops/queue/queue_access.hpp"

namespace caf {
class actor;
class actor_system;
}  // namespace caf

namespace actorflow {

/// A queue actor for `spec` (assumed valid: CheckQueueSpec), named `name` in
/// its error messages.
caf::actor SpawnQueueActor(caf::actor_system& sys, const QueueSpec& spec, const std::string& name);

/// InvalidArgument when `spec` cannot make a queue (no components, a
/// capacity below -1, min_after_dequeue negative or not below capacity, a
/// priority queue whose component 0 is not an int64 scalar, shapes of another
/// count than the types).
Status CheckQueueSpec(const QueueSpec& spec, const std::string& name);

}  // namespace actorflow
