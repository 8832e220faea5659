// All-reduce data parallelism across processes (issue 16): an `actorflow
// server` process as worker 1 (tests/local_cluster.hpp), this process as
// worker 0; each worker's session holds the whole model on its own task. Two
// workers with batch b give the variables one process gets with batch 2b
// (DDP's and Horovod's guarantee), after the chief's variables were broadcast
// over the other's different ones; workers whose bucket plans differ get
// InvalidArgument naming the first difference; a worker killed while the
// other waits in a collective is Unavailable there, not a hang; supervised, a
// worker killed and restarted costs both a recovery, and training goes on
// from the chief's last checkpoint.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <random>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/collective_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/all_reduce.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/supervisor.hpp"
#include "actorflow/client/train/variables.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "cluster_fixture.hpp"
#include "local_cluster.hpp"
#include "training_data.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/comm/collective_executor.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using test::LocalCluster;
using test::MakeData;
using test::Rows;
using test::ToDef;

namespace {

// Worker `remote` is an `actorflow server` process; this process is the other.
struct Cluster : test::ClusterFixture {
  explicit Cluster(int remote = 1) : ClusterFixture({{"worker", remote}}) {}
  // A session (its master in this process) on worker `task` alone: worker
  // 1's stands for the client a worker 1 process would run.
  SessionOptions Options(int task) const {
    return ClusterFixture::Options({"/job:worker/task:" + std::to_string(task)});
  }
};

// Softmax regression, 4 features -> 3 classes, on worker `task` (task < 0:
// one process alone, no all-reduce); initial values drawn with `seed`.
struct Model {
  Scope root = Scope::NewRootScope();
  Output x, y, loss;
  Operation train, init, broadcast, broadcast_all;
  Variable w, b, step;
  Model(int task, int workers, uint32_t seed, size_t bucket_bytes = size_t{4} << 20, int64_t classes = 3) {
    Scope s = task < 0 ? root : root.WithDevice("/job:worker/task:" + std::to_string(task));
    x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
    y = ops::Placeholder(s.WithOpName("y"), DT_INT32);
    w = NewVariable(s, "w", {4, classes}, DT_FLOAT, init::RandomNormal(0.f, 0.1f, seed));
    b = NewVariable(s, "b", {classes}, DT_FLOAT, init::RandomNormal(0.f, 0.1f, seed + 1));
    auto logits = ops::Add(s, ops::MatMul(s, x, w.value), b.value);
    loss = ops::Mean(s.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, y).loss, {0});
    step = GetOrCreateGlobalStep(s);
    GradientDescentOptimizer sgd(0.5);
    AllReduceOptions ar;
    ar.group_size = task < 0 ? 1 : workers;
    ar.bucket_bytes = bucket_bytes;
    ar.timeout_seconds = 30;
    auto grads = AllReduceGradients(s, sgd.ComputeGradients(s, loss), ar);
    train = sgd.ApplyGradients(s.WithOpName("train"), grads, &step);
    init = GlobalVariablesInitializer(s);
    AllReduceOptions bc = ar;
    bc.first_instance_key = 1000;
    broadcast = BroadcastVariables(s, {w, b}, task == 0, bc);
    bc.first_instance_key = 2000;
    broadcast_all = BroadcastVariables(s, GlobalVariables(s), task == 0, bc);
  }
};



RunOptions Bounded() {
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  return ro;
}

}  // namespace

TEST_CASE("all-reduce: 2 workers x batch b give one process's batch-2b variables, from the chief's broadcast",
          "[distributed]") {
  Cluster c;
  Model m0(0, 2, 1), m1(1, 2, 2);  // different initial values: the broadcast makes them the chief's
  REQUIRE(m0.root.ok());
  REQUIRE(m1.root.ok());
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(ToDef(m0.root)).ok());
  REQUIRE(s1.Create(ToDef(m1.root)).ok());
  std::vector<Tensor> out0, out1;
  REQUIRE(s0.Run(Bounded(), {}, {}, {m0.init.name()}, &out0).ok());
  REQUIRE(s1.Run(Bounded(), {}, {}, {m1.init.name()}, &out1).ok());
  REQUIRE(s0.Run(Bounded(), {}, {m0.w.value.name()}, {}, &out0).ok());
  REQUIRE(s1.Run(Bounded(), {}, {m1.w.value.name()}, {}, &out1).ok());
  const Tensor chief_w = out0[0];
  CHECK(out1[0].data<float>()[0] != chief_w.data<float>()[0]);
  auto both = [&](const std::vector<std::pair<std::string, Tensor>>& f0,
                  const std::vector<std::pair<std::string, Tensor>>& f1, const std::string& t0, const std::string& t1) {
    auto a = std::async(std::launch::async, [&] { return s0.Run(Bounded(), f0, {}, {t0}, &out0); });
    Status sb = s1.Run(Bounded(), f1, {}, {t1}, &out1);
    Status sa = a.get();
    INFO(sa.ToString() << " / " << sb.ToString());
    REQUIRE(sa.ok());
    REQUIRE(sb.ok());
  };
  both({}, {}, m0.broadcast.name(), m1.broadcast.name());
  REQUIRE(s1.Run(Bounded(), {}, {m1.w.value.name()}, {}, &out1).ok());
  for (int i = 0; i < 12; ++i) CHECK(out1[0].data<float>()[i] == chief_w.data<float>()[i]);

  Tensor x, y;
  MakeData(64, 5, &x, &y);
  const Tensor x0 = Rows(x, 0, 32), y0 = Rows(y, 0, 32), x1 = Rows(x, 32, 32), y1 = Rows(y, 32, 32);
  constexpr int kSteps = 5;
  for (int i = 0; i < kSteps; ++i) both({{"x", x0}, {"y", y0}}, {{"x", x1}, {"y", y1}}, m0.train.name(), m1.train.name());
  REQUIRE(s0.Run(Bounded(), {}, {m0.w.value.name(), m0.b.value.name()}, {}, &out0).ok());
  REQUIRE(s1.Run(Bounded(), {}, {m1.w.value.name(), m1.b.value.name()}, {}, &out1).ok());
  // One process, batch 2b, from the chief's initial values.
  Model ref(-1, 1, 1);
  Session local;
  std::vector<Tensor> out;
  REQUIRE(local.Create(ToDef(ref.root)).ok());
  REQUIRE(local.Run({}, {}, {ref.init.name()}, &out).ok());
  for (int i = 0; i < kSteps; ++i) REQUIRE(local.Run({{"x", x}, {"y", y}}, {}, {ref.train.name()}, &out).ok());
  REQUIRE(local.Run({}, {ref.w.value.name(), ref.b.value.name()}, {}, &out).ok());
  for (int v = 0; v < 2; ++v)
    for (int64_t i = 0; i < out[v].NumElements(); ++i) {
      const float want = out[v].data<float>()[i];
      INFO("variable " << v << " element " << i);
      CHECK(out0[v].data<float>()[i] == out1[v].data<float>()[i]);  // the replicas are equal, bit for bit
      CHECK(std::abs(out1[v].data<float>()[i] - want) <= 1e-5f * std::max(1.f, std::abs(want)));
    }
}

TEST_CASE("all-reduce: workers whose bucket plans differ get InvalidArgument naming the difference", "[distributed]") {
  Cluster c;
  Model m0(0, 2, 1), m1(1, 2, 1, /*bucket_bytes=*/1);  // one bucket of both gradients vs one each
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(ToDef(m0.root)).ok());
  REQUIRE(s1.Create(ToDef(m1.root)).ok());
  std::vector<Tensor> out0, out1;
  REQUIRE(s0.Run(Bounded(), {}, {}, {m0.init.name()}, &out0).ok());
  REQUIRE(s1.Run(Bounded(), {}, {}, {m1.init.name()}, &out1).ok());
  Tensor x, y;
  MakeData(8, 3, &x, &y);
  auto a = std::async(std::launch::async, [&] { return s0.Run(Bounded(), {{"x", x}, {"y", y}}, {}, {m0.train.name()}, &out0); });
  Status sb = s1.Run(Bounded(), {{"x", x}, {"y", y}}, {}, {m1.train.name()}, &out1);
  Status sa = a.get();
  for (const Status& s : {sa, sb}) {
    INFO(s.ToString());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("bucket plans") && Catch::Contains("first difference at line 1"));
  }
}

// Worker 0 waits in an all-reduce that worker 1 never joins; then worker 1's
// process is killed, or stopped (hung). Worker 0's step's status, and how
// long after the kill or stop it ended.
std::pair<Status, int64_t> LoseWorkerMidAllReduce(bool hang) {
  Cluster c;
  Model m0(0, 2, 1), m1(1, 2, 1);  // their collectives time out after 30 s
  // s1: worker 1 known to this process's transport, and watched by s1's master.
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(ToDef(m0.root)).ok());
  REQUIRE(s1.Create(ToDef(m1.root)).ok());
  std::vector<Tensor> out0;
  REQUIRE(s0.Run(Bounded(), {}, {}, {m0.init.name()}, &out0).ok());
  Tensor x, y;
  MakeData(8, 3, &x, &y);
  auto a = std::async(std::launch::async, [&] { return s0.Run(Bounded(), {{"x", x}, {"y", y}}, {}, {m0.train.name()}, &out0); });
  // Worker 0's all-reduce has formed the group with worker 1 (worker 1's
  // executor answers the JOIN without a collective of its own) and waits for
  // its data: this process's collective executor holds it.
  CollectiveExecutor* collectives = c.server->runtime()->collectives();
  REQUIRE(collectives != nullptr);
  {
    INFO("worker 0's all-reduce did not come to wait for worker 1");
    REQUIRE(test::WaitUntil([&] { return collectives->formed_count() >= 1 && collectives->pending_count() >= 1; },
                            std::chrono::seconds(20)));
  }
  REQUIRE(a.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);  // the step still waits
  LocalCluster::Task& w1 = c.processes.task("worker", 1);
  const auto lost_at = std::chrono::steady_clock::now();
  if (hang) {
    LocalCluster::Signal(w1, SIGSTOP);
  } else {
    CHECK(LocalCluster::Stop(&w1, /*hard=*/true) == -SIGKILL);
  }
  const bool ended = a.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  const int64_t took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - lost_at).count();
  if (hang) LocalCluster::Signal(w1, SIGCONT);
  REQUIRE(ended);
  return {a.get(), took_ms};
}

TEST_CASE("all-reduce: a worker killed while the other waits in the all-reduce is Unavailable there", "[distributed]") {
  const auto [s, took_ms] = LoseWorkerMidAllReduce(/*hang=*/false);
  INFO(s.ToString() << " after " << took_ms << " ms");
  CHECK(s.code() == Code::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("/job:worker/replica:0/task:1"));
  CHECK(took_ms <= test::kTestPeerFailureBoundMs);  // not the collective's 30 s timeout
  std::printf("all_reduce_test: a killed worker failed the all-reduce after %lld ms\n", static_cast<long long>(took_ms));
}

TEST_CASE("all-reduce: a worker that hangs fails the other's all-reduce at the heartbeat timeout, not the collective's",
          "[distributed]") {
  const auto [s, took_ms] = LoseWorkerMidAllReduce(/*hang=*/true);
  INFO(s.ToString() << " after " << took_ms << " ms");
  CHECK(s.code() == Code::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("/job:worker/replica:0/task:1") && Catch::Contains("down"));
  CHECK(took_ms <= test::kTestPeerFailureBoundMs);  // the heartbeat timeout and a margin, not the collective's 30 s
  std::printf("all_reduce_test: a hung worker failed the all-reduce after %lld ms (peer timeout %d ms)\n",
              static_cast<long long>(took_ms), test::kTestPeerTimeoutMs);  // the README's figure
}
// The process of worker `killed` dies and comes back empty mid-training: the
// worker (its replica's variables gone), or the chief (its variables too:
// restored from its checkpoint, then broadcast).
void KillAndRecover(int killed) {
  Cluster c(killed);
  test::TempDir dir("af_ar_ckpt");
  Model m0(0, 2, 1), m1(1, 2, 2);
  SaverOptions so;
  so.dir = dir.path();
  so.save_every_steps = 4;
  TrainingSupervisor::Graph g0 = TrainingSupervisor::Prepare(m0.root, so, /*with_checkpoints=*/true, m0.train);
  TrainingSupervisor::Graph g1 = TrainingSupervisor::Prepare(m1.root, so, /*with_checkpoints=*/false, m1.train);
  REQUIRE(m0.root.ok());
  REQUIRE(m1.root.ok());
  auto options = [&](int task, const Model& m) {
    SupervisorOptions o;
    o.is_chief = true;  // all-reduce: each initializes its replica (the chief restores), then takes the chief's
    o.session = c.Options(task);
    o.run.timeout_in_ms = 30000;
    o.backoff = std::chrono::milliseconds(100);
    o.max_recoveries = 6;
    const std::string bcast = m.broadcast_all.name();
    const RunOptions run = o.run;
    o.on_session_ready = [bcast, run](Session* s) {
      std::vector<Tensor> none;
      return s->Run(run, {}, {}, {bcast}, &none);
    };
    return o;
  };
  TrainingSupervisor sup0(ToDef(m0.root), g0, options(0, m0)), sup1(ToDef(m1.root), g1, options(1, m1));
  {
    auto a = std::async(std::launch::async, [&] { return sup0.Start(); });
    Status s1 = sup1.Start(), s0 = a.get();
    INFO(s0.ToString() << " / " << s1.ToString());
    REQUIRE(s0.ok());
    REQUIRE(s1.ok());
  }
  Tensor x, y;
  MakeData(64, 9, &x, &y);
  const Tensor x0 = Rows(x, 0, 32), y0 = Rows(y, 0, 32), x1 = Rows(x, 32, 32), y1 = Rows(y, 32, 32);
  // Both train to `until`; the first global step each sees after a recovery.
  auto train = [&](TrainingSupervisor& sup, const Model& m, const Tensor& bx, const Tensor& by, int64_t until) {
    int64_t first_after = -1;
    const int before = sup.recoveries();
    std::vector<Tensor> out;
    while (sup.global_step() < until) {
      Status s = sup.Run({{"x", bx}, {"y", by}}, {}, {m.train.name()}, &out);
      if (!s.ok()) return std::make_pair(s, first_after);
      if (first_after < 0 && sup.recoveries() > before) first_after = sup.global_step();
    }
    return std::make_pair(Status::OK(), first_after);
  };
  {
    auto a = std::async(std::launch::async, [&] { return train(sup0, m0, x0, y0, 8); });
    auto r1 = train(sup1, m1, x1, y1, 8);
    auto r0 = a.get();
    INFO(r0.first.ToString() << " / " << r1.first.ToString());
    REQUIRE(r0.first.ok());
    REQUIRE(r1.first.ok());
  }
  // Checkpoints at steps 1 and 5. The worker's process dies and comes back empty.
  LocalCluster::Task& w = c.processes.task("worker", killed);
  CHECK(LocalCluster::Stop(&w, /*hard=*/true) == -SIGKILL);
  c.processes.Restart(&w);
  auto a = std::async(std::launch::async, [&] { return train(sup0, m0, x0, y0, 12); });
  auto r1 = train(sup1, m1, x1, y1, 12);
  auto r0 = a.get();
  INFO(r0.first.ToString() << " / " << r1.first.ToString());
  REQUIRE(r0.first.ok());
  REQUIRE(r1.first.ok());
  CHECK(sup0.recoveries() >= 1);
  CHECK(sup1.recoveries() >= 1);
  // The chief restored step 5 and both took it: the first step after is 6,
  // not 1 (from zero) and not 9 (as if nothing was lost).
  CHECK(r0.second == 6);
  CHECK(r1.second == 6);
  std::vector<Tensor> o0, o1;
  REQUIRE(sup0.session()->Run({}, {m0.w.value.name()}, {}, &o0).ok());
  REQUIRE(sup1.session()->Run({}, {m1.w.value.name()}, {}, &o1).ok());
  for (int i = 0; i < 12; ++i) CHECK(o0[0].data<float>()[i] == o1[0].data<float>()[i]);
  REQUIRE(sup0.Finish().ok());
  REQUIRE(sup1.Finish().ok());
}

TEST_CASE("all-reduce supervised: a worker killed and restarted; both recover and go on from the chief's checkpoint",
          "[distributed]") {
  KillAndRecover(1);
}

TEST_CASE("all-reduce supervised: the chief's task killed and restarted; it restores its checkpoint and both go on "
          "from it",
          "[distributed]") {
  KillAndRecover(0);
}

TEST_CASE("all-reduce: a CollectiveReduce graph written by TensorFlow runs across two workers", "[distributed]") {
  Cluster c;
  proto::GraphDef def0;
  REQUIRE(ReadGraphDefFile(std::string(AF_TEST_DATA_DIR) + "/tf_collective.pbtxt", &def0).ok());
  proto::GraphDef def1 = def0;
  for (auto& n : *def0.mutable_node()) n.set_device("/job:worker/task:0");
  for (auto& n : *def1.mutable_node()) n.set_device("/job:worker/task:1");
  Session s0(c.Options(0)), s1(c.Options(1));
  REQUIRE(s0.Create(def0).ok());
  REQUIRE(s1.Create(def1).ok());
  Tensor x0(DT_FLOAT, TensorShape{3}), x1(DT_FLOAT, TensorShape{3});
  for (int i = 0; i < 3; ++i) {
    x0.data<float>()[i] = 1.f + i;
    x1.data<float>()[i] = 3.f + i;
  }
  std::vector<Tensor> out0, out1;
  auto a = std::async(std::launch::async, [&] { return s0.Run(Bounded(), {{"x", x0}}, {"CollectiveReduce"}, {}, &out0); });
  Status sb = s1.Run(Bounded(), {{"x", x1}}, {"CollectiveReduce"}, {}, &out1);
  Status sa = a.get();
  INFO(sa.ToString() << " / " << sb.ToString());
  REQUIRE(sa.ok());
  REQUIRE(sb.ok());
  for (int i = 0; i < 3; ++i) {
    CHECK(out0[0].data<float>()[i] == 2.f + i);  // the mean
    CHECK(out1[0].data<float>()[i] == 2.f + i);
  }
}

TEST_CASE("all-reduce, elastic (group_size 0): a worker killed for good; the other two go on at 2 without a checkpoint",
          "[distributed]") {
  test::ClusterFixture c({{"worker", 1}, {"worker", 2}});
  // Each session finds every worker (as train_distributed's do): so every
  // worker's process learns where the others are, which an elastic group counts.
  Model m0(0, 0, 1), m1(1, 0, 2), m2(2, 0, 3);  // group_size 0; different initial values
  Session s0(c.Options({"/job:worker"})), s1(c.Options({"/job:worker"})), s2(c.Options({"/job:worker"}));
  Model* models[] = {&m0, &m1, &m2};
  Session* sessions[] = {&s0, &s1, &s2};
  for (int t = 0; t < 3; ++t) {
    REQUIRE(models[t]->root.ok());
    REQUIRE(sessions[t]->Create(ToDef(models[t]->root)).ok());
    std::vector<Tensor> out;
    REQUIRE(sessions[t]->Run(Bounded(), {}, {}, {models[t]->init.name()}, &out).ok());
  }
  Tensor x, y;
  MakeData(96, 4, &x, &y);
  const Tensor xs[] = {Rows(x, 0, 32), Rows(x, 32, 32), Rows(x, 64, 32)};
  const Tensor ys[] = {Rows(y, 0, 32), Rows(y, 32, 32), Rows(y, 64, 32)};
  // The live workers each run `target` (with their shard when training), at
  // once; a step that fails because the group changed is run again (at most
  // a few times), as a training loop does.
  auto step = [&](const std::vector<int>& live, const std::string& what) {
    std::vector<std::future<Status>> fs;
    for (int t : live)
      fs.push_back(std::async(std::launch::async, [&, t] {
        const bool train = what == "train";
        const std::string target = train ? models[t]->train.name() : models[t]->broadcast_all.name();
        std::vector<std::pair<std::string, Tensor>> feeds;
        if (train) feeds = {{"x", xs[t]}, {"y", ys[t]}};
        std::vector<Tensor> out;
        Status s;
        for (int i = 0; i < 6; ++i) {
          s = sessions[t]->Run(Bounded(), feeds, {}, {target}, &out);
          if (!errors::IsUnavailable(s) && !errors::IsAborted(s)) break;
          // The group changed under it: sync (as elastic_resync does), then again.
          if (train) (void)sessions[t]->Run(Bounded(), {}, {}, {models[t]->broadcast_all.name()}, &out);
        }
        return s;
      }));
    for (auto& f : fs) {
      const Status s = f.get();
      INFO(what << ": " << s.ToString());
      REQUIRE(s.ok());
    }
  };
  auto read = [&](int t) {
    std::vector<Tensor> out;
    REQUIRE(sessions[t]->Run(Bounded(), {}, {models[t]->w.value.name(), models[t]->b.value.name()}, {}, &out).ok());
    return out;
  };
  // Every worker takes rank 0's (worker 0's) variables, then they train at 3.
  step({0, 1, 2}, "sync");
  for (int i = 0; i < 3; ++i) step({0, 1, 2}, "train");
  CHECK(test::Values<float>(read(1)[0]) == test::Values<float>(read(0)[0]));
  CHECK(test::Values<float>(read(2)[0]) == test::Values<float>(read(0)[0]));
  // Worker 2 dies for good. The others re-sync (from worker 0) and go on at 2.
  CHECK(LocalCluster::Stop(&c.processes.task("worker", 2), /*hard=*/true) == -SIGKILL);
  REQUIRE(test::WaitUntil(
      [&] {
        auto t = c.server->runtime()->membership()->Find("/job:worker/replica:0/task:2");
        return t && t->liveness == TaskRecord::Liveness::kFailed;
      },
      std::chrono::seconds(10)));
  step({0, 1}, "sync");
  const std::vector<Tensor> from = read(0);
  constexpr int kSteps = 3;
  for (int i = 0; i < kSteps; ++i) step({0, 1}, "train");
  const std::vector<Tensor> got0 = read(0), got1 = read(1);
  // One process, from the same variables, on both survivors' shards at once
  // (batch 2b): the mean divided by 2, the live count.
  Model ref(-1, 1, 1);
  Scope set = ref.root.NewSubScope("set");
  ops::Assign(set.WithOpName("set_w"), ref.w.ref, ops::Placeholder(set.WithOpName("w0"), DT_FLOAT));
  ops::Assign(set.WithOpName("set_b"), ref.b.ref, ops::Placeholder(set.WithOpName("b0"), DT_FLOAT));
  REQUIRE(ref.root.ok());
  Session local;
  std::vector<Tensor> out;
  REQUIRE(local.Create(ToDef(ref.root)).ok());
  REQUIRE(local.Run({}, {}, {ref.init.name()}, &out).ok());
  REQUIRE(local.Run({{"set/w0", from[0]}, {"set/b0", from[1]}}, {}, {"set/set_w", "set/set_b"}, &out).ok());
  const Tensor both_x = Rows(x, 0, 64), both_y = Rows(y, 0, 64);
  for (int i = 0; i < kSteps; ++i) REQUIRE(local.Run({{"x", both_x}, {"y", both_y}}, {}, {ref.train.name()}, &out).ok());
  REQUIRE(local.Run({}, {ref.w.value.name(), ref.b.value.name()}, {}, &out).ok());
  for (int v = 0; v < 2; ++v)
    for (int64_t i = 0; i < out[v].NumElements(); ++i) {
      const float want = out[v].data<float>()[i];
      INFO("variable " << v << " element " << i);
      CHECK(got0[v].data<float>()[i] == got1[v].data<float>()[i]);  // the survivors are equal, bit for bit
      CHECK(std::abs(got1[v].data<float>()[i] - want) <= 1e-5f * std::max(1.f, std::abs(want)));
    }
}

TEST_CASE("all-reduce, elastic: a member whose model differs is refused naming the difference; the others go on",
          "[distributed]") {
  test::ClusterFixture c({{"worker", 1}, {"worker", 2}});
  Model m0(0, 0, 1), m1(1, 0, 2), m2(2, 0, 3, size_t{4} << 20, /*classes=*/4);  // worker 2: w [4,4], b [4]
  Model* models[] = {&m0, &m1, &m2};
  std::unique_ptr<Session> sessions[3];
  for (int t = 0; t < 3; ++t) {
    REQUIRE(models[t]->root.ok());
    sessions[t] = std::make_unique<Session>(c.Options({"/job:worker"}));
    REQUIRE(sessions[t]->Create(ToDef(models[t]->root)).ok());
    std::vector<Tensor> out;
    REQUIRE(sessions[t]->Run(Bounded(), {}, {}, {models[t]->init.name()}, &out).ok());
  }
  // All three sync: worker 2's broadcast takes worker 0's plan and refuses it.
  std::vector<std::future<Status>> fs;
  for (int t = 0; t < 3; ++t)
    fs.push_back(std::async(std::launch::async, [&, t] {
      std::vector<Tensor> out;
      return sessions[t]->Run(Bounded(), {}, {}, {models[t]->broadcast_all.name()}, &out);
    }));
  std::vector<Status> got;
  for (auto& f : fs) got.push_back(f.get());
  INFO(got[2].ToString());
  CHECK(got[2].code() == Code::kInvalidArgument);
  CHECK_THAT(got[2].message(), Catch::Contains("first difference at line 2") && Catch::Contains("w float[4,3]") &&
                                   Catch::Contains("w float[4,4]"));
  // Its program ends (train_distributed exits on InvalidArgument); the others sync and train on at 2.
  CHECK(LocalCluster::Stop(&c.processes.task("worker", 2), /*hard=*/true) == -SIGKILL);
  Tensor x, y;
  MakeData(64, 6, &x, &y);
  const Tensor xs[] = {Rows(x, 0, 32), Rows(x, 32, 32)};
  const Tensor ys[] = {Rows(y, 0, 32), Rows(y, 32, 32)};
  for (int step = 0; step < 3; ++step) {
    std::vector<std::future<Status>> ts;
    for (int t = 0; t < 2; ++t)
      ts.push_back(std::async(std::launch::async, [&, t] {
        std::vector<Tensor> out;
        Status s;
        for (int i = 0; i < 8; ++i) {
          s = sessions[t]->Run(Bounded(), {{"x", xs[t]}, {"y", ys[t]}}, {}, {models[t]->train.name()}, &out);
          if (!errors::IsUnavailable(s) && !errors::IsAborted(s)) break;
          (void)sessions[t]->Run(Bounded(), {}, {}, {models[t]->broadcast_all.name()}, &out);
        }
        return s;
      }));
    for (auto& f : ts) {
      const Status s = f.get();
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
  }
  std::vector<Tensor> w0, w1;
  REQUIRE(sessions[0]->Run(Bounded(), {}, {m0.w.value.name()}, {}, &w0).ok());
  REQUIRE(sessions[1]->Run(Bounded(), {}, {m1.w.value.name()}, {}, &w1).ok());
  CHECK(test::Values<float>(w0[0]) == test::Values<float>(w1[0]));  // the survivors agree
}

TEST_CASE("supervisor, elastic: a step the unsynced group aborts is run again after a resync in the same session; a "
          "resync that brings the last step ends training with OutOfRange") {
  // One worker task, its own cluster: an elastic group of one, which must
  // sync before it all-reduces (as after any change of members).
  ServerOptions so;
  REQUIRE(ClusterSpec::Parse(R"({"worker": ["127.0.0.1:1"]})", &so.cluster).ok());
  so.has_cluster = true;
  so.task = TaskId{"worker", 0};
  so.port = 0;
  so.num_threads = 2;
  std::unique_ptr<Server> server;
  REQUIRE(Server::Create(so, &server).ok());
  for (const int64_t group : {int64_t{11}, int64_t{12}}) {
    DYNAMIC_SECTION("group " << group) {
      Scope root = Scope::NewRootScope();
      Variable step = GetOrCreateGlobalStep(root);
      ops::CollectiveOptions co;
      co.group_size = 0;
      co.group_key = group;
      co.instance_key = 1;
      co.final_op = "Div";
      Output mean = ops::CollectiveReduce(root.WithOpName("mean"), ops::Const(root, 1.f), co);
      Operation train = ops::AssignAdd(root.WithOpName("train").WithControlDependencies({mean.op()}), step.ref,
                                       int64_t{1}).op();
      AllReduceOptions ar;
      ar.group_size = 0;
      ar.group_key = group;
      ar.first_instance_key = 1000;
      Operation sync = BroadcastVariables(root, GlobalVariables(root), true, ar);
      ops::Assign(root.WithOpName("to_last"), step.ref, int64_t{5});
      SaverOptions none;
      TrainingSupervisor::Graph g = TrainingSupervisor::Prepare(root, none, /*with_checkpoints=*/false, train);
      REQUIRE(root.ok());
      SupervisorOptions o;
      o.session.target = server->target();
      o.run.timeout_in_ms = 20000;
      o.max_recoveries = 2;
      o.backoff = std::chrono::milliseconds(10);
      const bool ends = group == 12;
      o.last_step = ends ? 5 : 0;
      std::vector<Status> whys;
      o.elastic_resync = [&](Session* s, const Status& why) {
        whys.push_back(why);
        std::vector<Tensor> out;
        // group 12: the sync brings the others' global step, the last one.
        return s->Run(o.run, {}, {}, ends ? std::vector<std::string>{sync.name(), "to_last"}
                                          : std::vector<std::string>{sync.name()},
                      &out);
      };
      TrainingSupervisor sup(ToDef(root), g, o);
      REQUIRE(sup.Start().ok());
      std::vector<Tensor> out;
      const Status s = sup.Run({}, {}, {train.name()}, &out);
      REQUIRE(whys.size() == 1);
      CHECK(whys[0].code() == Code::kAborted);
      CHECK_THAT(whys[0].message(), Catch::Contains("has not synced since it last formed"));
      CHECK(sup.resyncs() == 1);
      CHECK(sup.recoveries() == 0);  // the same session, no checkpoint
      if (ends) {
        CHECK(s.code() == Code::kOutOfRange);
        CHECK(sup.global_step() == 5);  // not run again: no one else would meet its all-reduce
      } else {
        INFO(s.ToString());
        CHECK(s.ok());
        CHECK(sup.global_step() == 1);
        REQUIRE(sup.Run({}, {}, {train.name()}, &out).ok());  // synced: no resync now
        CHECK(sup.resyncs() == 1);
        CHECK(sup.global_step() == 2);
      }
    }
  }
}
