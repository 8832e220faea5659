#include "actorflow/client/train/input_batching.hpp"

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"

namespace actorflow {

namespace {

// One element's shapes: given, or inferred (less dimension 0 for enqueue_many); fully known.
bool ElementShapes(const Scope& s, const OutputList& tensors, const ops::BatchOptions& o,
                   std::vector<PartialTensorShape>* shapes) {
  if (!o.shapes.empty()) {
    if (o.shapes.size() != tensors.size()) {
      s.UpdateStatus(errors::InvalidArgument("batching: ", tensors.size(), " tensors but ", o.shapes.size(),
                                             " shapes"));
      return false;
    }
    *shapes = o.shapes;
  } else {
    shapes->clear();
    for (const Output& t : tensors) {
      PartialTensorShape shape = s.InferredShape(t);
      if (o.enqueue_many && !shape.unknown_rank() && shape.dims() > 0) {
        std::vector<int64_t> dims = shape.dim_sizes();
        dims.erase(dims.begin());
        shape = PartialTensorShape(dims);
      }
      shapes->push_back(shape);
    }
  }
  for (size_t i = 0; i < shapes->size(); ++i)
    if (!(*shapes)[i].IsFullyDefined()) {
      s.UpdateStatus(errors::InvalidArgument("batching: the shape of tensor ", i, " ('", tensors[i].name(),
                                             "') is not fully known (", (*shapes)[i].DebugString(),
                                             "); give BatchOptions::shapes"));
      return false;
    }
  return true;
}

bool CheckOptions(const Scope& s, const ops::BatchOptions& o) {
  if (o.batch_size <= 0 || o.num_threads <= 0 || o.capacity <= 0) {
    s.UpdateStatus(errors::InvalidArgument("batching: batch_size (", o.batch_size, "), num_threads (", o.num_threads,
                                           ") and capacity (", o.capacity, ") must be positive"));
    return false;
  }
  return true;
}

// The enqueue ops (one per list), runner, close/cancel ops and dequeue for `queue`.
Batched Finish(const Scope& s, Output queue, const std::vector<OutputList>& lists, const ops::BatchOptions& o,
               int threads_per_list) {
  Batched out;
  if (!s.ok() || !queue.node()) return out;
  out.queue = queue;
  out.runner.queue_name = queue.node()->name();
  for (size_t i = 0; i < lists.size(); ++i) {
    Scope named = s.WithOpName(lists.size() == 1 ? "enqueue" : "enqueue_" + std::to_string(i));
    Operation enq = o.enqueue_many ? ops::QueueEnqueueMany(named, queue, lists[i]) : ops::QueueEnqueue(named, queue, lists[i]);
    if (!s.ok()) return out;
    for (int t = 0; t < threads_per_list; ++t) out.runner.enqueue_op_names.push_back(enq.node()->name());
  }
  Operation close = ops::QueueClose(s.WithOpName("close"), queue);
  Operation cancel = ops::QueueClose(s.WithOpName("cancel"), queue, true);
  if (!s.ok()) return out;
  out.runner.close_op_name = close.node()->name();
  out.runner.cancel_op_name = cancel.node()->name();
  DataTypeVector types;
  for (const Output& t : lists[0]) types.push_back(t.type());
  Output n = ops::Const(s.WithOpName("batch_size"), static_cast<int32_t>(o.batch_size));
  out.tensors = o.allow_smaller_final_batch ? ops::QueueDequeueUpTo(s.WithOpName("batch"), queue, n, types)
                                            : ops::QueueDequeueMany(s.WithOpName("batch"), queue, n, types);
  s.AddQueueRunner(out.runner);
  return out;
}

}  // namespace

Batched Batch(const Scope& scope, const OutputList& tensors, const ops::BatchOptions& o) {
  Scope s = scope.NewSubScope("batch");
  std::vector<PartialTensorShape> shapes;
  if (!CheckOptions(s, o) || !ElementShapes(s, tensors, o, &shapes)) return {};
  ops::QueueOptions q;
  q.shapes = shapes;
  q.capacity = o.capacity;
  q.shared_name = o.shared_name;
  DataTypeVector types;
  for (const Output& t : tensors) types.push_back(t.type());
  return Finish(s, ops::FIFOQueue(s.WithOpName("fifo_queue"), types, q), {tensors}, o, o.num_threads);
}

Batched ShuffleBatchJoin(const Scope& scope, const std::vector<OutputList>& lists, const ops::ShuffleBatchOptions& o) {
  Scope s = scope.NewSubScope("shuffle_batch");
  if (lists.empty()) {
    s.UpdateStatus(errors::InvalidArgument("shuffle_batch: no tensors"));
    return {};
  }
  std::vector<PartialTensorShape> shapes;
  if (!CheckOptions(s, o) || !ElementShapes(s, lists[0], o, &shapes)) return {};
  if (o.min_after_dequeue < 0 || o.capacity <= o.min_after_dequeue) {
    s.UpdateStatus(errors::InvalidArgument("shuffle_batch: capacity (", o.capacity,
                                           ") must be greater than min_after_dequeue (", o.min_after_dequeue, ")"));
    return {};
  }
  DataTypeVector types;
  for (const Output& t : lists[0]) types.push_back(t.type());
  for (size_t i = 1; i < lists.size(); ++i) {
    DataTypeVector other;
    for (const Output& t : lists[i]) other.push_back(t.type());
    if (other != types) {
      s.UpdateStatus(errors::InvalidArgument("shuffle_batch_join: tensor list ", i, " has types ",
                                             DataTypeSliceString(other), ", list 0 has ", DataTypeSliceString(types)));
      return {};
    }
  }
  ops::QueueOptions q;
  q.shapes = shapes;
  q.capacity = o.capacity;
  q.shared_name = o.shared_name;
  Output queue = ops::RandomShuffleQueue(s.WithOpName("random_shuffle_queue"), types, o.min_after_dequeue, q, o.seed);
  return Finish(s, queue, lists, o, lists.size() == 1 ? o.num_threads : 1);
}

Batched ShuffleBatch(const Scope& scope, const OutputList& tensors, const ops::ShuffleBatchOptions& o) {
  return ShuffleBatchJoin(scope, {tensors}, o);
}

}  // namespace actorflow
