// Batching for input pipelines (TensorFlow's tf.train.batch, shuffle_batch and
// shuffle_batch_join), built from queues and queue runners.
//
// Each builds a queue (FIFO, or random shuffle), the enqueue op(s) that put
// `tensors` in, and a dequeue of batch_size elements (dequeue-up-to when
// allow_smaller_final_batch, so the last batch of a closed queue may be
// smaller). The QueueRunnerDef that keeps the queue fed is added to the scope
// (Scope::GetQueueRunners; client/train/queue_runner.hpp runs it): num_threads
// threads run the enqueue op, or one per tensor list for the join variant.
// Mistakes are build errors on the scope (scope.status()): shapes not fully
// known, capacity not greater than min_after_dequeue, lists of different types.
#pragma once

#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

struct BatchOptions {
  int64_t batch_size = 32;
  int num_threads = 1;
  int64_t capacity = 32;
  bool enqueue_many = false;  // each tensor is a batch of elements along dimension 0
  bool allow_smaller_final_batch = false;
  std::vector<PartialTensorShape> shapes;  // of one element; default: the tensors' inferred shapes
  std::string shared_name;
};

struct ShuffleBatchOptions : BatchOptions {
  int64_t min_after_dequeue = 0;
  int64_t seed = -1;  // the queue's op seed (-1: none; with the graph seed as TensorFlow's)
};

}  // namespace ops

struct Batched {
  OutputList tensors;    // the batch, one per input tensor
  Output queue;
  QueueRunnerDef runner;  // also added to the scope
};

Batched Batch(const Scope& scope, const OutputList& tensors, const ops::BatchOptions& options);
Batched ShuffleBatch(const Scope& scope, const OutputList& tensors, const ops::ShuffleBatchOptions& options);
/// One enqueue op (and runner thread) per list, e.g. per reader: the lists must have the same types and shapes.
Batched ShuffleBatchJoin(const Scope& scope, const std::vector<OutputList>& tensors_list,
                         const ops::ShuffleBatchOptions& options);

}  // namespace actorflow
