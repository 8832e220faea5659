// train_distributed's options and graph (examples/train_distributed.cpp):
// the Fashion-MNIST MLP with the update each --mode makes (async: Adam on the
// ps tasks' variables; sync: SyncReplicasOptimizer; allreduce: gradients
// averaged by CollectiveReduce, the variables broadcast, the group's data
// position and each step's per-worker times), and the ops the end of training
// uses. Build fills a TrainGraph with the names the training loop runs.
#pragma once

#include <memory>
#include <string>

#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/supervisor.hpp"
#include "actorflow/client/train/sync_replicas_optimizer.hpp"
#include "actorflow/core/cluster_resolver.hpp"
#include "actorflow/core/cluster_spec.hpp"

namespace actorflow {
namespace examples {

struct Options {
  std::string mode;
  int epochs = 12;
  int batch = 100;
  double lr = 0;  // 0: 0.001 (async), 0.001 x workers (sync, allreduce: each step averages that many batches)
  int save_every = 500;
  std::string dir;
  int64_t steps = 0;    // 0: --epochs; else this many global steps
  bool report = false;  // the chief prints a JSON line of examples/s (bench/run_all.sh)
  int64_t bucket_bytes = 0;  // allreduce: AllReduceOptions::bucket_bytes (0: its default)
  int partitions = 0;        // async, sync: parts of the hidden layer's weights (0: one per ps task)
  bool elastic = false;      // allreduce: the group is the live workers
  bool scale_lr = false;     // elastic allreduce: the learning rate x live workers / workers (fed "lr_scale")
  int backup_workers = 0;    // sync: each step aggregates the first workers - backup_workers gradients
  std::string logdir;        // empty: no TensorBoard events
  double straggler_ratio = 1.5;  // allreduce: a worker at this x the others' median time is reported
  int slow_worker = -1;          // --slow-worker I:MS (chaos, tests): worker I sleeps MS ms in each step
  int slow_ms = 0;
  std::string log_steps;  // PREFIX: each step's time, global step (all-reduce: data position, group size, rank)
  std::string cluster = "auto";  // --cluster FILE|JSON|tf_config|slurm|auto
  ClusterResolverOptions resolver;  // --jobs, --port-base
};

struct TrainGraph {
  proto::GraphDef def;
  std::string loss, accuracy, train;
  TrainingSupervisor::Graph sup;
  std::unique_ptr<Optimizer> adam;
  std::unique_ptr<SyncReplicasOptimizer> sync;  // its graph's nodes are gone after Build: names below
  std::string init_tokens, local_step_init, chief_init, num_dropped;  // sync
  QueueRunnerDef chief_runner;                           // sync: the chief's sync op
  std::string done, wait_done;  // a worker says it is done; the chief waits for the others
  std::string all_done;  // allreduce: every worker's last step is over (a one-float all-reduce)
  std::string broadcast;        // allreduce: every replica takes the chief's variables
  std::string position;         // allreduce: the group's data position (examples read), a variable's value
  std::string examples_read;    // allreduce: the step's examples, all members' (fed: "examples_this_step")
  std::string step_times;       // allreduce: every worker's own time in the step (fed: "own_step_time")
  std::string learning_rate;    // --scale-lr: the rate of the step (fed: "lr_scale")
};

/// The graph of worker `task` of `workers`.
Status Build(const Options& o, const ClusterSpec& cluster, int task, int workers, TrainGraph* g);

}  // namespace examples
}  // namespace actorflow
