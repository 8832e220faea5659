// The queue service: the messages between queue kernels, queue actors and
// the container actor that keeps the directory of queues. Gradient
// accumulators (TensorFlow's ConditionalAccumulator, actors/accumulator_actor.hpp)
// are data-flow resources of the same shape and use the same service: a kind
// of their own, operations of their own, the same directory and cancellation.
//
// A queue (FIFOQueueV2, RandomShuffleQueueV2, PaddingFIFOQueueV2,
// PriorityQueueV2) is an actor (actors/queue_actor.hpp) holding its elements
// and the operations waiting on it. The op that declares a queue outputs a
// DT_RESOURCE scalar holding its encoded ResourceHandle (container, shared
// name); the process's container actor (actors/container_actor.hpp) keeps the
// directory from handles to queue actors, so queues are shared by name across
// the sessions of a process.
//
// Kernels never wait: they send a QueueRequest through QueueAccess (the device
// actor implements it) and finish when the queue actor answers. A full queue
// keeps an enqueue waiting inside the queue actor, an empty one a dequeue;
// no thread is held. A failing step (error, deadline, closed session) cancels
// its waiting requests (QueueCancelStep), and the queue stays usable.
// Every message may cross a process: registered in net/protocol.cpp.
#pragma once

#include <caf/actor.hpp>
#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/net/wire_format.hpp"

namespace actorflow {

enum class QueueKind : int32_t { kFifo = 0, kRandomShuffle = 1, kPaddingFifo = 2, kPriority = 3, kAccumulator = 4 };
const char* QueueKindName(QueueKind kind);

/// What a queue op declares. For kPriority, component_types and shapes
/// include the int64 scalar priority as component 0. For kAccumulator: one
/// component (the gradient's dtype and shape) and a reduction.
struct QueueSpec {
  int32_t kind = 0;                          // a QueueKind
  std::vector<int32_t> component_types;      // DataTypes
  std::vector<PartialTensorShape> shapes;    // empty, or one per component
  int64_t capacity = -1;                     // -1: unbounded
  int64_t min_after_dequeue = 0;             // shuffle queue
  int64_t seed = 0, seed2 = 0;               // shuffle queue; both 0: nondeterministic
  int32_t reduction = 0;                     // accumulator: 0 MEAN, 1 SUM
};

/// Why two declarations of one shared queue disagree ("" when they agree).
std::string QueueSpecMismatch(const QueueSpec& existing, const QueueSpec& requested);

enum class QueueOp : int32_t {
  kEnqueue = 0,       // components: one element
  kEnqueueMany = 1,   // components: a batch along dimension 0
  kDequeue = 2,       // answer: one element
  kDequeueMany = 3,   // num elements, batched along a new dimension 0
  kDequeueUpTo = 4,   // as kDequeueMany, fewer once closed
  kClose = 5,         // flag: cancel pending enqueues
  kSize = 6,          // answer: value
  kIsClosed = 7,      // answer: value (0/1)
  // Accumulators (TensorFlow's semantics):
  kApplyGradient = 8,   // components: {gradient}; num: its local step (older than the global step: dropped)
  kTakeGradient = 9,    // num: gradients required; answer: their mean (or sum); waits until there are that many
  kNumAccumulated = 10, // answer: value
  kSetGlobalStep = 11,  // num: the new global step
  kNumDropped = 12,     // answer: stale gradients dropped since the accumulator was made (an actorflow op)
  kClear = 13,          // drops every element (a StagingArea's StageClear); answer: value, how many
};

/// To a queue actor; answered with a QueueResponse when done.
struct QueueRequest {
  int32_t op = 0;        // a QueueOp
  int64_t step_id = 0;   // the client's step: QueueCancelStep names it
  std::vector<Tensor> components;
  int64_t num = 0;       // kDequeueMany / kDequeueUpTo; the accumulator operations' number
  bool flag = false;     // kClose: cancel_pending_enqueues
};

struct QueueResponse {
  Status status;
  std::vector<Tensor> components;
  int64_t value = 0;
};

/// From a device actor to a queue actor: fail the waiting requests it sent
/// for step `step_id` with `status`; no answer.
struct QueueCancelStep {
  int64_t step_id = 0;
  Status status;
};

/// To the container actor: the queue of `handle` (an encoded ResourceHandle),
/// created with `spec` if it does not exist yet (`create`), else checked
/// against it. Answered with a QueueOpenResponse.
struct QueueOpenRequest {
  std::string handle;
  QueueSpec spec;
  bool create = false;  // false: look the queue up only (NotFound if absent)
};

struct QueueOpenResponse {
  Status status;
  caf::actor queue;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PartialTensorShape& x) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    bool known = false;
    std::vector<int64_t> dims;
    if (auto err = f(caf::meta::type_name("PartialTensorShape"), known, dims)) return err;
    x = known ? PartialTensorShape(std::move(dims)) : PartialTensorShape();
    return caf::error{};
  } else {
    bool known = !x.unknown_rank();
    std::vector<int64_t> dims = x.dim_sizes();
    return f(caf::meta::type_name("PartialTensorShape"), known, dims);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueSpec& x) {
  return f(caf::meta::type_name("QueueSpec"), x.kind, x.component_types, x.shapes, x.capacity, x.min_after_dequeue,
           x.seed, x.seed2, x.reduction);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueRequest& x) {
  return f(caf::meta::type_name("QueueRequest"), x.op, x.step_id, x.components, x.num, x.flag);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueResponse& x) {
  return f(caf::meta::type_name("QueueResponse"), x.status, x.components, x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueCancelStep& x) {
  return f(caf::meta::type_name("QueueCancelStep"), x.step_id, x.status);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueOpenRequest& x) {
  return f(caf::meta::type_name("QueueOpenRequest"), x.handle, x.spec, x.create);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueOpenResponse& x) {
  return f(caf::meta::type_name("QueueOpenResponse"), x.status, x.queue);
}

// A key crosses processes as its text; in one process it is shared, never copied.

}  // namespace actorflow
