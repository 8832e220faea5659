#include "examples/train_distributed_graph.hpp"

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/collective_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/train/all_reduce.hpp"
#include "actorflow/client/train/replica_device_setter.hpp"
#include "examples/mlp_model.hpp"

namespace actorflow {
namespace examples {

Status Build(const Options& o, const ClusterSpec& cluster, int task, int workers, TrainGraph* g) {
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(2024);
  ReplicaDeviceSetterOptions rd;
  rd.cluster = &cluster;
  const std::string worker_device = "/job:worker/task:" + std::to_string(task);
  rd.worker_device = worker_device;
  const bool allreduce = o.mode == "allreduce";
  Scope s = allreduce ? root.WithDevice(worker_device) : ReplicaDeviceSetter(root, rd);
  auto x = ops::Placeholder(s.WithOpName("images"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 784}));
  auto y = ops::Placeholder(s.WithOpName("labels"), DT_INT32, PartialTensorShape(std::vector<int64_t>{-1}));
  const int ps_tasks = cluster.num_tasks("ps");
  const int parts = allreduce ? 1 : o.partitions > 0 ? o.partitions : std::max(1, ps_tasks);
  Mlp m = BuildMlpLayers(s, x, y, parts);
  const bool sync = o.mode == "sync";
  // A global step is one batch (async) or one batch from every worker (sync, allreduce).
  const int aggregate = workers - o.backup_workers;  // sync: gradients per step
  const int64_t steps_per_epoch = 60000 / (o.batch * (sync ? aggregate : allreduce ? workers : 1));
  // --scale-lr (elastic all-reduce): the rate times the live size over the
  // cluster's workers (fed "lr_scale" each step; the linear scaling rule:
  // the mean's batch is that many batches). 1 when not fed.
  Output lr_scale;
  if (allreduce && o.scale_lr)
    lr_scale = ops::PlaceholderWithDefault(s.WithOpName("lr_scale"), 1.0f, PartialTensorShape::Scalar());
  g->adam = MlpOptimizer(s, o.lr, m.step, steps_per_epoch, lr_scale.node() ? &lr_scale : nullptr);
  if (lr_scale.node()) g->learning_rate = "scaled_learning_rate";  // MlpOptimizer's name for the rate x scale
  Operation train;
  if (sync) {
    g->sync = std::make_unique<SyncReplicasOptimizer>(g->adam.get(), aggregate, workers);
    train = g->sync->Minimize(s, m.loss, m.step, worker_device);
    Operation tokens = g->sync->GetInitTokensOp(s);
    AF_RETURN_IF_ERROR(root.status());
    g->init_tokens = tokens.node()->name();
    g->local_step_init = g->sync->local_step_init_op().node()->name();
    g->chief_init = g->sync->chief_init_op().node()->name();
    g->num_dropped = g->sync->num_dropped().name();
    g->chief_runner = g->sync->chief_queue_runner();
  } else if (allreduce) {
    AllReduceOptions ar;
    ar.group_size = o.elastic ? 0 : workers;  // 0: the live workers
    if (o.bucket_bytes > 0) ar.bucket_bytes = static_cast<size_t>(o.bucket_bytes);
    std::vector<Optimizer::GradAndVar> grads = g->adam->ComputeGradients(s, m.loss);
    // The group's position in the stream of examples (client/train/elastic_sampler.hpp):
    // model state, synced and saved with the variables; each step adds the
    // examples its members read, summed by an all-reduce of the step (so the
    // group that formed for it, not any member's idea of it, moves it).
    // Instance 997: apart from the others below and the buckets.
    Variable position = NewVariable(s, "data_position", TensorShape{}, DT_INT64, init::Zeros());
    auto read = ops::Placeholder(s.WithOpName("examples_this_step"), DT_INT64, PartialTensorShape::Scalar());
    ops::CollectiveOptions sum;
    sum.group_size = ar.group_size;
    sum.group_key = ar.group_key;
    sum.instance_key = 997;
    Output read_by_all = ops::CollectiveReduce(s.WithOpName("examples_read"), read, sum);
    // The update waits for the sum: a step whose sum fails leaves variables and position as they were.
    Operation apply = g->adam->ApplyGradients(s.WithOpName("apply").WithControlDependencies({read_by_all.op()}),
                                              AllReduceGradients(s, grads, ar), &m.step);
    // After the update: a step that fails (a member lost) leaves the position with the variables.
    Output advance =
        ops::AssignAdd(s.WithOpName("train").WithControlDependencies({apply}), position.ref, read_by_all);
    train = advance.op();
    g->position = position.value.name();
    g->examples_read = read_by_all.name();
    ar.first_instance_key = 1000;  // apart from the gradients' buckets
    g->broadcast = BroadcastVariables(s, GlobalVariables(s), task == 0, ar).node()->name();
    // The end: no worker leaves while another's last all-reduce may still
    // need it (its leaving would fail that step). Instance 999: apart from both.
    ops::CollectiveOptions end;
    end.group_size = ar.group_size;
    end.group_key = ar.group_key;
    end.instance_key = 999;
    g->all_done = ops::CollectiveReduce(s.WithOpName("all_done"), ops::Const(s, 1.0f), end).node()->name();
    // Each step's own times by worker (StragglerDetector): every member
    // feeds its own at its task's place, zeros elsewhere; the maximum of all
    // is every member's time. Instance 998: apart from the others.
    ops::CollectiveOptions times = end;
    times.instance_key = 998;
    times.merge_op = "Max";
    auto own = ops::Placeholder(s.WithOpName("own_step_time"), DT_FLOAT,
                                PartialTensorShape(std::vector<int64_t>{workers}));
    g->step_times = ops::CollectiveReduce(s.WithOpName("step_times"), own, times).name();
  } else {
    train = g->adam->Minimize(s.WithOpName("train"), m.loss, &m.step);
  }
  AF_RETURN_IF_ERROR(root.status());
  g->train = train.node()->name();
  // The end of training: each other worker puts a token in a queue on ps 0; the
  // chief takes them all before it tells the ps tasks to stop.
  if (workers > 1 && !allreduce) {
    Scope ps = root.WithDevice("/job:ps/task:0");
    ops::QueueOptions q;
    q.shapes = {PartialTensorShape::Scalar()};
    q.shared_name = "train_distributed_done";
    Output done = ops::FIFOQueue(ps.WithOpName("done_queue"), {DT_INT32}, q);
    g->done = ops::QueueEnqueue(ps.WithOpName("done"), done, {ops::Const(ps, task)}).node()->name();
    g->wait_done =
        ops::QueueDequeue(ps.WithOpName("wait_done"), done, {DT_INT32})[0]
            .node()
            ->name();
  }
  SaverOptions so;
  so.dir = o.dir;
  so.save_every_steps = o.save_every;
  so.max_to_keep = 3;
  g->sup = TrainingSupervisor::Prepare(s, so, /*with_checkpoints=*/task == 0, train);
  AF_RETURN_IF_ERROR(root.ToGraphDef(&g->def));
  g->loss = m.loss.name();
  g->accuracy = m.accuracy.name();
  return Status::OK();
}

}  // namespace examples
}  // namespace actorflow
