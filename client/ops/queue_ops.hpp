// Builder functions for queues (ops/queue/queue_ops.cpp): declarations, which
// give a queue handle, and the operations on a handle. Queue semantics:
// actors/queue_actor.hpp.
#pragma once

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

/// How a queue is declared. `shapes` is empty or one per component;
/// `shared_name` "" makes the queue private to the session.
struct QueueOptions {
  std::vector<PartialTensorShape> shapes;
  int64_t capacity = -1;  // -1: unbounded
  std::string container;
  std::string shared_name;
};

Output FIFOQueue(const Scope& s, const DataTypeVector& types, const QueueOptions& o = {});
Output PaddingFIFOQueue(const Scope& s, const DataTypeVector& types, const QueueOptions& o = {});
/// Elements are (int64 priority, types...); lowest priority first. `o.shapes`, when given, exclude the priority.
Output PriorityQueue(const Scope& s, const DataTypeVector& types, const QueueOptions& o = {});
/// `seed` is the op's seed (-1: none); with the scope's graph seed it gives TensorFlow's (seed, seed2).
Output RandomShuffleQueue(const Scope& s, const DataTypeVector& types, int64_t min_after_dequeue,
                          const QueueOptions& o = {}, int64_t seed = -1);

Operation QueueEnqueue(const Scope& s, Input handle, const OutputList& components);
Operation QueueEnqueueMany(const Scope& s, Input handle, const OutputList& components);
OutputList QueueDequeue(const Scope& s, Input handle, const DataTypeVector& types);
OutputList QueueDequeueMany(const Scope& s, Input handle, Input n, const DataTypeVector& types);
OutputList QueueDequeueUpTo(const Scope& s, Input handle, Input n, const DataTypeVector& types);
Operation QueueClose(const Scope& s, Input handle, bool cancel_pending_enqueues = false);
Output QueueSize(const Scope& s, Input handle);
Output QueueIsClosed(const Scope& s, Input handle);

/// A staging area (ops/queue/staging_ops.cpp, TensorFlow's StagingArea): a
/// FIFO of tuples of `types` on one device, named by `shared_name`
/// (required; every op of one area must be placed on that device and give
/// the same name and types).
///   ops::StagingArea area{{DT_FLOAT, DT_INT32}, o};
///   Operation put = area.Put(gpu, {images, labels});   // next step's batch, staged onto the GPU
///   OutputList batch = area.Get(gpu);                   // this step's, already there
struct StagingOptions {
  int64_t capacity = 0;  // 0: unbounded (TensorFlow's default)
  std::string container;
  std::string shared_name;
};
struct StagingArea {
  DataTypeVector types;
  StagingOptions options;
  Operation Put(const Scope& s, const OutputList& values) const;  // Stage
  OutputList Get(const Scope& s) const;                           // Unstage
  Output Size(const Scope& s) const;                              // StageSize
  Operation Clear(const Scope& s) const;                          // StageClear
};

}  // namespace ops
}  // namespace actorflow
