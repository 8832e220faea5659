// Parameter-server placement (client/train/replica_device_setter.hpp): the
// devices nodes request. Variables go to ps tasks (by bytes, or in turn),
// their updates with them, everything else to the worker; a node's own device
// is merged in; with no ps tasks nothing changes.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/replica_device_setter.hpp"
#include "actorflow/client/train/variables.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

// Requested device of every node, by name.
std::map<std::string, std::string> Devices(const Scope& root) {
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  std::map<std::string, std::string> d;
  for (const auto& n : def.node()) d[n.name()] = n.device();
  return d;
}

// An MLP's variables (784-256-10) and one SGD step, built in `s`.
void BuildMlp(const Scope& s) {
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  auto y = ops::Placeholder(s.WithOpName("y"), DT_INT32);
  Variable w1 = NewVariable(s, "w1", {784, 256}, DT_FLOAT, init::GlorotUniform(1));
  Variable b1 = NewVariable(s, "b1", {256}, DT_FLOAT, init::Zeros());
  Variable w2 = NewVariable(s, "w2", {256, 10}, DT_FLOAT, init::GlorotUniform(2));
  Variable b2 = NewVariable(s, "b2", {10}, DT_FLOAT, init::Zeros());
  auto h = ops::Relu(s.WithOpName("h"), ops::BiasAdd(s, ops::MatMul(s, x, w1.value), b1.value));
  auto logits = ops::BiasAdd(s.WithOpName("logits"), ops::MatMul(s, h, w2.value), b2.value);
  auto loss = ops::Mean(s.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, y).loss, {0});
  GradientDescentOptimizer sgd(0.1);
  sgd.Minimize(s.WithOpName("train"), loss);
}

}  // namespace

TEST_CASE("replica device setter: variables to ps tasks by bytes, updates with them, the rest to the worker") {
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 2;
  o.worker_device = "/job:worker/task:1";
  BuildMlp(ReplicaDeviceSetter(root, o));
  auto d = Devices(root);
  // By bytes: w1 (784 KiB) fills task 0; b1, w2 and b2 together stay lighter, on task 1.
  CHECK(d["w1"] == "/job:ps/task:0");
  CHECK(d["b1"] == "/job:ps/task:1");
  CHECK(d["w2"] == "/job:ps/task:1");
  CHECK(d["b2"] == "/job:ps/task:1");
  // Initial assignments and the optimizer's updates take the variable by reference: with it.
  CHECK(d["w1/Assign"] == "/job:ps/task:0");
  CHECK(d["b2/Assign"] == "/job:ps/task:1");
  int updates = 0;
  for (const auto& [name, dev] : d)
    if (name.find("ApplyGradientDescent") != std::string::npos) {
      ++updates;
      CHECK(dev.rfind("/job:ps/task:", 0) == 0);
    }
  CHECK(updates == 4);
  // Computation, feeds and the initial values' random ops on the worker.
  for (const char* n : {"x", "y", "h", "logits", "loss"}) CHECK(d[n] == "/job:worker/task:1");
}

TEST_CASE("replica device setter: round robin, a node's own device merged in, merge off, the cluster's ps count") {
  SECTION("round robin takes ps tasks in turn") {
    Scope root = Scope::NewRootScope();
    ReplicaDeviceSetterOptions o;
    o.ps_tasks = 2;
    o.strategy = ReplicaDeviceSetterOptions::Strategy::kRoundRobin;
    BuildMlp(ReplicaDeviceSetter(root, o));
    auto d = Devices(root);
    CHECK(d["w1"] == "/job:ps/task:0");
    CHECK(d["b1"] == "/job:ps/task:1");
    CHECK(d["w2"] == "/job:ps/task:0");
    CHECK(d["b2"] == "/job:ps/task:1");
    CHECK(d["h"] == "/job:worker");
  }
  SECTION("a node's own components win over the chosen device") {
    Scope root = Scope::NewRootScope();
    ReplicaDeviceSetterOptions o;
    o.ps_tasks = 3;
    Scope s = ReplicaDeviceSetter(root, o).WithDevice("/device:CPU:0");
    Variable v = NewVariable(s, "v", {4}, DT_FLOAT, init::Zeros());
    Variable pinned = NewVariable(s.WithDevice("/job:ps/task:2"), "pinned", {4}, DT_FLOAT, init::Zeros());
    ops::Neg(s.WithOpName("neg"), v.value);
    auto d = Devices(root);
    CHECK(d["v"] == "/job:ps/task:0/device:CPU:0");
    CHECK(d["pinned"] == "/job:ps/task:2");
    CHECK(d["pinned/Assign"] == "/job:ps/task:2");
    CHECK(d["neg"] == "/job:worker/device:CPU:0");
  }
  SECTION("merge_devices off: a node that names a device keeps exactly it") {
    Scope root = Scope::NewRootScope();
    ReplicaDeviceSetterOptions o;
    o.ps_tasks = 1;
    o.merge_devices = false;
    Scope s = ReplicaDeviceSetter(root, o);
    ops::Neg(s.WithDevice("/job:worker/task:3").WithOpName("mine"), 1.f);
    ops::Neg(s.WithOpName("theirs"), 1.f);
    auto d = Devices(root);
    CHECK(d["mine"] == "/job:worker/task:3");
    CHECK(d["theirs"] == "/job:worker");
  }
  SECTION("the number of ps tasks comes from the cluster; with none, nothing changes") {
    ClusterSpec with_ps, without_ps;
    REQUIRE(ClusterSpec::Parse(R"({"ps": ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], "worker": ["127.0.0.1:4"]})",
                               &with_ps)
                .ok());
    REQUIRE(ClusterSpec::Parse(R"({"worker": ["127.0.0.1:4"]})", &without_ps).ok());
    Scope a = Scope::NewRootScope(), b = Scope::NewRootScope();
    ReplicaDeviceSetterOptions o;
    o.strategy = ReplicaDeviceSetterOptions::Strategy::kRoundRobin;
    o.cluster = &with_ps;
    Scope sa = ReplicaDeviceSetter(a, o);
    for (int i = 0; i < 4; ++i) NewVariable(sa, "v" + std::to_string(i), {1}, DT_FLOAT, init::Zeros());
    auto da = Devices(a);
    CHECK(da["v2"] == "/job:ps/task:2");
    CHECK(da["v3"] == "/job:ps/task:0");
    o.cluster = &without_ps;
    Scope sb = ReplicaDeviceSetter(b, o);
    NewVariable(sb, "v", {1}, DT_FLOAT, init::Zeros());
    CHECK(Devices(b)["v"].empty());
  }
  SECTION("an unparsable ps device is an error in the scope") {
    Scope root = Scope::NewRootScope();
    ReplicaDeviceSetterOptions o;
    o.ps_tasks = 1;
    o.ps_device = "/job:";
    ReplicaDeviceSetter(root, o);
    CHECK(root.status().code() == Code::kInvalidArgument);
  }
}
