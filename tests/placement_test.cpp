// Placement (graph/placer.hpp), rule by rule: requested devices, full and
// partial; devices that do not exist, with and without soft placement;
// colocation by `_class` and by ref edges; kernel feasibility; and the
// cost-model, round-robin and single strategies. Most cases call PlaceGraph
// directly on a runtime's DeviceManager; the last ones go through a Session.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Cpus;
using test::kCpu0;
using test::kCpu1;
using test::kCpu2;
using test::MakeTensor;
using test::ToDef;

namespace {

// An op with no kernel at all: placing it must fail, naming it.
AF_REGISTER_OP("TestNoKernel").Input("x: float").Output("y: float");
AF_REGISTER_NO_GRADIENT("TestNoKernel");

// Places `def` on the runtime's devices: node name -> assigned device.
Status Place(const Runtime& rt, const proto::GraphDef& def, const PlacerOptions& options,
             std::map<std::string, std::string>* placement) {
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(def, &g));
  AF_RETURN_IF_ERROR(PlaceGraph(&g, rt.device_manager(), options));
  placement->clear();
  for (Node* n : g.nodes()) {
    REQUIRE(n->def().device() == n->assigned_device());  // the NodeDef says it too
    (*placement)[n->name()] = n->assigned_device();
  }
  return Status::OK();
}

std::map<std::string, std::string> PlaceOk(const Runtime& rt, const proto::GraphDef& def,
                                           const PlacerOptions& options = {}) {
  std::map<std::string, std::string> placement;
  Status s = Place(rt, def, options, &placement);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return placement;
}

Status PlaceStatus(const Runtime& rt, const proto::GraphDef& def, const PlacerOptions& options = {}) {
  std::map<std::string, std::string> placement;
  return Place(rt, def, options, &placement);
}

// Adds `_class: ["loc:@<target>"]` to node `name` of `def`.
void ColocateWith(proto::GraphDef* def, const std::string& name, const std::string& target) {
  for (auto& n : *def->mutable_node())
    if (n.name() == name) {
      (*n.mutable_attr())["_class"] = AttrStringList({"loc:@" + target});
      return;
    }
  FAIL("no node " << name);
}

// A chain of `depth` MatMuls of `n` x `n` starting from placeholder `name`
// (full shape: its size is known statically); returns the MatMuls' names.
std::vector<std::string> MatMulChain(const Scope& root, const std::string& name, int n, int depth) {
  Output m = ops::Placeholder(root.WithOpName(name), DT_FLOAT, PartialTensorShape(TensorShape{n, n}));
  std::vector<std::string> names;
  for (int i = 0; i < depth; ++i) {
    m = ops::MatMul(root.WithOpName(name + "_mm" + std::to_string(i)), m, m);
    names.push_back(m.node()->name());
  }
  return names;
}

}  // namespace

TEST_CASE("placement: a requested full device is honoured") {
  Runtime rt(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice(kCpu2), 1.f);
  auto b = ops::Neg(root.WithOpName("b").WithDevice(kCpu1), a);
  ops::Square(root.WithOpName("c").WithDevice(kCpu0), b);
  auto p = PlaceOk(rt, ToDef(root));
  REQUIRE(p["a"] == kCpu2);
  REQUIRE(p["b"] == kCpu1);
  REQUIRE(p["c"] == kCpu0);
}

TEST_CASE("placement: partial device specs match the device they name") {
  Runtime rt(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), 1.f);
  ops::Neg(root.WithOpName("n1").WithDevice("/device:CPU:1"), x);
  ops::Neg(root.WithOpName("n2").WithDevice("CPU:2"), x);
  ops::Neg(root.WithOpName("n3").WithDevice("/cpu:2"), x);  // legacy lower case
  ops::Neg(root.WithOpName("n4").WithDevice("/job:localhost/task:0/device:CPU:1"), x);
  ops::Neg(root.WithOpName("n5").WithDevice("/replica:0/device:CPU:0"), x);
  ops::Neg(root.WithOpName("any").WithDevice("/device:CPU:*"), x);
  ops::Neg(root.WithOpName("job").WithDevice("/job:localhost"), x);
  auto p = PlaceOk(rt, ToDef(root));
  REQUIRE(p["n1"] == kCpu1);
  REQUIRE(p["n2"] == kCpu2);
  REQUIRE(p["n3"] == kCpu2);
  REQUIRE(p["n4"] == kCpu1);
  REQUIRE(p["n5"] == kCpu0);
  const std::set<std::string> all = {kCpu0, kCpu1, kCpu2};
  REQUIRE(all.count(p["any"]) == 1);
  REQUIRE(all.count(p["job"]) == 1);
}

TEST_CASE("placement: a request no device matches is InvalidArgument naming node, spec and devices") {
  Runtime rt(Cpus(2));
  for (const std::string spec : {"/device:CPU:7", "/device:GPU:0", "/job:ps", "/task:3/device:CPU:0"}) {
    INFO(spec);
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithOpName("x"), 1.f);
    ops::Neg(root.WithOpName("lost").WithDevice(spec), x);
    const auto def = ToDef(root);
    Status s = PlaceStatus(rt, def);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'lost'") && Catch::Contains(spec) && Catch::Contains(kCpu0) &&
                                  Catch::Contains(kCpu1));
    // allow_soft_placement: placed as if nothing were requested.
    PlacerOptions soft;
    soft.allow_soft_placement = true;
    auto p = PlaceOk(rt, def, soft);
    REQUIRE((p["lost"] == kCpu0 || p["lost"] == kCpu1));
  }
  // A spec that does not parse is an error even with soft placement.
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("bad").WithDevice("/device:CPU:x"), 1.f);
  PlacerOptions soft;
  soft.allow_soft_placement = true;
  Status s = PlaceStatus(rt, ToDef(root), soft);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'bad'") && Catch::Contains("CPU:x"));
}

TEST_CASE("placement: _class loc:@ colocates a node with another") {
  Runtime rt(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice("CPU:2"), 1.f);
  auto x = ops::Const(root.WithOpName("x"), 2.f);
  ops::Neg(root.WithOpName("follower"), x);  // requests nothing
  ops::Square(root.WithOpName("chained"), x);  // colocated with the follower, hence with a
  ops::Neg(root.WithOpName("user"), a);
  auto def = ToDef(root);
  ColocateWith(&def, "follower", "a");
  ColocateWith(&def, "chained", "follower");
  for (auto strategy : {PlacementStrategy::kCostModel, PlacementStrategy::kRoundRobin, PlacementStrategy::kSingle}) {
    PlacerOptions o;
    o.strategy = strategy;
    auto p = PlaceOk(rt, def, o);
    REQUIRE(p["a"] == kCpu2);
    REQUIRE(p["follower"] == kCpu2);
    REQUIRE(p["chained"] == kCpu2);
  }
  // A compatible request inside the group narrows it; a conflicting one is an error naming both nodes.
  auto compatible = def;
  for (auto& n : *compatible.mutable_node())
    if (n.name() == "chained") n.set_device("/job:localhost");
  REQUIRE(PlaceOk(rt, compatible)["chained"] == kCpu2);
  auto conflict = def;
  for (auto& n : *conflict.mutable_node())
    if (n.name() == "chained") n.set_device("/device:CPU:0");
  Status s = PlaceStatus(rt, conflict);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'chained'") && Catch::Contains("'a'") && Catch::Contains("CPU:0") &&
                                Catch::Contains("CPU:2"));
}

TEST_CASE("placement: nodes taking a variable by reference land with the variable") {
  Runtime rt(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto v =
      ops::Variable(root.WithOpName("v").WithDevice("/device:CPU:1"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto read = ops::Identity(root.WithOpName("v/read"), v);
  ops::Assign(root.WithOpName("v/Assign"), v, ops::Const(root, {1.f, 2.f}));
  ops::ApplyGradientDescent(root.WithOpName("v/update"), v, 0.5f, ops::Const(root, {3.f, 4.f}));
  ops::Neg(root.WithOpName("consumer").WithDevice("/device:CPU:2"), read);  // by value: free to be elsewhere
  // Takes the variable itself by value (a ref edge into a value input): free too.
  ops::Square(root.WithOpName("direct").WithDevice("/device:CPU:0"), v);
  const auto def = ToDef(root);
  for (auto strategy : {PlacementStrategy::kCostModel, PlacementStrategy::kRoundRobin, PlacementStrategy::kSingle}) {
    PlacerOptions o;
    o.strategy = strategy;
    auto p = PlaceOk(rt, def, o);
    REQUIRE(p["v"] == kCpu1);
    REQUIRE(p["v/Assign"] == kCpu1);  // ref inputs
    REQUIRE(p["v/update"] == kCpu1);
    REQUIRE(p["consumer"] == kCpu2);
    REQUIRE(p["direct"] == kCpu0);
  }

  SECTION("a ref consumer requesting another device conflicts with the variable's request (as in TensorFlow)") {
    auto conflict = def;
    for (auto& n : *conflict.mutable_node())
      if (n.name() == "v/update") n.set_device("/device:CPU:2");
    Status s = PlaceStatus(rt, conflict);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'v/update'") && Catch::Contains("'v'") && Catch::Contains("CPU:1") &&
                                  Catch::Contains("CPU:2"));
    // With soft placement the group stays together, on the variable's device.
    PlacerOptions soft;
    soft.allow_soft_placement = true;
    auto p = PlaceOk(rt, conflict, soft);
    REQUIRE(p["v"] == kCpu1);
    REQUIRE(p["v/update"] == kCpu1);
    REQUIRE(p["v/Assign"] == kCpu1);
  }
  SECTION("a ref consumer's request moves the whole group when the variable requests nothing") {
    auto moved = def;
    for (auto& n : *moved.mutable_node()) {
      if (n.name() == "v") n.clear_device();
      if (n.name() == "v/Assign") n.set_device("CPU:2");
    }
    auto p = PlaceOk(rt, moved);
    REQUIRE(p["v"] == kCpu2);
    REQUIRE(p["v/update"] == kCpu2);
  }
}

TEST_CASE("placement: a group whose op has no kernel on the requested device type is an error naming the op") {
  Runtime rt(Cpus(2));
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), 1.f);
  root.WithOpName("nokernel").WithDevice("/device:CPU:1").AddOp("TestNoKernel", {{x}});
  ops::Neg(root.WithOpName("friend"), x);
  auto def = ToDef(root);
  Status s = PlaceStatus(rt, def);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'nokernel'") && Catch::Contains("TestNoKernel") &&
                                Catch::Contains("no kernel for CPU"));
  // Soft placement finds no other device with a kernel either.
  PlacerOptions soft;
  soft.allow_soft_placement = true;
  REQUIRE(PlaceStatus(rt, def, soft).code() == Code::kInvalidArgument);
  // A node colocated with it shares the failure, and the message names the op lacking the kernel.
  ColocateWith(&def, "friend", "nokernel");
  for (auto& n : *def.mutable_node())
    if (n.name() == "nokernel") n.clear_device();
  for (auto& n : *def.mutable_node())
    if (n.name() == "friend") n.set_device("CPU:0");
  s = PlaceStatus(rt, def);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'friend'") && Catch::Contains("'nokernel'") &&
                                Catch::Contains("TestNoKernel"));
}

TEST_CASE("placement: the cost model spreads independent expensive branches and keeps a chain together") {
  Runtime rt(Cpus(2));
  Scope root = Scope::NewRootScope();
  auto left = MatMulChain(root, "left", 256, 4);
  auto right = MatMulChain(root, "right", 256, 4);
  auto p = PlaceOk(rt, ToDef(root));
  for (const auto& n : left) REQUIRE(p[n] == p[left[0]]);
  for (const auto& n : right) REQUIRE(p[n] == p[right[0]]);
  REQUIRE(p[left[0]] != p[right[0]]);
  // A free source goes with its consumer: no transfer for the placeholder.
  REQUIRE(p["left"] == p[left[0]]);
  REQUIRE(p["right"] == p[right[0]]);

  // On its own, a dependent chain stays on one device: moving would only add transfers.
  Scope solo = Scope::NewRootScope();
  auto only = MatMulChain(solo, "c", 256, 6);
  auto q = PlaceOk(rt, ToDef(solo));
  for (const auto& n : only) REQUIRE(q[n] == q[only[0]]);
}

TEST_CASE("placement: the cost model counts moving a placed free source to a second consumer elsewhere") {
  Runtime rt(Cpus(2));
  // p (36 MB, fed) feeds two nodes that measurements say cost 1 ms each. The first takes CPU:0 and p goes
  // with it; moving 36 MB to CPU:1 for the second (~7 ms) costs more than waiting for CPU:0 (1 ms).
  Scope root = Scope::NewRootScope();
  auto p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT, PartialTensorShape(TensorShape{3000, 3000}));
  ops::Neg(root.WithOpName("first"), p);
  ops::Neg(root.WithOpName("second"), p);
  CostModel model;
  for (const char* node : {"first", "second"})
    for (const auto& device : {kCpu0, kCpu1}) model.Record(node, device, 1000);
  PlacerOptions o;
  o.cost_model = &model;
  auto placed = PlaceOk(rt, ToDef(root), o);
  REQUIRE(placed["first"] == kCpu0);
  REQUIRE(placed["p"] == kCpu0);
  REQUIRE(placed["second"] == kCpu0);
  // A small p is cheap to move: the second node then runs beside the first.
  Scope small = Scope::NewRootScope();
  auto q = ops::Placeholder(small.WithOpName("p"), DT_FLOAT, PartialTensorShape(TensorShape{2}));
  ops::Neg(small.WithOpName("first"), q);
  ops::Neg(small.WithOpName("second"), q);
  placed = PlaceOk(rt, ToDef(small), o);
  REQUIRE(placed["first"] == kCpu0);
  REQUIRE(placed["second"] == kCpu1);
}

TEST_CASE("placement: measured costs steer the cost model") {
  Runtime rt(Cpus(2));
  // Two independent cheap nodes; measurements say `slow` takes 10 ms on CPU:0 and nothing on CPU:1.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(TensorShape{2}));
  ops::Neg(root.WithOpName("slow"), x);
  CostModel model;
  model.Record("slow", kCpu0, 10000);
  model.Record("slow", kCpu1, 1);
  REQUIRE(model.size() == 2);
  double us = 0;
  REQUIRE(model.Lookup("slow", kCpu0, &us));
  REQUIRE(us == 10000);
  REQUIRE_FALSE(model.Lookup("slow", kCpu2, &us));
  PlacerOptions o;
  o.cost_model = &model;
  REQUIRE(PlaceOk(rt, ToDef(root), o)["slow"] == kCpu1);
  model.Record("slow", kCpu0, 0);  // mean now 5 ms on CPU:0: still slower
  REQUIRE(PlaceOk(rt, ToDef(root), o)["slow"] == kCpu1);
  CostModel flipped;
  flipped.Record("slow", kCpu0, 1);
  flipped.Record("slow", kCpu1, 10000);
  o.cost_model = &flipped;
  REQUIRE(PlaceOk(rt, ToDef(root), o)["slow"] == kCpu0);
}

TEST_CASE("placement: kRoundRobin deals unconstrained groups out in turn; kSingle puts them all on the first device") {
  Runtime rt(Cpus(3));
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) {
    x = ops::Neg(root.WithOpName("n" + std::to_string(i)), x);
    names.push_back(x.node()->name());
  }
  ops::Neg(root.WithOpName("pinned").WithDevice("CPU:2"), x);
  const auto def = ToDef(root);
  const std::vector<std::string> cpus = {kCpu0, kCpu1, kCpu2};

  PlacerOptions rr;
  rr.strategy = PlacementStrategy::kRoundRobin;
  auto p = PlaceOk(rt, def, rr);
  for (int i = 0; i < 6; ++i) REQUIRE(p[names[i]] == cpus[i % 3]);
  REQUIRE(p["x"] == kCpu0);  // a free source follows its first consumer
  REQUIRE(p["pinned"] == kCpu2);

  PlacerOptions single;
  single.strategy = PlacementStrategy::kSingle;
  p = PlaceOk(rt, def, single);
  for (const auto& n : names) REQUIRE(p[n] == kCpu0);
  REQUIRE(p["x"] == kCpu0);
  REQUIRE(p["pinned"] == kCpu2);
  // Even independent expensive branches, which the cost model would spread.
  Scope branches = Scope::NewRootScope();
  auto left = MatMulChain(branches, "left", 256, 3);
  auto right = MatMulChain(branches, "right", 256, 3);
  p = PlaceOk(rt, ToDef(branches), single);
  for (const auto& n : left) REQUIRE(p[n] == kCpu0);
  for (const auto& n : right) REQUIRE(p[n] == kCpu0);
}

TEST_CASE("placement through a session: LastPlacement, requested devices and soft placement") {
  Runtime rt(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto a = ops::Square(root.WithOpName("a").WithDevice("CPU:1"), x);
  auto b = ops::Neg(root.WithOpName("b").WithDevice("CPU:2"), a);
  ops::Add(root.WithOpName("c").WithDevice("CPU:0"), a, b);
  ops::Neg(root.WithOpName("far").WithDevice("CPU:5"), x);
  const auto def = ToDef(root);
  {
    SessionOptions so;
    so.runtime = &rt;
    Session session(so);
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out;
    Status s = session.Run({{"x", Tensor::Scalar<float>(3)}}, {"c"}, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(out[0].scalar<float>() == 0.f);
    auto p = session.LastPlacement();
    REQUIRE(p["a"] == kCpu1);
    REQUIRE(p["b"] == kCpu2);
    REQUIRE(p["c"] == kCpu0);
    // Only what ran is placed; a signature that needs "far" fails to place, naming it.
    REQUIRE(p.count("far") == 0);
    s = session.Run({{"x", Tensor::Scalar<float>(3)}}, {"far"}, {}, &out);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'far'") && Catch::Contains("CPU:5"));
    // The session stays usable.
    REQUIRE(session.Run({{"x", Tensor::Scalar<float>(2)}}, {"c"}, {}, &out).ok());
    REQUIRE(out[0].scalar<float>() == 0.f);
  }
  {
    SessionOptions so;
    so.runtime = &rt;
    so.allow_soft_placement = true;
    Session session(so);
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out;
    REQUIRE(session.Run({{"x", Tensor::Scalar<float>(3)}}, {"far"}, {}, &out).ok());
    REQUIRE(out[0].scalar<float>() == -3.f);
  }
  {
    SessionOptions so;
    so.runtime = &rt;
    so.placement = PlacementStrategy::kSingle;
    Session session(so);
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out;
    REQUIRE(session.Run({{"x", Tensor::Scalar<float>(3)}}, {"c"}, {}, &out).ok());
    REQUIRE(out[0].scalar<float>() == 0.f);
    // The fed x is a free source: it follows its first consumer (a, on CPU:1) under every strategy.
    const auto p = session.LastPlacement();
    REQUIRE(p.at("_arg_x_0") == kCpu1);
    REQUIRE(p.at("_retval_c_0") == kCpu0);
  }
}

TEST_CASE("placement through a session: a fed placeholder's declared shape sizes the cost model's estimates") {
  // The feeds become _Arg nodes; without the placeholders' shapes on them the
  // MatMuls' sizes would be unknown, every node would look cheap, and the cost
  // model would keep both chains on one device to save transfers.
  Runtime rt(Cpus(2));
  Scope root = Scope::NewRootScope();
  std::vector<std::string> left, right;
  Output l = ops::Placeholder(root.WithOpName("left"), DT_FLOAT, PartialTensorShape(TensorShape{128, 128}));
  Output r = ops::Placeholder(root.WithOpName("right"), DT_FLOAT, PartialTensorShape(TensorShape{128, 128}));
  for (int i = 0; i < 3; ++i) {
    l = ops::MatMul(root.WithOpName("l" + std::to_string(i)), l, l);
    r = ops::MatMul(root.WithOpName("r" + std::to_string(i)), r, r);
    left.push_back(l.node()->name());
    right.push_back(r.node()->name());
  }
  ops::Add(root.WithOpName("sum"), l, r);
  SessionOptions so;
  so.runtime = &rt;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor x(DT_FLOAT, TensorShape{128, 128});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = 0.01f;
  std::vector<Tensor> out;
  Status s = session.Run({{"left", x}, {"right", x}}, {"sum"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  const auto p = session.LastPlacement();
  for (const auto& n : left) REQUIRE(p.at(n) == p.at(left[0]));
  for (const auto& n : right) REQUIRE(p.at(n) == p.at(right[0]));
  REQUIRE(p.at(left[0]) != p.at(right[0]));
  // A fed tensor of another shape than declared is still refused.
  s = session.Run({{"left", Tensor(DT_FLOAT, TensorShape{2, 2})}, {"right", x}}, {"sum"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
}

TEST_CASE("a stateful node keeps its device across signatures, so its kernel's state carries on") {
  // Signature {r} puts the random op on CPU:0, signature {e, r} would deal it CPU:1 (round robin): its
  // stream must continue, not restart on a fresh kernel.
  auto build = [] {
    Scope root = Scope::NewRootScope();
    auto e = ops::Neg(root.WithOpName("e"), ops::Const(root.WithOpName("c"), 1.f));
    auto r = ops::RandomUniform(root.WithOpName("r"), {4}, DT_FLOAT, /*seed=*/7);
    (void)e;
    (void)r;
    return ToDef(root);
  };
  auto steps = [&](Runtime* rt, PlacementStrategy strategy, std::vector<std::string>* devices) {
    SessionOptions so;
    so.runtime = rt;
    so.placement = strategy;
    so.graph_options.do_constant_folding = false;
    Session session(so);
    REQUIRE(session.Create(build()).ok());
    std::vector<Tensor> values;
    for (const auto& fetches : {std::vector<std::string>{"r"}, std::vector<std::string>{"e", "r"},
                                std::vector<std::string>{"r"}}) {
      std::vector<Tensor> out;
      Status s = session.Run({}, fetches, {}, &out);
      INFO(s.ToString());
      REQUIRE(s.ok());
      values.push_back(out.back());
      if (devices) devices->push_back(session.LastPlacement().at("r"));
    }
    return values;
  };
  Runtime one(Cpus(1));
  Runtime three(Cpus(3));
  const auto expected = steps(&one, PlacementStrategy::kCostModel, nullptr);
  REQUIRE(test::Values<float>(expected[0]) != test::Values<float>(expected[1]));
  std::vector<std::string> devices;
  const auto got = steps(&three, PlacementStrategy::kRoundRobin, &devices);
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(test::Values<float>(got[i]) == test::Values<float>(expected[i]));
  REQUIRE(devices[1] == devices[0]);
  REQUIRE(devices[2] == devices[0]);
}
