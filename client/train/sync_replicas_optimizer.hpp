// Synchronous data-parallel training with parameter servers (TensorFlow's
// tf.train.SyncReplicasOptimizer, with its graph structure, so the graphs it
// makes and TensorFlow-written ones run alike).
//
// Each replica (worker) computes its gradients and applies each to a
// ConditionalAccumulator on its variable's device, tagged with the replica's
// local step; the chief's sync op takes from every accumulator the mean of
// `replicas_to_aggregate` gradients (waiting inside the accumulator actors),
// applies it with the wrapped optimizer, increments the global step, and puts
// one token per replica into a token queue. A replica's train op ends by
// taking a token (the barrier) and makes it its local step: gradients it
// computed against older variables arrive stale and are dropped. With
// total_num_replicas > replicas_to_aggregate the extra replicas are backup
// workers: the first replicas_to_aggregate gradients make the step.
//
//   SyncReplicasOptimizer sync(&sgd, /*replicas_to_aggregate=*/2, /*total_num_replicas=*/2);
//   Operation train = sync.Minimize(scope, loss, global_step, worker_device);
//   chief:   run init, sync.chief_init_op(), sync.GetInitTokensOp(scope); start a QueueRunner
//            for sync.chief_queue_runner(); then train in a loop
//   others:  run sync.local_step_init_op() once the variables are initialized; train in a loop
#pragma once

#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {

class SyncReplicasOptimizer {
 public:
  /// `opt` applies the aggregated gradients (it must outlive the graph building).
  /// total_num_replicas -1: replicas_to_aggregate.
  SyncReplicasOptimizer(Optimizer* opt, int replicas_to_aggregate, int total_num_replicas = -1,
                        std::string name = "sync_replicas");

  /// The replica's train op. `worker_device` (e.g. "/job:worker/task:1") holds
  /// the replica's local step; "" leaves it to the scope.
  Operation ApplyGradients(const Scope& scope, const std::vector<Optimizer::GradAndVar>& grads_and_vars,
                           const Variable& global_step, const std::string& worker_device = "");
  Operation Minimize(const Scope& scope, const Output& loss, const Variable& global_step,
                     const std::string& worker_device = "", std::vector<Variable> var_list = {});

  /// The local step := the global step (every replica, once the model is ready).
  Operation local_step_init_op() const { return local_step_init_; }
  /// The chief's: local_step_init_op and every accumulator's global step := the global step.
  Operation chief_init_op() const { return chief_init_; }
  /// Runs the sync op in a loop (the chief starts a QueueRunner for it; not in the graph's collection).
  const QueueRunnerDef& chief_queue_runner() const { return chief_queue_runner_; }
  /// Tokens that let the replicas take their first steps (the chief runs it once):
  /// num_tokens -1 means replicas_to_aggregate. InvalidArgument (recorded in the
  /// scope) when fewer than replicas_to_aggregate - total_num_replicas.
  Operation GetInitTokensOp(const Scope& scope, int num_tokens = -1);

  /// An actorflow addition: the stale gradients dropped so far (int64, at the
  /// first gradient's accumulator, which each replica's late step reaches as
  /// the others do): the work backup workers and lost replicas cost.
  Output num_dropped() const { return num_dropped_; }

  int replicas_to_aggregate() const { return replicas_to_aggregate_; }
  int total_num_replicas() const { return total_num_replicas_; }

 private:
  Optimizer* opt_;
  int replicas_to_aggregate_;
  int total_num_replicas_;
  std::string name_;
  Variable global_step_;
  Output token_queue_, num_dropped_;
  Operation local_step_init_, chief_init_;
  QueueRunnerDef chief_queue_runner_;
};

}  // namespace actorflow
