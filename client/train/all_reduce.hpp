// All-reduce data parallelism (Horovod's and PyTorch DDP's model, with
// TensorFlow's collective ops): every worker holds the whole model, computes
// gradients on its own batch, and the gradients are averaged across the
// workers by CollectiveReduce before each applies the same update, so the
// replicas stay equal step after step.
//
//   AllReduceOptions ar;
//   ar.group_size = workers;
//   auto grads = AllReduceGradients(s, opt.ComputeGradients(s, loss), ar);
//   Operation train = opt.ApplyGradients(s, grads, &global_step);
//   ar.first_instance_key = 1000;  // apart from the gradients' buckets
//   Operation sync = BroadcastVariables(s, GlobalVariables(s), is_chief, ar);
//   // after initializing or restoring: run `sync` once on every worker
//
// Buckets (DDP's): the gradients, in reverse order of their variables (the
// order backpropagation produces them), are grouped into buckets of about
// `bucket_bytes`; a bucket is flattened into one tensor, reduced by one
// CollectiveReduce, and cut back. The plan is static: derived from the
// variables alone, so every rank derives the same one, and its text rides on
// each bucket's op (attr _bucket_plan) and is compared across ranks: ranks
// whose models or options differ get InvalidArgument naming the first
// differing line, never a hang. Each bucket is reduced as soon as its
// gradients are computed, while backpropagation goes on (no order between
// buckets is needed: comm/collective_executor.hpp).
#pragma once

#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {

struct AllReduceOptions {
  /// 0: elastic: the job's tasks not known to have failed, re-counted each
  /// time the group forms (after a member fails, the survivors go on, and a
  /// mean divides by how many took part); the ops' group_size attr is 0.
  int64_t group_size = 1;
  int64_t group_key = 1;
  int64_t first_instance_key = 1;  // bucket i is instance first_instance_key + i
  /// Bytes per bucket (a bucket holds at least one gradient). Large by
  /// default: on this 2-core VM an all-reduce's round trip costs more than
  /// fusing the gradients into one buffer. Measured with train_distributed
  /// --mode allreduce, the MLP at batch 256, 2 workers x 1 thread: one bucket
  /// (4 MiB) 152k and 119k examples/s in two runs; one bucket per gradient
  /// (1 byte) 116k and 102k.
  size_t bucket_bytes = size_t{4} << 20;
  bool average = true;  // final_op Div (else the sum)
  float timeout_seconds = 0;
};

/// The static bucket plan: indices into `grads_and_vars` per bucket, and its text.
struct BucketPlan {
  std::vector<std::vector<size_t>> buckets;
  std::string text;
};
BucketPlan PlanBuckets(const std::vector<Optimizer::GradAndVar>& grads_and_vars, const AllReduceOptions& o);

/// The gradients all-reduced (averaged by default) across the group; the
/// variables unchanged. A null gradient stays null.
std::vector<Optimizer::GradAndVar> AllReduceGradients(const Scope& scope,
                                                      const std::vector<Optimizer::GradAndVar>& grads_and_vars,
                                                      const AllReduceOptions& o);

/// Sets every member's variables to the source's (Horovod's
/// BroadcastGlobalVariablesHook, DDP's constructor broadcast): the source
/// sends, the others receive and assign. Instances first_instance_key,
/// first_instance_key + 1, ... (keep them apart from the gradients'). The
/// variables' names, dtypes and shapes ride on every op as a plan: a member
/// whose model differs gets InvalidArgument naming the first difference. In an
/// elastic group (group_size 0) `is_source` is not used: the source is the
/// group's rank 0 as it formed (CollectiveBcastFirst; every member runs the
/// same graph), so survivors can re-sync from one of them after a failure.
Operation BroadcastVariables(const Scope& scope, const std::vector<Variable>& vars, bool is_source,
                             const AllReduceOptions& o);

}  // namespace actorflow
