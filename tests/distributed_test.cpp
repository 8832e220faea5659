// The actor topology across processes: graphs whose partitions run in real
// `actorflow server` processes (tests/local_cluster.hpp) and in this one (a
// Server of its own, the client's task), exchanging tensors through the
// tensor transport. Loops, conds (dead tensors), strings, large tensors,
// variables and queues on other tasks give exactly the single-process
// results; a killed, hung or restarted task fails the steps that need it, in
// bounded time, with the error naming it. All on 127.0.0.1.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/reader_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "control_flow_util.hpp"
#include "cluster_fixture.hpp"
#include "local_cluster.hpp"
#include "actorflow/master/server.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using test::LocalCluster;
using test::ToDef;
using test::WaitUntil;

namespace {

constexpr char kWorker[] = "/job:worker/task:0";
constexpr char kPs0[] = "/job:ps/task:0";
constexpr char kPs1[] = "/job:ps/task:1";

// Two ps processes and this process as worker 0 (its own Server).
struct Cluster : test::ClusterFixture {
  Cluster() : ClusterFixture({{"ps", 0}, {"ps", 1}}) {}
};

std::vector<Tensor> RunOk(Session* session, const std::vector<Output>& fetches,
                          const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                          const std::vector<std::string>& targets = {}) {
  std::vector<std::string> names;
  for (const auto& f : fetches) names.push_back(f.name());
  RunOptions ro;
  ro.timeout_in_ms = 30000;  // a lost tensor fails the test here, never hangs it
  std::vector<Tensor> out;
  Status s = session->Run(ro, feeds, names, targets, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

// Waits (at most 10 s) until the queue whose QueueSize op is `size_op`
// holds `want` elements, asking with further calls of `session` (each
// bounded). A step waiting in a queue in another process is seen so: a
// dequeue-many of two from a queue holding one takes it and waits there for
// the next, and the queue is then empty.
bool QueueSizeBecomes(Session* session, const std::string& size_op, int32_t want) {
  return WaitUntil(
      [&] {
        RunOptions ro;
        ro.timeout_in_ms = 5000;
        std::vector<Tensor> out;
        return session->Run(ro, {}, {size_op + ":0"}, {}, &out).ok() && out[0].scalar<int32_t>() == want;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(10));
}

// A queue on `device` holding one element (after "fill" runs) that a step
// waits in: "deq" takes two; "size" shows the step waiting (QueueSizeBecomes 0).
Output OneShortQueue(const Scope& root, const char* device) {
  ops::QueueOptions qo;
  qo.shared_name = "one_short";
  qo.shapes = {PartialTensorShape::Scalar()};
  auto q = ops::FIFOQueue(root.WithOpName("q").WithDevice(device), {DT_FLOAT}, qo);
  ops::QueueEnqueue(root.WithOpName("fill"), q, {ops::Const(root, 5.f)});
  ops::QueueSize(root.WithOpName("size"), q);
  return ops::QueueDequeueMany(root.WithOpName("deq"), q, ops::Const(root, 2), {DT_FLOAT})[0];
}

int64_t MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("distributed: a loop whose body runs in another process, for any parallel_iterations", "[distributed]") {
  Cluster c;
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope().WithDevice(kWorker);
    OutputList out = test::DoublingLoop(root, ops::Placeholder(root.WithOpName("n"), DT_INT32), kPs0, parallel);
    Session session(c.Options());
    REQUIRE(session.Create(ToDef(root)).ok());
    for (int iterations : {0, 1, 10}) {
      auto v = RunOk(&session, out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
      INFO("parallel " << parallel << ", " << iterations << " iterations");
      CHECK(v[0].scalar<int32_t>() == iterations);
      CHECK(v[1].scalar<float>() == static_cast<float>(1 << iterations));
    }
    const auto placement = session.LastPlacement();
    bool on_ps = false;
    for (const auto& [node, device] : placement) on_ps = on_ps || device.rfind("/job:ps/replica:0/task:0/", 0) == 0;
    CHECK(on_ps);
  }
}

TEST_CASE("distributed: a nested loop over three processes and a cond whose branch is elsewhere, either way",
          "[distributed]") {
  Cluster c;
  {
    Scope root = Scope::NewRootScope().WithDevice(kWorker);
    OutputList out = test::NestedLoopWithCond(root, ops::Placeholder(root.WithOpName("n"), DT_INT32), kPs1);
    Session session(c.Options());
    REQUIRE(session.Create(ToDef(root)).ok());
    for (int iterations : {0, 3, 6}) {
      auto v = RunOk(&session, out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
      CHECK(v[1].scalar<float>() == test::NestedLoopWithCondValue(iterations));
    }
  }
  for (bool taken : {false, true}) {
    Scope root = Scope::NewRootScope().WithDevice(kWorker);
    OutputList out = test::DoubleOrNegate(root, kPs0, kPs1);  // the untaken branch's tensors are dead in its task
    Session session(c.Options());
    REQUIRE(session.Create(ToDef(root)).ok());
    auto v = RunOk(&session, out, {{"pred", test::Bool(taken)}, {"x", Tensor::Scalar<float>(3.f)}});
    CHECK(v[0].scalar<float>() == (taken ? 6.f : -3.f));
  }
}

TEST_CASE("distributed: strings and a tensor larger than a transport chunk cross bit for bit", "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope().WithDevice(kWorker);
  auto s = ops::Placeholder(root.WithOpName("s"), DT_STRING);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto s_there = ops::Identity(root.WithOpName("s_there").WithDevice(kPs0), s);
  auto x_there = ops::Identity(root.WithOpName("x_there").WithDevice(kPs1), x);
  auto s_back = ops::Identity(root.WithOpName("s_back"), s_there);
  auto x_back = ops::Identity(root.WithOpName("x_back"), x_there);
  Session session(c.Options());
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor strings = test::Strings({"", "a", std::string(100000, 'z'), std::string("nul\0byte", 8)});
  const int64_t n = (int64_t{9} << 20) / 4 + 3;  // 9 MiB and a bit: three chunks
  Tensor big(DT_FLOAT, TensorShape{n});
  for (int64_t i = 0; i < n; ++i) big.data<float>()[i] = static_cast<float>(i) * 0.37f - 5.f;
  auto v = RunOk(&session, {s_back, x_back}, {{"s", strings}, {"x", big}});
  CHECK(test::Values<std::string>(v[0]) == test::Values<std::string>(strings));
  REQUIRE(v[1].NumElements() == n);
  CHECK(std::memcmp(v[1].raw_data(), big.raw_data(), big.TotalBytes()) == 0);
}

TEST_CASE("distributed: a variable on a ps task is initialized, updated from another process and outlives sessions",
          "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope();  // unpinned nodes run on this task (worker 0)
  auto v = ops::Variable(root.WithOpName("v").WithDevice(kPs0), PartialTensorShape(std::vector<int64_t>{2}), DT_FLOAT);
  ops::Assign(root.WithOpName("init"), v, ops::Const(root, {1.f, 2.f}));
  ops::AssignAdd(root.WithOpName("bump"), v, ops::Mul(root, ops::Const(root, {1.f, 1.f}), 0.5f));
  auto read = ops::Identity(root.WithOpName("read"), v);
  {
    Session session(c.Options());
    REQUIRE(session.Create(ToDef(root)).ok());
    RunOk(&session, {}, {}, {"init"});
    RunOk(&session, {}, {}, {"bump"});
    RunOk(&session, {}, {}, {"bump"});
    CHECK(test::Values<float>(RunOk(&session, {read})[0]) == std::vector<float>{2.f, 3.f});
  }
  // A new session (a new client, as it were) sees the ps's variable.
  Session again(c.Options());
  REQUIRE(again.Create(ToDef(root)).ok());
  CHECK(test::Values<float>(RunOk(&again, {read})[0]) == std::vector<float>{2.f, 3.f});
}

TEST_CASE("distributed: a FIFO queue on a ps task filled by one worker process and drained by another",
          "[distributed]") {
  Cluster c;
  // Worker 1 is a process of its own; its master serves a client here (actorflow://).
  auto& w1 = c.processes.Start(
      "worker", 1, {"--cluster", c.processes.ClusterJson({{"worker", {"127.0.0.1:1", "127.0.0.1:2"}}})});
  Scope root = Scope::NewRootScope();
  ops::QueueOptions qo;
  qo.shared_name = "shared_q";
  qo.capacity = 10;
  auto q = ops::FIFOQueue(root.WithOpName("q").WithDevice(kPs0), {DT_FLOAT}, qo);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::QueueEnqueue(root.WithOpName("enq"), q, {x});
  auto deq = ops::QueueDequeue(root.WithOpName("deq"), q, {DT_FLOAT});
  auto doubled = ops::Mul(root.WithOpName("doubled"), deq[0], 2.f);

  Session filler(c.Options());  // its master is in this process (worker 0)
  REQUIRE(filler.Create(ToDef(root)).ok());
  for (float f : {1.f, 2.f, 3.f}) RunOk(&filler, {}, {{"x", Tensor::Scalar<float>(f)}}, {"enq"});
  CHECK(filler.LastPlacement().at("enq").rfind("/job:ps/replica:0/task:0/", 0) == 0);

  SessionOptions remote;
  remote.target = "grpc://127.0.0.1:" + std::to_string(w1.port);  // TensorFlow's scheme works too
  remote.device_find_timeout_ms = 10000;
  Session drainer(remote);
  Status s = drainer.Create(ToDef(root));
  INFO(s.ToString());
  REQUIRE(s.ok());
  for (float f : {1.f, 2.f, 3.f}) CHECK(RunOk(&drainer, {doubled})[0].scalar<float>() == 2.f * f);
  const auto placement = drainer.LastPlacement();
  CHECK(placement.at("deq").rfind("/job:ps/replica:0/task:0/", 0) == 0);
  INFO("doubled on " << placement.at("doubled"));
  CHECK(placement.at("doubled").rfind("/job:worker/replica:0/task:1/", 0) == 0);
  CHECK(drainer.Close().ok());
  CHECK(LocalCluster::Stop(&w1, false) == 0);  // SIGTERM: a clean exit
}

// The session's graph options reach a remote master (MasterCreateSessionRequest):
// kEverywhere fuses two updates placed on a ps task's CPU; the default does not.
// And do_remapping: a MatMul -> BiasAdd -> Relu there becomes a _FusedMatMul or stays.
TEST_CASE("distributed: a remote session takes the client's fusion options", "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope().WithDevice(kPs0);
  auto lr = ops::Const(root.WithOpName("lr"), 0.5f);
  std::vector<Operation> applies, inits;
  for (const char* name : {"fused_remote_a", "fused_remote_b"}) {
    auto v = ops::Variable(root.WithOpName(name), PartialTensorShape(TensorShape{2}), DT_FLOAT);
    inits.push_back(ops::Assign(root, v, ops::Const(root, {1.f, 1.f})).op());
    applies.push_back(ops::ApplyGradientDescent(root, v, lr, ops::Const(root, {1.f, 2.f})).op());
  }
  ops::NoOp(root.WithOpName("init").WithControlDependencies(inits));
  ops::NoOp(root.WithOpName("train").WithControlDependencies(applies));
  auto x = ops::Placeholder(root.WithOpName("x_remote"), DT_FLOAT);
  ops::Relu(root.WithOpName("relu_remote"),
            ops::BiasAdd(root, ops::MatMul(root, x, ops::Const(root, {{1.f, -1.f}, {2.f, 0.f}})), ops::Const(root, {1.f, 0.f})));
  for (FuseUpdates mode : {FuseUpdates::kEverywhere, FuseUpdates::kOnGpus}) {
    const bool remap = mode == FuseUpdates::kOnGpus;  // each option away from its default once
    SessionOptions remote;
    remote.target = "actorflow://127.0.0.1:" + std::to_string(c.processes.task("ps", 0).port);  // ps 0's master
    remote.device_find_timeout_ms = 10000;
    remote.graph_options.fuse_optimizer_updates = mode;
    remote.graph_options.do_remapping = remap;
    Session session(remote);
    REQUIRE(session.Create(ToDef(root)).ok());
    RunOk(&session, {}, {}, {"init"});
    RunOptions ro;
    ro.timeout_in_ms = 15000;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    RunMetadata md;
    std::vector<Tensor> out;
    const Status s = session.Run(ro, {{"x_remote", test::MakeTensor<float>({1.f, 1.f}, TensorShape{1, 2})}}, {"relu_remote"},
                                 {"train"}, &out, &md);
    INFO(s.ToString());
    REQUIRE(s.ok());
    int fused = 0, separate = 0, fused_matmuls = 0;
    for (const NodeExecStats& st : md.step_stats) {
      fused += st.op == "_FusedApplyGradientDescent";
      separate += st.op == "ApplyGradientDescent";
      fused_matmuls += st.op == "_FusedMatMul";
    }
    CHECK(fused == (mode == FuseUpdates::kEverywhere ? 1 : 0));
    CHECK(separate == (mode == FuseUpdates::kEverywhere ? 0 : 2));
    CHECK(fused_matmuls == (remap ? 1 : 0));
    REQUIRE(test::Values<float>(out[0]) == std::vector<float>{4.f, 0.f});  // [3, -1] + [1, 0], then Relu
    CHECK(session.Close().ok());
  }
}

TEST_CASE("distributed: a remote session runs a client's concurrent steps concurrently (a dequeue waits for an enqueue)",
          "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope();
  ops::QueueOptions qo;
  qo.shared_name = "handoff";
  qo.shapes = {PartialTensorShape::Scalar()};
  auto q = ops::FIFOQueue(root.WithOpName("q").WithDevice(kPs0), {DT_FLOAT}, qo);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::QueueEnqueue(root.WithOpName("enq"), q, {x});
  auto deq = ops::QueueDequeueMany(root.WithOpName("deq"), q, ops::Const(root, 2), {DT_FLOAT});
  ops::QueueSize(root.WithOpName("size"), q);
  SessionOptions remote;
  remote.target = "grpc://127.0.0.1:" + std::to_string(c.processes.task("ps", 0).port);  // ps 0's master
  remote.device_find_timeout_ms = 10000;
  Session session(remote);
  REQUIRE(session.Create(ToDef(root)).ok());
  // The dequeue waits in the queue; the enqueue, a second call of the same
  // client, must not wait behind it (served one at a time, the dequeue would
  // only end at its deadline, empty-handed). Each call is bounded. The
  // dequeue takes two elements: the one put first, and the enqueue's.
  RunOk(&session, {}, {{"x", Tensor::Scalar<float>(1.f)}}, {"enq"});
  auto taker = std::async(std::launch::async, [&] {
    RunOptions ro;
    ro.timeout_in_ms = 15000;
    std::vector<Tensor> out;
    Status s = session.Run(ro, {}, {deq[0].name()}, {}, &out);
    return std::make_pair(s, s.ok() ? test::Values<float>(out[0]) : std::vector<float>{});
  });
  {
    INFO("the dequeue did not come to wait in the queue (its size stayed 1)");
    REQUIRE(QueueSizeBecomes(&session, "size", 0));  // the dequeue took the first and waits
  }
  RunOptions ro;
  ro.timeout_in_ms = 15000;
  std::vector<Tensor> none;
  Status put = session.Run(ro, {{"x", Tensor::Scalar<float>(7.f)}}, {}, {"enq"}, &none);
  INFO(put.ToString());
  CHECK(put.ok());
  REQUIRE(taker.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  const auto [s, values] = taker.get();
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(values == std::vector<float>{1.f, 7.f});  // the enqueue's 7 is the one it waited for
  CHECK(session.Close().ok());
}

TEST_CASE("distributed: a reader and its filename queue on a ps task are read from another process, records intact",
          "[distributed]") {
  Cluster c;
  const std::string file = c.processes.dir() + "/lines.txt";
  std::ofstream(file) << "first line\n\nthird, after an empty one\n";
  Scope root = Scope::NewRootScope();
  ops::QueueOptions qo;
  qo.shapes = {PartialTensorShape::Scalar()};
  qo.shared_name = "files";
  Output files = ops::FIFOQueue(root.WithOpName("files").WithDevice(kPs0), {DT_STRING}, qo);
  auto names = ops::Placeholder(root.WithOpName("names"), DT_STRING);
  ops::QueueEnqueueMany(root.WithOpName("enq"), files, {names});
  ops::QueueClose(root.WithOpName("close"), files);
  ops::TextLineReaderOptions ro;
  ro.shared_name = "lines";
  Output reader = ops::TextLineReader(root.WithOpName("reader").WithDevice(kPs0), ro);
  auto kv = ops::ReaderRead(root.WithOpName("read"), reader, files);
  auto key = ops::Identity(root.WithOpName("key"), kv.key);
  auto value = ops::Identity(root.WithOpName("value"), kv.value);
  Session session(c.Options());  // its master is this process (worker 0)
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOk(&session, {}, {{"names", test::Strings({file})}}, {"enq"});
  RunOk(&session, {}, {}, {"close"});
  const std::vector<std::string> want = {"first line", "", "third, after an empty one"};
  for (size_t i = 0; i < want.size(); ++i) {
    auto out = RunOk(&session, {key, value});
    CHECK(out[0].scalar<std::string>() == file + ":" + std::to_string(i + 1));
    CHECK(out[1].scalar<std::string>() == want[i]);
  }
  const auto placement = session.LastPlacement();
  CHECK(placement.at("read").rfind("/job:ps/replica:0/task:0/", 0) == 0);  // the reader's consumer follows it
  CHECK(placement.at("value").rfind("/job:worker/replica:0/task:0/", 0) == 0);
  // The file is read through: the next read finds the closed queue empty.
  std::vector<Tensor> out;
  RunOptions bounded;
  bounded.timeout_in_ms = 30000;
  const Status end = session.Run(bounded, {}, {"value:0"}, {}, &out);
  INFO(end.ToString());
  CHECK(errors::IsOutOfRange(end));
}

TEST_CASE("distributed: a killed task fails the steps that need it with Unavailable naming it, at once",
          "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  // The step waits in ps 1 (a dequeue-many of two from a queue holding one)
  // while ps 1 is killed.
  ops::Add(root.WithOpName("y"), ops::Mul(root.WithDevice(kPs0), x, 2.f), OneShortQueue(root, kPs1));
  auto local = ops::Mul(root.WithOpName("local").WithDevice(kPs0), x, 3.f);
  Session session(c.Options());
  REQUIRE(session.Create(ToDef(root)).ok());
  CHECK(RunOk(&session, {local}, {{"x", Tensor::Scalar<float>(2.f)}})[0].scalar<float>() == 6.f);
  RunOk(&session, {}, {}, {"fill"});
  auto step = std::async(std::launch::async, [&] {
    std::vector<Tensor> out;
    RunOptions ro;
    ro.timeout_in_ms = 60000;
    return session.Run(ro, {{"x", Tensor::Scalar<float>(1.f)}}, {"y:0"}, {}, &out);
  });
  {
    INFO("the step did not come to wait in ps 1's queue (its size stayed 1)");
    REQUIRE(QueueSizeBecomes(&session, "size", 0));  // the step is waiting in ps 1
  }
  const auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(c.processes.pid_of("ps", 1), SIGKILL) == 0);
  REQUIRE(step.wait_for(std::chrono::seconds(20)) == std::future_status::ready);  // bounded: never a hang
  const int64_t took_ms = MsSince(killed_at);
  const Status s = step.get();
  INFO(s.ToString() << " after " << took_ms << " ms");
  CHECK(errors::IsUnavailable(s));
  CHECK(s.message().find("/job:ps/replica:0/task:1") != std::string::npos);
  CHECK(took_ms <= test::kTestPeerFailureBoundMs);  // at once: within the peer timeout and a margin
  std::printf("distributed_test: a killed task failed the step after %lld ms\n", static_cast<long long>(took_ms));
  // Steps that do not need the dead task still run.
  Scope other = Scope::NewRootScope().WithDevice(kWorker);
  auto z = ops::Mul(other.WithOpName("z").WithDevice(kPs0), ops::Const(other, 4.f), 2.f);
  SessionOptions so = c.Options();
  so.device_filters = {"/job:ps/task:0"};
  Session survivor(so);
  REQUIRE(survivor.Create(ToDef(other)).ok());
  CHECK(RunOk(&survivor, {z})[0].scalar<float>() == 8.f);
}

TEST_CASE("distributed: a hung task (SIGSTOP) fails the steps that need it within about a peer timeout, never a hang",
          "[distributed]") {
  Cluster c;  // heartbeats every 100 ms; a peer silent for 1 s is down (4x in sanitized builds)
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto there = ops::Mul(root.WithOpName("there").WithDevice(kPs1), x, 2.f);
  auto y = ops::Add(root.WithOpName("y"), there, 1.f);
  Session session(c.Options());
  REQUIRE(session.Create(ToDef(root)).ok());
  CHECK(RunOk(&session, {y}, {{"x", Tensor::Scalar<float>(1.f)}})[0].scalar<float>() == 3.f);
  LocalCluster::Signal(c.processes.task("ps", 1), SIGSTOP);
  const auto stopped_at = std::chrono::steady_clock::now();  // for the message
  auto step = std::async(std::launch::async, [&] {
    std::vector<Tensor> out;
    RunOptions ro;
    ro.timeout_in_ms = 120000;  // far beyond the peer timeout: the failure must come from detection
    return session.Run(ro, {{"x", Tensor::Scalar<float>(1.f)}}, {"y:0"}, {}, &out);
  });
  const bool ended =
      step.wait_for(std::chrono::milliseconds(test::kTestHungPeerBoundMs + 10000)) == std::future_status::ready;
  const int64_t took_ms = MsSince(stopped_at);
  LocalCluster::Signal(c.processes.task("ps", 1), SIGCONT);
  REQUIRE(ended);
  const Status s = step.get();
  INFO(s.ToString() << " after " << took_ms << " ms");
  CHECK(errors::IsUnavailable(s));
  CHECK(took_ms <= test::kTestHungPeerBoundMs);
  std::printf("distributed_test: a hung task failed the step after %lld ms (peer timeout %d ms)\n",
              static_cast<long long>(took_ms), test::kTestPeerTimeoutMs);  // the README's figure
  CHECK(s.message().find("/job:ps/replica:0/task:1") != std::string::npos);
}

TEST_CASE("distributed: a hung task is failed at the peer timeout and counted again when it answers, every time "
          "(actors/peer_watcher.hpp)",
          "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope();
  auto y = ops::Add(root.WithOpName("y"), ops::Mul(root.WithOpName("there").WithDevice(kPs1), 2.f, 3.f), 1.f);
  {
    Session session(c.Options());  // its view of the cluster puts every task under the process's watch
    REQUIRE(session.Create(ToDef(root)).ok());
    CHECK(RunOk(&session, {y})[0].scalar<float>() == 7.f);
  }
  Membership* membership = c.server->runtime()->membership();
  const std::string ps1 = "/job:ps/replica:0/task:1";
  const uint64_t incarnation = membership->Find(ps1)->incarnation;
  auto is = [&](TaskRecord::Liveness want) {
    return WaitUntil([&] { return membership->Find(ps1)->liveness == want; },
                     std::chrono::milliseconds(test::kTestHungPeerBoundMs + 15000), std::chrono::milliseconds(10));
  };
  // Twice: before the watcher, a session's watch ended at the first failure
  // (a task back from it was never failed again), and nothing counted a
  // task alive again but a new session of its own.
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    LocalCluster::Signal(c.processes.task("ps", 1), SIGSTOP);
    const bool failed = is(TaskRecord::Liveness::kFailed);
    LocalCluster::Signal(c.processes.task("ps", 1), SIGCONT);
    REQUIRE(failed);
    CHECK(is(TaskRecord::Liveness::kAlive));  // the probe: it answers again, at the same incarnation
    CHECK(membership->Find(ps1)->incarnation == incarnation);
  }
  // Another writer's failure (the transport's: a connection to it failed)
  // of a task that still answers is undone the same way.
  membership->MarkFailed(ps1, incarnation, errors::Unavailable("made up by the test"));
  CHECK(is(TaskRecord::Liveness::kAlive));
  Session again(c.Options());
  REQUIRE(again.Create(ToDef(root)).ok());
  CHECK(RunOk(&again, {y})[0].scalar<float>() == 7.f);
}

TEST_CASE("distributed: a task restarted on its address is told by its new incarnation; a new session works with it",
          "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice(kPs0), PartialTensorShape(std::vector<int64_t>{}), DT_FLOAT);
  ops::Assign(root.WithOpName("init"), v, 5.f);
  auto read = ops::Add(root.WithOpName("read"), v, 0.f);
  Session old_session(c.Options());
  REQUIRE(old_session.Create(ToDef(root)).ok());
  RunOk(&old_session, {}, {}, {"init"});
  CHECK(RunOk(&old_session, {read})[0].scalar<float>() == 5.f);

  LocalCluster::Task& ps0 = c.processes.task("ps", 0);
  CHECK(LocalCluster::Stop(&ps0, /*hard=*/true) == -SIGKILL);
  c.processes.Restart(&ps0);

  std::vector<Tensor> out;
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  const Status s = old_session.Run(ro, {}, {"read:0"}, {}, &out);
  INFO(s.ToString());
  CHECK(errors::IsAborted(s));
  CHECK(s.message().find("/job:ps/replica:0/task:0 restarted") != std::string::npos);

  Session fresh(c.Options());
  REQUIRE(fresh.Create(ToDef(root)).ok());
  RunOk(&fresh, {}, {}, {"init"});  // the restarted task's variables are new: initialized again
  CHECK(RunOk(&fresh, {read})[0].scalar<float>() == 5.f);
}

TEST_CASE("distributed: float32 sent to another task as 16 bits, per session or per edge; dtype and shape kept",
          "[distributed]") {
  Cluster c;
  Tensor x = test::MakeTensor<float>({1.f, 3.14159265f, -1e-20f, 65504.f, 0.1f, -7.7f}, TensorShape{2, 3});
  auto truncated = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits &= 0xffff0000u;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  for (int mode = 0; mode < 3; ++mode) {  // off, per session, per edge
    Scope root = Scope::NewRootScope();
    auto in = ops::Placeholder(root.WithOpName("in"), DT_FLOAT);
    auto there = ops::Identity(root.WithOpName("there").WithDevice(kPs0), in);  // worker -> ps: the same rule
    auto ints = ops::Cast(root.WithOpName("ints").WithDevice(kPs0), there, DT_INT32);
    ops::Identity(root.WithOpName("back"), there);
    ops::Identity(root.WithOpName("ints_back"), ints);
    proto::GraphDef def = ToDef(root);
    SessionOptions so = c.Options();
    if (mode == 1) so.partitioning.truncate_float32_on_wire = true;
    if (mode == 2)
      for (auto& n : *def.mutable_node())
        if (n.name() == "there") (*n.mutable_attr())["_wire_compression"].set_s("truncate16");
    Session session(so);
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out;
    RunOptions ro;
    ro.timeout_in_ms = 30000;
    REQUIRE(session.Run(ro, {{"in", x}}, {"back:0", "ints_back:0"}, {}, &out).ok());
    INFO("mode " << mode);
    REQUIRE(out[0].dtype() == DT_FLOAT);
    CHECK(out[0].shape() == x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      // Per session both hops truncate (once changes nothing more); per edge, only there -> back does.
      const float expect = mode == 0 ? x.data<float>()[i] : truncated(x.data<float>()[i]);
      CHECK(out[0].data<float>()[i] == expect);
    }
    CHECK(out[1].dtype() == DT_INT32);  // only float32 is compressed
  }
}

TEST_CASE("distributed: when a master dies, its workers drop its graphs and cancel their steps", "[distributed]") {
  LocalCluster cluster;
  auto& ps = cluster.Start("ps", 0);
  // The master is in worker 1, a process of its own, serving a client here.
  auto& w1 = cluster.Start("worker", 1, {"--cluster", cluster.ClusterJson({{"worker", {"127.0.0.1:1", "127.0.0.1:2"}}})});
  (void)ps;
  Scope root = Scope::NewRootScope();
  ops::Mul(root.WithOpName("y"), OneShortQueue(root, kPs0), 2.f);
  SessionOptions so;
  so.target = "actorflow://127.0.0.1:" + std::to_string(w1.port);
  so.device_find_timeout_ms = 10000;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOk(&session, {}, {}, {"fill"});
  auto step = std::async(std::launch::async, [&] {
    std::vector<Tensor> out;
    RunOptions ro;
    ro.timeout_in_ms = 60000;
    return session.Run(ro, {}, {"y:0"}, {}, &out);  // waits in ps 0's dequeue
  });
  {
    INFO("the step did not come to wait in ps 0's queue (its size stayed 1)");
    REQUIRE(QueueSizeBecomes(&session, "size", 0));
  }
  CHECK(LocalCluster::Stop(&w1, /*hard=*/true) == -SIGKILL);  // the master dies mid-step
  REQUIRE(step.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  const Status s = step.get();
  INFO(s.ToString());
  CHECK(errors::IsUnavailable(s));
  // Ps 0 saw its worker session's master go and dropped the session's graphs.
  const std::string log_path = cluster.dir() + "/ps_0.log";
  std::string text;
  WaitUntil(
      [&] {
        std::ifstream log(log_path);
        text.assign((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        return text.find("its graphs are dropped") != std::string::npos;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(20));
  INFO(text);
  CHECK(text.find("went down") != std::string::npos);
  CHECK(text.find("its graphs are dropped") != std::string::npos);
}

TEST_CASE("distributed: a Server destroyed after its sessions are closed, the Session objects still alive, ends",
          "[distributed]") {
  Cluster c;
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Add(root.WithOpName("y"), ops::Mul(root.WithDevice(kPs0), x, 2.f), 1.f);
  Session first(c.Options()), second(c.Options());
  for (Session* s : {&first, &second}) {
    REQUIRE(s->Create(ToDef(root)).ok());
    CHECK(RunOk(s, {y}, {{"x", Tensor::Scalar<float>(1.f)}})[0].scalar<float>() == 3.f);
    REQUIRE(s->Close().ok());
  }
  // Bounded: a Server whose actor system waits for an actor of a closed
  // session never returns; a watchdog then ends the process rather than let
  // the test hang. (On this thread: CAF 0.17 pins an actor system's logger to
  // the threads that spawned in it, so ~actor_system must run on one of them.)
  std::promise<void> ended;
  std::thread watchdog([done = ended.get_future(), &c] {
    if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      std::fprintf(stderr, "FAILED: ~Server did not return within 30 s after its sessions were closed\n");
      c.processes.KillAllNow();  // _Exit runs no destructors: end the servers this test started
      std::_Exit(1);
    }
  });
  c.server.reset();
  ended.set_value();
  watchdog.join();
}

TEST_CASE("distributed: a task bound to every interface knows its host from the cluster (collectives group by host)",
          "[distributed]") {
  ServerOptions o;
  REQUIRE(ClusterSpec::Parse(R"({"worker": ["127.0.0.3:2222"]})", &o.cluster).ok());
  o.has_cluster = true;
  o.task = {"worker", 0};
  o.bind = "0.0.0.0";
  o.insecure = true;
  o.port = 0;  // any free port: what matters is where the cluster says peers reach it
  std::unique_ptr<Server> server;
  REQUIRE(Server::Create(o, &server).ok());
  auto self = server->runtime()->membership()->Find("/job:worker/replica:0/task:0");
  REQUIRE(self);
  CHECK(self->host == "127.0.0.3");
  CHECK(self->port == server->transport_port());
}
