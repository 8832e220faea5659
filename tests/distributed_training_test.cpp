// Data-parallel training across processes (issue 16): real `actorflow server`
// processes (tests/local_cluster.hpp) as the ps task and a second worker, this
// process as worker 0. Asynchronous training: each worker's steps read the
// variables from the ps task, compute gradients on its own half of the data,
// and the ps task applies them in its container actor. A gradient
// accumulator on the ps task (the barrier of synchronous training) takes the
// mean of both workers' gradients. Synchronous training (SyncReplicasOptimizer)
// with two workers gives the variables one process gets with their batches
// together. The supervisor restores a restarted ps task from the latest
// checkpoint and goes on from its step; a worker waits for the chief.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <random>
#include <thread>

#include "actorflow/client/ops/accumulator_ops.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/partitioned_variables.hpp"
#include "actorflow/client/train/replica_device_setter.hpp"
#include "actorflow/client/train/supervisor.hpp"
#include "actorflow/client/train/sync_replicas_optimizer.hpp"
#include "actorflow/client/train/variables.hpp"
#include "cluster_fixture.hpp"
#include "local_cluster.hpp"
#include "training_data.hpp"
#include "actorflow/master/server.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::LocalCluster;
using test::MakeData;
using test::Rows;
using test::ToDef;

namespace {

// A ps process, a second worker process, and this process as worker 0.
struct Cluster : test::ClusterFixture {
  explicit Cluster(const std::vector<test::RemoteTask>& remote = {{"ps", 0}, {"worker", 1}})
      : ClusterFixture(remote) {}
  // A session whose master (in this process) uses the ps task and worker `task`:
  // worker 1's session stands for the client a worker 1 process would run.
  SessionOptions Options(int task = 0) const {
    return ClusterFixture::Options({"/job:ps", "/job:worker/task:" + std::to_string(task)});
  }
};

// Softmax regression, 4 features -> 3 classes, placed by the replica device
// setter for worker `task`: its variables on the ps task, its math on the worker.
struct Model {
  Scope root = Scope::NewRootScope();
  Output x, y, loss;
  Operation train, init;
  Variable w, b, step;
  Model(const ClusterSpec& cluster, int task) {
    ReplicaDeviceSetterOptions o;
    o.cluster = &cluster;
    o.worker_device = "/job:worker/task:" + std::to_string(task);
    Scope s = ReplicaDeviceSetter(root, o);
    x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
    y = ops::Placeholder(s.WithOpName("y"), DT_INT32);
    w = NewVariable(s, "w", {4, 3}, DT_FLOAT, init::Zeros());
    b = NewVariable(s, "b", {3}, DT_FLOAT, init::Zeros());
    step = GetOrCreateGlobalStep(s);
    auto logits = ops::Add(s, ops::MatMul(s, x, w.value), b.value);
    loss = ops::Mean(s.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, y).loss, {0});
    GradientDescentOptimizer sgd(0.5);
    train = sgd.Minimize(s.WithOpName("train"), loss, &step);
    init = GlobalVariablesInitializer(s);
  }
};

// The chief's supervisor options for tests: worker 0's session, bounded steps, short backoff.
SupervisorOptions ChiefOptions(const Cluster& c, int max_recoveries, int backoff_ms) {
  SupervisorOptions o;
  o.session = c.Options(0);
  o.run.timeout_in_ms = 30000;
  o.backoff = std::chrono::milliseconds(backoff_ms);
  o.max_recoveries = max_recoveries;
  return o;
}


}  // namespace

TEST_CASE("distributed training: two workers train asynchronously against a ps task's variables", "[distributed]") {
  Cluster c;
  Model m0(c.spec, 0), m1(c.spec, 1);
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(ToDef(m0.root)).ok());
  REQUIRE(s1.Create(ToDef(m1.root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;  // a lost tensor fails the test here, never hangs it
  std::vector<Tensor> out;
  REQUIRE(s0.Run(ro, {}, {}, {m0.init.name()}, &out).ok());
  Tensor x0, y0, x1, y1, xa, ya;
  MakeData(64, 1, &x0, &y0);
  MakeData(64, 2, &x1, &y1);
  MakeData(256, 3, &xa, &ya);
  Status first = s0.Run(ro, {{"x", xa}, {"y", ya}}, {m0.loss.name()}, {}, &out);
  INFO(first.ToString());
  REQUIRE(first.ok());
  const float initial = out[0].scalar<float>();
  CHECK(initial == Approx(std::log(3.f)));  // zero weights: uniform predictions
  // Both workers step at once, each on its own data: updates land on the ps as they come.
  constexpr int kSteps = 60;
  auto work = [&](Session* s, const Model* m, const Tensor* x, const Tensor* y, Status* status) {
    std::vector<Tensor> o;
    for (int i = 0; i < kSteps && status->ok(); ++i) *status = s->Run(ro, {{"x", *x}, {"y", *y}}, {}, {m->train.name()}, &o);
  };
  Status st0, st1;
  std::thread t1(work, &s1, &m1, &x1, &y1, &st1);
  work(&s0, &m0, &x0, &y0, &st0);
  t1.join();
  INFO(st0.ToString() << " / " << st1.ToString());
  REQUIRE(st0.ok());
  REQUIRE(st1.ok());
  // One shared model: every update was applied (the global step counts both
  // workers' steps), and it fits data neither worker saw.
  REQUIRE(s1.Run(ro, {{"x", xa}, {"y", ya}}, {m1.loss.name(), m1.step.value.name()}, {}, &out).ok());
  CHECK(out[1].scalar<int64_t>() == 2 * kSteps);
  CHECK(out[0].scalar<float>() < 0.25f * initial);
  // The variables live on the ps task: a third session that only reads them there sees the same values.
  Scope reader = Scope::NewRootScope().WithDevice("/job:ps/task:0");
  NewVariable(reader, "w", {4, 3}, DT_FLOAT, init::Zeros());
  Session s2(c.Options());
  REQUIRE(s2.Create(ToDef(reader)).ok());
  std::vector<Tensor> w_ps, w_worker;
  REQUIRE(s2.Run(ro, {}, {"w/read:0"}, {}, &w_ps).ok());
  REQUIRE(s0.Run(ro, {}, {m0.w.value.name()}, {}, &w_worker).ok());
  CHECK(test::Values<float>(w_ps[0]) == test::Values<float>(w_worker[0]));
  CHECK(w_ps[0].data<float>()[0] > 0.f);  // trained: class 0's feature weighs for class 0
}

TEST_CASE("distributed training: a gradient accumulator on the ps task takes the mean of both workers' gradients",
          "[distributed]") {
  Cluster c;
  // One graph per worker: its gradient (its own input doubled) applied to the
  // accumulator on the ps; the chief (worker 0) also takes.
  auto build = [&](int task) {
    Scope root = Scope::NewRootScope().WithDevice("/job:worker/task:" + std::to_string(task));
    ops::AccumulatorOptions o;
    o.shared_name = "w/grad_accum";
    // The accumulator and the ops on it on the ps (as SyncReplicasOptimizer puts them, with the variable).
    Scope ps = root.WithDevice("/job:ps/task:0");
    Output acc = ops::ConditionalAccumulator(ps.WithOpName("acc"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{2}), o);
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto step = ops::Placeholder(root.WithOpName("step"), DT_INT64);
    auto g = ops::Mul(root.WithOpName("g"), x, 2.f);
    ops::AccumulatorApplyGradient(ps.WithOpName("apply"), acc, step, g);
    ops::Identity(root.WithOpName("take"), ops::AccumulatorTakeGradient(ps, acc, 2, DT_FLOAT));
    ops::Identity(root.WithOpName("num"), ops::AccumulatorNumAccumulated(ps, acc));
    return ToDef(root);
  };
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(build(0)).ok());
  REQUIRE(s1.Create(build(1)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  std::vector<Tensor> out, taken;
  auto take = std::async(std::launch::async, [&] { return s0.Run(ro, {}, {"take:0"}, {}, &taken); });
  Status applied = s0.Run(ro, {{"x", test::MakeTensor<float>({1, 2}, {2})}, {"step", Tensor::Scalar<int64_t>(0)}}, {},
                          {"apply"}, &out);
  INFO(applied.ToString());
  REQUIRE(applied.ok());
  REQUIRE(take.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);  // one of two
  REQUIRE(s1.Run(ro, {{"x", test::MakeTensor<float>({3, 4}, {2})}, {"step", Tensor::Scalar<int64_t>(0)}}, {}, {"apply"},
                 &out)
              .ok());
  REQUIRE(take.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  Status st = take.get();
  INFO(st.ToString());
  REQUIRE(st.ok());
  CHECK(test::Values<float>(taken[0]) == std::vector<float>{4, 6});  // mean of (2, 4) and (6, 8)
  // The take advanced the global step: worker 1's gradient of step 0 is stale now.
  REQUIRE(s1.Run(ro, {{"x", test::MakeTensor<float>({5, 5}, {2})}, {"step", Tensor::Scalar<int64_t>(0)}}, {}, {"apply"},
                 &out)
              .ok());
  REQUIRE(s1.Run(ro, {}, {"num:0"}, {}, &out).ok());
  CHECK(out[0].scalar<int32_t>() == 0);
}

namespace {

// Softmax regression with fixed initial weights, for the sync/reference comparison.
struct SyncModel {
  Scope root = Scope::NewRootScope();
  Variable w, b, step;
  Output w_value;  // w's whole value (w in parts when partitioned)
  std::vector<std::string> w_devices;  // where its parts live
  Output loss;
  Operation train, init, init_local;
  std::unique_ptr<SyncReplicasOptimizer> sync;
  std::unique_ptr<GradientDescentOptimizer> sgd;
  // task < 0: one process, plain SGD; else worker `task` of a 2-replica sync
  // cluster. w_parts > 1: w in that many parts (a partitioned variable).
  SyncModel(const ClusterSpec* cluster, int task, int w_parts = 1, int aggregate = 2, int total = 2) {
    Scope s = root;
    if (task >= 0) {
      ReplicaDeviceSetterOptions o;
      o.cluster = cluster;
      o.worker_device = "/job:worker/task:" + std::to_string(task);
      s = ReplicaDeviceSetter(root, o);
    }
    auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
    auto y = ops::Placeholder(s.WithOpName("y"), DT_INT32);
    Tensor w0(DT_FLOAT, TensorShape{4, 3});
    for (int i = 0; i < 12; ++i) w0.data<float>()[i] = 0.05f * static_cast<float>((i * 7) % 5) - 0.1f;
    if (w_parts > 1) {
      PartitionedVariable pw =
          NewPartitionedVariable(s, "w", {4, 3}, DT_FLOAT, init::Constant(w0), FixedSizePartitioner(w_parts));
      w_value = pw.value;
      for (const auto& p : pw.parts) w_devices.push_back(p.ref.node()->requested_device());
    } else {
      w = NewVariable(s, "w", {4, 3}, DT_FLOAT, init::Constant(w0));
      w_value = w.value;
    }
    b = NewVariable(s, "b", {3}, DT_FLOAT, init::Zeros());
    step = GetOrCreateGlobalStep(s);
    auto logits = ops::Add(s, ops::MatMul(s, x, w_value), b.value);
    loss = ops::Mean(s.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, y).loss, {0});
    sgd = std::make_unique<GradientDescentOptimizer>(0.5);
    if (task < 0) {
      train = sgd->Minimize(s.WithOpName("train"), loss, &step);
    } else {
      sync = std::make_unique<SyncReplicasOptimizer>(sgd.get(), aggregate, total);
      train = sync->Minimize(s, loss, step, "/job:worker/task:" + std::to_string(task));
    }
    init = GlobalVariablesInitializer(s);
    init_local = LocalVariablesInitializer(s);
  }
};


}  // namespace

namespace {

// Two sync replicas (this process and worker 1 of `c`, w in `w_parts` parts)
// trained in lockstep end with the variables of one process's batch-2b steps.
void CheckSyncMatchesOneProcess(Cluster& c, int w_parts) {
  SyncModel m0(&c.spec, 0, w_parts), m1(&c.spec, 1, w_parts);
  REQUIRE(m0.root.ok());
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(ToDef(m0.root)).ok());
  REQUIRE(s1.Create(ToDef(m1.root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  std::vector<Tensor> out;
  auto run = [&](Session& s, const std::vector<std::pair<std::string, Tensor>>& feeds,
                 const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
    Status st = s.Run(ro, feeds, fetches, targets, &out);
    INFO(st.ToString());
    REQUIRE(st.ok());
  };
  // The chief initializes the model, its own local step and the accumulators' global steps; worker 1 its local step.
  run(s0, {}, {}, {m0.init.name(), m0.init_local.name()});
  run(s0, {}, {}, {m0.sync->chief_init_op().name()});
  run(s1, {}, {}, {m1.init_local.name()});
  run(s1, {}, {}, {m1.sync->local_step_init_op().name()});
  Tensor x, y;
  MakeData(64, 5, &x, &y);
  const Tensor x0 = Rows(x, 0, 32), y0 = Rows(y, 0, 32), x1 = Rows(x, 32, 32), y1 = Rows(y, 32, 32);
  const std::string sync_op = m0.sync->chief_queue_runner().enqueue_op_names.at(0);
  // In lockstep: both replicas apply their gradients and wait for a token;
  // the chief's sync op averages the two, applies them and hands out tokens.
  constexpr int kSteps = 5;
  for (int i = 0; i < kSteps; ++i) {
    std::vector<Tensor> o0, o1;
    auto w0 = std::async(std::launch::async, [&] { return s0.Run(ro, {{"x", x0}, {"y", y0}}, {}, {m0.train.name()}, &o0); });
    auto w1 = std::async(std::launch::async, [&] { return s1.Run(ro, {{"x", x1}, {"y", y1}}, {}, {m1.train.name()}, &o1); });
    run(s0, {}, {}, {sync_op});
    Status st0 = w0.get(), st1 = w1.get();
    INFO(st0.ToString() << " / " << st1.ToString());
    REQUIRE(st0.ok());
    REQUIRE(st1.ok());
  }
  run(s1, {}, {m1.w_value.name(), m1.b.value.name(), m1.step.value.name()}, {});
  const std::vector<Tensor> synced = out;
  CHECK(synced[2].scalar<int64_t>() == kSteps);
  // One process, batch 2b, the same steps.
  SyncModel ref(nullptr, -1);
  Session local;
  REQUIRE(local.Create(ToDef(ref.root)).ok());
  REQUIRE(local.Run({}, {}, {ref.init.name()}, &out).ok());
  for (int i = 0; i < kSteps; ++i) REQUIRE(local.Run({{"x", x}, {"y", y}}, {}, {ref.train.name()}, &out).ok());
  REQUIRE(local.Run({}, {ref.w.value.name(), ref.b.value.name()}, {}, &out).ok());
  for (int v = 0; v < 2; ++v)
    for (int64_t i = 0; i < out[v].NumElements(); ++i) {
      const float want = out[v].data<float>()[i], got = synced[v].data<float>()[i];
      INFO("variable " << v << " element " << i);
      CHECK(std::abs(got - want) <= 1e-5f * std::max(1.f, std::abs(want)));
    }
}

}  // namespace

TEST_CASE("distributed training: synchronous replicas (2 workers x batch b) give one process's batch-2b variables",
          "[distributed]") {
  Cluster c;
  CheckSyncMatchesOneProcess(c, 1);
}

TEST_CASE("sync replicas with a backup worker: a lost replica stalls no step; its late gradients are dropped and "
          "counted", "[distributed]") {
  // Three replicas, the first two of each step aggregated: worker 2 (a
  // session of this process's master, as worker 1's) stays silent, as a
  // worker that died or stopped would.
  Cluster c({{"ps", 0}, {"worker", 1}, {"worker", 2}});
  SyncModel m0(&c.spec, 0, 1, 2, 3), m1(&c.spec, 1, 1, 2, 3), m2(&c.spec, 2, 1, 2, 3);
  const std::string release_tokens = m0.sync->GetInitTokensOp(m0.root, 2).node()->name();
  REQUIRE(m0.root.ok());
  auto options = [&](int task) {
    return c.ClusterFixture::Options({"/job:ps", "/job:worker/task:" + std::to_string(task)});
  };
  Session s0(options(0)), s1(options(1)), s2(options(2));
  REQUIRE(s0.Create(ToDef(m0.root)).ok());
  REQUIRE(s1.Create(ToDef(m1.root)).ok());
  REQUIRE(s2.Create(ToDef(m2.root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  std::vector<Tensor> out;
  auto run = [&](Session& s, const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                 const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
    Status st = s.Run(ro, feeds, fetches, targets, &out);
    INFO(st.ToString() << " running " << (targets.empty() ? fetches : targets).front());
    REQUIRE(st.ok());
  };
  run(s0, {}, {m0.init.name(), m0.init_local.name()});
  run(s0, {}, {m0.sync->chief_init_op().name()});
  for (auto [s, m] : {std::pair{&s1, &m1}, std::pair{&s2, &m2}}) {
    run(*s, {}, {m->init_local.name()});
    run(*s, {}, {m->sync->local_step_init_op().name()});
  }
  Tensor x, y;
  MakeData(32, 5, &x, &y);
  const std::vector<std::pair<std::string, Tensor>> batch = {{"x", x}, {"y", y}};
  const std::string sync_op = m0.sync->chief_queue_runner().enqueue_op_names.at(0);
  // Workers 0 and 1 train in loops (each step hands out three tokens: the one
  // left each step goes to a replica that then sends a stale gradient, as in
  // TensorFlow) while the chief's sync op makes kSteps steps of two gradients.
  constexpr int kSteps = 6;
  auto worker = [&](Session* s, SyncModel* m) -> Status {
    for (;;) {
      std::vector<Tensor> o;
      AF_RETURN_IF_ERROR(s->Run(ro, batch, {m->step.value.name()}, {m->train.name()}, &o));
      if (o[0].scalar<int64_t>() >= kSteps) return Status::OK();
    }
  };
  auto w0 = std::async(std::launch::async, worker, &s0, &m0);
  auto w1 = std::async(std::launch::async, worker, &s1, &m1);
  Status chief;
  for (int i = 0; i < kSteps && chief.ok(); ++i) chief = s0.Run(ro, {}, {}, {sync_op}, &out);
  // Tokens for a replica still waiting for one once the steps are made.
  Status release = s0.Run(ro, {}, {}, {release_tokens}, &out);
  Status st0 = w0.get(), st1 = w1.get();
  INFO(chief.ToString() << " / " << release.ToString() << " / " << st0.ToString() << " / " << st1.ToString());
  REQUIRE(chief.ok());
  REQUIRE(release.ok());
  REQUIRE(st0.ok());
  REQUIRE(st1.ok());
  run(s0, {m0.step.value.name(), m0.sync->num_dropped().name()}, {});
  CHECK(out[0].scalar<int64_t>() == kSteps);
  const int64_t dropped = out[1].scalar<int64_t>();
  // Worker 2 comes back with its gradient of local step 0: dropped, counted,
  // and it takes a token (one of those left) and goes on.
  run(s2, {}, {m2.train.name()}, batch);
  run(s0, {m0.sync->num_dropped().name()}, {});
  CHECK(out[0].scalar<int64_t>() == dropped + 1);
}

TEST_CASE("distributed training: the same with w in two parts, one on each of two ps tasks", "[distributed]") {
  Cluster c({{"ps", 0}, {"ps", 1}, {"worker", 1}});
  SyncModel placed(&c.spec, 0, 2);
  CHECK(placed.w_devices == std::vector<std::string>{"/job:ps/task:0", "/job:ps/task:1"});
  CheckSyncMatchesOneProcess(c, 2);
}

TEST_CASE("sync replicas: tokens to start with, and too few of them with backup workers, are checked") {
  Scope root = Scope::NewRootScope();
  Variable w = NewVariable(root, "w", {2}, DT_FLOAT, init::Zeros());
  Variable step = GetOrCreateGlobalStep(root);
  auto loss = ops::Sum(root, ops::Square(root, w.value), {0});
  GradientDescentOptimizer sgd(0.1);
  SyncReplicasOptimizer backup(&sgd, /*replicas_to_aggregate=*/2, /*total_num_replicas=*/3);
  backup.Minimize(root, loss, step);
  REQUIRE(root.ok());
  CHECK(backup.GetInitTokensOp(root, 0).node() != nullptr);  // backups: 0 tokens is enough
  CHECK(root.ok());
  Scope other = Scope::NewRootScope();
  Variable w2 = NewVariable(other, "w", {2}, DT_FLOAT, init::Zeros());
  Variable step2 = GetOrCreateGlobalStep(other);
  SyncReplicasOptimizer fewer(&sgd, /*replicas_to_aggregate=*/3, /*total_num_replicas=*/2);
  fewer.Minimize(other, ops::Sum(other, ops::Square(other, w2.value), {0}), step2);
  REQUIRE(other.ok());
  fewer.GetInitTokensOp(other, 0);
  CHECK(other.status().code() == Code::kInvalidArgument);
  // The graph has TensorFlow's pieces: an accumulator per variable sharing "<var>/grad_accum", the token queue.
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  int accumulators = 0, token_queues = 0;
  for (const auto& n : def.node()) {
    if (n.op() == "ConditionalAccumulator") {
      ++accumulators;
      CHECK(n.attr().at("shared_name").s() == "w/grad_accum");
    }
    if (n.op() == "FIFOQueueV2" && n.attr().at("shared_name").s() == "sync_token_q") ++token_queues;
  }
  CHECK(accumulators == 1);
  CHECK(token_queues == 1);
}

TEST_CASE("supervisor: a ps task killed and restarted; the chief restores the checkpoint and training goes on from its "
          "step, never from zero",
          "[distributed]") {
  Cluster c;
  test::TempDir dir("af_ckpt");
  Model m(c.spec, 0);
  SaverOptions so;
  so.dir = dir.path();
  so.save_every_steps = 4;
  // Given the train op: each training step fetches the global step after it, in the same Run.
  TrainingSupervisor::Graph g = TrainingSupervisor::Prepare(m.root, so, /*with_checkpoints=*/true, m.train);
  REQUIRE(m.root.ok());
  SupervisorOptions options = ChiefOptions(c, 3, 50);
  std::vector<std::pair<Status, int>> announced;  // each recovery, announced with its error (on this thread)
  options.on_recovery = [&](const Status& why, int n) { announced.emplace_back(why, n); };
  TrainingSupervisor sup(ToDef(m.root), g, options);
  REQUIRE(sup.Start().ok());
  REQUIRE(sup.global_step() == 0);  // nothing to restore: initialized
  Tensor x, y;
  MakeData(64, 9, &x, &y);
  std::vector<Tensor> out;
  for (int i = 0; i < 10; ++i) REQUIRE(sup.Run({{"x", x}, {"y", y}}, {}, {m.train.name()}, &out).ok());
  REQUIRE(sup.global_step() == 10);
  REQUIRE(sup.Run({{"x", x}, {"y", y}}, {m.loss.name()}, {}, &out).ok());
  const float trained_loss = out[0].scalar<float>();
  // The ps task dies and comes back empty.
  LocalCluster::Task& ps0 = c.processes.task("ps", 0);
  CHECK(LocalCluster::Stop(&ps0, /*hard=*/true) == -SIGKILL);
  c.processes.Restart(&ps0);
  Status s = sup.Run({{"x", x}, {"y", y}}, {}, {m.train.name()}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(sup.recoveries() >= 1);
  REQUIRE(static_cast<int>(announced.size()) == sup.recoveries());
  for (size_t i = 0; i < announced.size(); ++i) {
    INFO(announced[i].first.ToString());
    CHECK(announced[i].second == static_cast<int>(i) + 1);
    CHECK((errors::IsUnavailable(announced[i].first) || errors::IsAborted(announced[i].first)));
  }
  // Restored from a checkpoint (saved every 4 steps from the first: steps 5 and 9), then one
  // step: not from zero (1), and not as if nothing was lost (11).
  CHECK(sup.global_step() >= 6);
  CHECK(sup.global_step() <= 10);
  REQUIRE(sup.Run({{"x", x}, {"y", y}}, {m.loss.name()}, {}, &out).ok());
  CHECK(out[0].scalar<float>() < 0.5f * std::log(3.f));  // the trained model, not a fresh one
  (void)trained_loss;
  REQUIRE(sup.Finish().ok());
  CHECK_FALSE(sup.Run({{"x", x}, {"y", y}}, {}, {m.train.name()}, &out).ok());  // finished: no more steps
}

TEST_CASE("supervisor: a ps task that stays dead ends training after max_recoveries, with the error",
          "[distributed]") {
  Cluster c;
  Model m(c.spec, 0);
  TrainingSupervisor::Graph g = TrainingSupervisor::Prepare(m.root, SaverOptions(), /*with_checkpoints=*/false);
  TrainingSupervisor sup(ToDef(m.root), g, ChiefOptions(c, 2, 20));
  REQUIRE(sup.Start().ok());
  Tensor x, y;
  MakeData(16, 4, &x, &y);
  std::vector<Tensor> out;
  REQUIRE(sup.Run({{"x", x}, {"y", y}}, {}, {m.train.name()}, &out).ok());
  LocalCluster::Task& ps0 = c.processes.task("ps", 0);
  CHECK(LocalCluster::Stop(&ps0, /*hard=*/true) == -SIGKILL);
  Status s = sup.Run({{"x", x}, {"y", y}}, {}, {m.train.name()}, &out);
  INFO(s.ToString());
  CHECK(s.code() == Code::kUnavailable);
  CHECK(s.message().find("giving up after 2 recoveries") != std::string::npos);
  CHECK(s.message().find("/job:ps/replica:0/task:0") != std::string::npos);
}

TEST_CASE("supervisor: a worker waits until the chief has initialized the model", "[distributed]") {
  Cluster c;
  Model chief_model(c.spec, 0), worker_model(c.spec, 1);
  TrainingSupervisor::Graph gc = TrainingSupervisor::Prepare(chief_model.root, SaverOptions(), false);
  TrainingSupervisor::Graph gw = TrainingSupervisor::Prepare(worker_model.root, SaverOptions(), false);
  SupervisorOptions oc, ow;
  oc.session = c.Options(0);
  ow.session = c.Options(1);
  ow.is_chief = false;
  ow.ready_poll = std::chrono::milliseconds(20);
  ow.ready_timeout = std::chrono::milliseconds(20000);
  TrainingSupervisor worker(ToDef(worker_model.root), gw, ow);
  auto started = std::async(std::launch::async, [&] { return worker.Start(); });
  REQUIRE(started.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);  // not ready yet
  TrainingSupervisor chief(ToDef(chief_model.root), gc, oc);
  REQUIRE(chief.Start().ok());
  REQUIRE(started.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  Status s = started.get();
  INFO(s.ToString());
  CHECK(s.ok());
  // A worker that never sees a chief gives up at its deadline, saying why.
  Cluster lonely;
  Model lm(lonely.spec, 1);
  TrainingSupervisor::Graph gl = TrainingSupervisor::Prepare(lm.root, SaverOptions(), false);
  ow.session = lonely.Options(1);
  ow.ready_timeout = std::chrono::milliseconds(300);
  TrainingSupervisor waiting(ToDef(lm.root), gl, ow);
  s = waiting.Start();
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK(s.message().find("not ready") != std::string::npos);
}

TEST_CASE("end of training: the chief tells the ps tasks to stop, and they exit cleanly", "[distributed]") {
  Cluster c;
  REQUIRE(c.server->ShutdownTasks("ps", "training is over").ok());
  LocalCluster::Task& ps0 = c.processes.task("ps", 0);
  int status = 0;
  pid_t got = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((got = ::waitpid(ps0.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(got == ps0.pid);  // it ended by itself, no signal sent
  ps0.pid = -1;
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Asked again, a task already gone counts as stopped.
  CHECK(c.server->ShutdownTasks("ps", "training is over").ok());
}

TEST_CASE("supervisor: a front-end's own start (chief_prepare), and the global step read only when asked",
          "[supervisor]") {
  Scope root = Scope::NewRootScope();
  Variable w = NewVariable(root, "prepared_w", {}, DT_FLOAT, init::Zeros());
  Variable step = GetOrCreateGlobalStep(root);
  ops::Assign(root.WithOpName("set_w"), w.ref, ops::Const(root, 7.0f));
  ops::AssignAdd(root.WithOpName("bump"), step.ref, ops::Const(root, int64_t{1}));
  TrainingSupervisor::Graph g = TrainingSupervisor::Prepare(root, SaverOptions(), /*with_checkpoints=*/false);
  REQUIRE(root.ok());
  int prepared = 0;
  SupervisorOptions o;  // in this process
  o.read_global_step_each_step = false;
  o.chief_prepare = [&](Session* session) {  // as python/'s Scaffold: the init op, then its init_fn
    ++prepared;
    std::vector<Tensor> none;
    AF_RETURN_IF_ERROR(session->Run(RunOptions(), {}, {}, {g.init_op}, &none));
    return session->Run(RunOptions(), {}, {}, {"set_w"}, &none);
  };
  TrainingSupervisor sup(ToDef(root), g, o);
  REQUIRE(sup.Start().ok());
  CHECK(prepared == 1);
  std::vector<Tensor> out;
  REQUIRE(sup.Run({}, {w.value.name()}, {}, &out).ok());
  CHECK(out[0].scalar<float>() == 7.0f);  // the chief's own start, not the init op alone
  for (int i = 0; i < 3; ++i) REQUIRE(sup.Run({}, {}, {"bump"}, &out).ok());
  CHECK(sup.global_step() == 0);  // read when the session was made ready, not after each step
  REQUIRE(sup.Run({}, {step.value.name()}, {}, &out).ok());
  CHECK(out[0].scalar<int64_t>() == 3);
  REQUIRE(sup.Finish().ok());
  CHECK(prepared == 1);
}
