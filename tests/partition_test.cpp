// Partitioning (graph/partition.hpp) and multi-device steps. PartitionGraph
// directly: _Send/_Recv pairs per (tensor, destination), control edges across
// devices, unique names, _Arg/_Retval renumbering, ref edges. Then through
// sessions on a runtime with three CPU devices: seeded random graphs give
// bit for bit what they give on one device, variables train across devices,
// and feeds and fetches live on different devices.
#include <catch2/catch.hpp>

#include <cstring>
#include <future>
#include <map>
#include <random>
#include <set>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/partition.hpp"
#include "actorflow/ops/attrs.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Cpus;
using test::kCpu0;
using test::kCpu1;
using test::kCpu2;
using test::MakeTensor;
using test::ToDef;
using test::Values;

namespace {

// Imports `def` and assigns every node the device it requests (full names), as the placer would.
void ImportAssigned(const proto::GraphDef& def, Graph* g) {
  Status s = ImportGraphDef(def, g);
  INFO(s.ToString());
  REQUIRE(s.ok());
  for (Node* n : g->nodes()) n->set_assigned_device(n->requested_device());
}

std::vector<GraphPartition> PartitionOk(const proto::GraphDef& def) {
  Graph g;
  ImportAssigned(def, &g);
  std::vector<GraphPartition> parts;
  Status s = PartitionGraph(g, PartitionOptions(), &parts);
  INFO(s.ToString());
  REQUIRE(s.ok());
  // Each partition is a graph of its own that imports cleanly.
  for (const auto& p : parts) {
    Graph check;
    Status imported = ImportGraphDef(p.graph, &check);
    INFO(p.device << ": " << imported.ToString());
    REQUIRE(imported.ok());
  }
  return parts;
}

const GraphPartition& On(const std::vector<GraphPartition>& parts, const std::string& device) {
  for (const auto& p : parts)
    if (p.device == device) return p;
  FAIL("no partition on " << device);
  return parts.front();
}

std::vector<const proto::NodeDef*> OfOp(const GraphPartition& p, const std::string& op) {
  std::vector<const proto::NodeDef*> out;
  for (const auto& n : p.graph.node())
    if (n.op() == op) out.push_back(&n);
  return out;
}

const proto::NodeDef& Named(const GraphPartition& p, const std::string& name) {
  for (const auto& n : p.graph.node())
    if (n.name() == name) return n;
  FAIL("no node " << name << " on " << p.device);
  return p.graph.node(0);
}

std::string StringAttr(const proto::NodeDef& n, const std::string& name) {
  std::string v;
  REQUIRE(GetNodeAttr(n, name, &v).ok());
  return v;
}

int64_t IntAttr(const proto::NodeDef& n, const std::string& name) {
  int64_t v = 0;
  REQUIRE(GetNodeAttr(n, name, &v).ok());
  return v;
}

// The rendezvous key's parts must agree between a _Send and its _Recv.
void RequireSameKey(const proto::NodeDef& send, const proto::NodeDef& recv) {
  for (const char* attr : {"tensor_name", "send_device", "recv_device"})
    REQUIRE(StringAttr(send, attr) == StringAttr(recv, attr));
  REQUIRE(IntAttr(send, "send_device_incarnation") == IntAttr(recv, "send_device_incarnation"));
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

Tensor RandomMatrix(std::mt19937* rng, int n) {
  std::uniform_real_distribution<float> value(-2.f, 2.f);
  Tensor t(DT_FLOAT, TensorShape{n, n});
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = value(*rng);
  return t;
}

// A random graph of n x n float matrices: what one seed builds and runs.
struct RandomGraph {
  proto::GraphDef def;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
};

RandomGraph MakeRandomGraph(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  // Every tenth graph has matrices large enough (144 KB) for kernels to leave the device actor for the pool.
  const int n = seed % 10 == 0 ? 192 : 1 + pick(4);
  const std::vector<std::string> devices = {"", "/device:CPU:0", "/device:CPU:1", "/device:CPU:2", "CPU:1"};
  Scope root = Scope::NewRootScope();
  RandomGraph r;
  std::vector<Output> values;     // every tensor so far
  std::vector<Operation> ops;     // nodes that may be control inputs (not placeholders: a fed node's
                                  // control edge would make it run unfed)
  const int num_placeholders = 1 + pick(3);
  for (int i = 0; i < num_placeholders; ++i) {
    const std::string name = "p" + std::to_string(i);
    values.push_back(ops::Placeholder(root.WithOpName(name).WithDevice(devices[pick(5)]), DT_FLOAT,
                                      PartialTensorShape(TensorShape{n, n})));
    r.feeds.emplace_back(name, RandomMatrix(&rng, n));
  }
  const int num_consts = 1 + pick(2);
  for (int i = 0; i < num_consts; ++i) {
    Output c = ops::Const(root.WithOpName("c" + std::to_string(i)).WithDevice(devices[pick(5)]),
                          Input::Initializer(RandomMatrix(&rng, n)));
    values.push_back(c);
    ops.push_back(c.op());
  }
  const int num_nodes = 6 + pick(15);
  for (int i = 0; i < num_nodes; ++i) {
    Scope s = root.WithOpName("n" + std::to_string(i)).WithDevice(devices[pick(5)]);
    if (!ops.empty() && pick(10) < 3) s = s.WithControlDependencies({ops[pick(static_cast<int>(ops.size()))]});
    const Output a = values[pick(static_cast<int>(values.size()))];
    const Output b = values[pick(static_cast<int>(values.size()))];
    Output out;
    switch (pick(7)) {
      case 0: out = ops::Add(s, a, b); break;
      case 1: out = ops::Mul(s, a, b); break;
      case 2: out = ops::Sub(s, a, b); break;
      case 3: out = ops::Neg(s, a); break;
      case 4: out = ops::Square(s, a); break;
      case 5: out = ops::MatMul(s, a, b, pick(2) == 1, pick(2) == 1); break;
      default: out = ops::Identity(s, a); break;
    }
    values.push_back(out);
    ops.push_back(out.op());
  }
  std::set<std::string> fetched;
  const int num_fetches = 1 + pick(4);
  for (int i = 0; i < num_fetches; ++i) {
    // Mostly late nodes (they need more of the graph), sometimes anything, a placeholder included.
    const int k = pick(3) == 0 ? pick(static_cast<int>(values.size())) : static_cast<int>(values.size()) - 1 - pick(4);
    if (fetched.insert(values[k].name()).second) r.fetches.push_back(values[k].name());
  }
  if (pick(3) == 0) r.targets.push_back(ops[pick(static_cast<int>(ops.size()))].name());
  r.def = ToDef(root);
  return r;
}

// Runs `r` on `rt` with a fresh session: the fetched tensors (and the placement, when asked).
std::vector<Tensor> RunOn(Runtime* rt, const RandomGraph& r, SessionOptions so,
                          std::map<std::string, std::string>* placement = nullptr) {
  so.runtime = rt;
  Session session(so);
  REQUIRE(session.Create(r.def).ok());
  std::vector<Tensor> out;
  RunOptions opts;
  opts.timeout_in_ms = 60000;  // never hang: a lost tensor ends the step
  Status s = session.Run(opts, r.feeds, r.fetches, r.targets, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out.size() == r.fetches.size());
  // A second step of the same signature (the cached partitions) gives the same.
  std::vector<Tensor> again;
  s = session.Run(opts, r.feeds, r.fetches, r.targets, &again);
  INFO(s.ToString());
  REQUIRE(s.ok());
  for (size_t i = 0; i < out.size(); ++i) REQUIRE(BitEqual(out[i], again[i]));
  if (placement) *placement = session.LastPlacement();
  return out;
}

}  // namespace

TEST_CASE("partition: one _Send/_Recv pair per (tensor, destination device), however many consumers") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice(kCpu0), {1.f, 2.f});
  ops::Neg(root.WithOpName("b").WithDevice(kCpu1), a);
  ops::Square(root.WithOpName("c").WithDevice(kCpu1), a);
  ops::Add(root.WithOpName("d").WithDevice(kCpu1), a, a);
  ops::Neg(root.WithOpName("e").WithDevice(kCpu2), a);
  ops::Neg(root.WithOpName("f").WithDevice(kCpu0), a);  // same device: a plain edge
  auto x = ops::SoftmaxCrossEntropyWithLogits(root.WithOpName("x").WithDevice(kCpu0), {{1.f, 2.f}}, {{0.f, 1.f}});
  ops::Neg(root.WithOpName("loss").WithDevice(kCpu2), x.loss);
  ops::Neg(root.WithOpName("backprop").WithDevice(kCpu2), x.backprop);
  auto parts = PartitionOk(ToDef(root));
  REQUIRE(parts.size() == 3);
  REQUIRE(parts[0].device == kCpu0);  // ordered by device name
  REQUIRE(parts[1].device == kCpu1);
  REQUIRE(parts[2].device == kCpu2);

  const auto& p0 = On(parts, kCpu0);
  const auto& p1 = On(parts, kCpu1);
  const auto& p2 = On(parts, kCpu2);
  // a -> CPU:1, a -> CPU:2, x:0 -> CPU:2, x:1 -> CPU:2.
  REQUIRE(OfOp(p0, "_Send").size() == 4);
  REQUIRE(p0.num_sends == 4);
  REQUIRE(OfOp(p0, "_Recv").empty());
  REQUIRE(OfOp(p1, "_Recv").size() == 1);
  REQUIRE(p1.num_recvs == 1);
  REQUIRE(OfOp(p2, "_Recv").size() == 3);
  REQUIRE(p2.num_recvs == 3);
  REQUIRE(OfOp(p1, "_Send").empty());
  REQUIRE(OfOp(p2, "_Send").empty());

  // b, c and d read the one _Recv of a on CPU:1 (d twice).
  const std::string recv = OfOp(p1, "_Recv")[0]->name();
  REQUIRE(Named(p1, "b").input(0) == recv);
  REQUIRE(Named(p1, "c").input(0) == recv);
  REQUIRE(Named(p1, "d").input(0) == recv);
  REQUIRE(Named(p1, "d").input(1) == recv);
  REQUIRE(Named(p0, "f").input(0) == "a");
  REQUIRE(Named(p0, "f").device() == kCpu0);

  // Every _Recv has exactly one _Send with its key; the keys are distinct.
  std::set<std::string> tensor_names;
  for (const auto& part : {&p1, &p2})
    for (const auto* r : OfOp(*part, "_Recv"))
      tensor_names.insert(StringAttr(*r, "tensor_name") + StringAttr(*r, "recv_device"));
  REQUIRE(tensor_names.size() == 4);
  for (const auto& part : {&p1, &p2}) {
    for (const auto* r : OfOp(*part, "_Recv")) {
      int matches = 0;
      for (const auto* s : OfOp(p0, "_Send")) {
        if (StringAttr(*s, "tensor_name") != StringAttr(*r, "tensor_name") ||
            StringAttr(*s, "recv_device") != StringAttr(*r, "recv_device"))
          continue;
        ++matches;
        RequireSameKey(*s, *r);
        REQUIRE(StringAttr(*s, "send_device") == kCpu0);
        REQUIRE(StringAttr(*r, "recv_device") == part->device);
        DataType t, tt;
        REQUIRE(GetNodeAttr(*s, "T", &t).ok());
        REQUIRE(GetNodeAttr(*r, "tensor_type", &tt).ok());
        REQUIRE(t == DT_FLOAT);
        REQUIRE(tt == DT_FLOAT);
      }
      REQUIRE(matches == 1);
    }
  }
  // x's two outputs travel separately: loss reads one _Recv, backprop another.
  REQUIRE(Named(p2, "loss").input(0) != Named(p2, "backprop").input(0));
}

TEST_CASE("partition: a control edge across devices becomes a dummy _Send/_Recv, once per destination") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice(kCpu0), 1.f);
  auto first = ops::Neg(root.WithOpName("first").WithDevice(kCpu0), a);
  ops::Const(root.WithOpName("b").WithDevice(kCpu1).WithControlDependencies({first.op()}), 2.f);
  ops::Const(root.WithOpName("c").WithDevice(kCpu1).WithControlDependencies({first.op()}), 3.f);
  ops::Const(root.WithOpName("same").WithDevice(kCpu0).WithControlDependencies({first.op()}), 4.f);
  auto parts = PartitionOk(ToDef(root));
  REQUIRE(parts.size() == 2);
  const auto& p0 = On(parts, kCpu0);
  const auto& p1 = On(parts, kCpu1);
  REQUIRE(OfOp(p0, "_Send").size() == 1);
  REQUIRE(OfOp(p1, "_Recv").size() == 1);
  const auto& send = *OfOp(p0, "_Send")[0];
  const auto& recv = *OfOp(p1, "_Recv")[0];
  RequireSameKey(send, recv);
  // The _Send sends a dummy that exists once `first` has run.
  const auto& dummy = Named(p0, send.input(0));
  REQUIRE(dummy.op() == "Const");
  REQUIRE(dummy.input_size() == 1);
  REQUIRE(dummy.input(0) == "^first");
  // b and c wait for the _Recv, by control edge only.
  for (const char* name : {"b", "c"}) {
    const auto& n = Named(p1, name);
    REQUIRE(n.input_size() == 1);
    REQUIRE(n.input(0) == "^" + recv.name());
  }
  REQUIRE(Named(p0, "same").input(0) == "^first");
}

TEST_CASE("partition: added nodes get names no other node has") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice(kCpu0), 1.f);
  // Nodes already named like the ones the partitioner adds.
  ops::Const(root.WithOpName("a/_send_to_CPU_1").WithDevice(kCpu1), 1.f);
  ops::Const(root.WithOpName("a/_recv_on_CPU_1").WithDevice(kCpu0), 1.f);
  ops::Const(root.WithOpName("a/_control_dummy").WithDevice(kCpu2), 1.f);
  ops::Neg(root.WithOpName("b").WithDevice(kCpu1), a);
  ops::Const(root.WithOpName("c").WithDevice(kCpu1).WithControlDependencies({a.op()}), 1.f);
  ops::Neg(root.WithOpName("d").WithDevice(kCpu2).WithControlDependencies({a.op()}), a);
  auto parts = PartitionOk(ToDef(root));
  std::set<std::string> names;
  size_t total = 0;
  for (const auto& p : parts)
    for (const auto& n : p.graph.node()) {
      names.insert(n.name());
      ++total;
    }
  REQUIRE(names.size() == total);
  // 7 original nodes, 2 data + 2 control pairs, 2 dummies.
  REQUIRE(total == 7 + 8 + 2);
}

TEST_CASE("partition: _Arg and _Retval are renumbered per partition, with index maps to the whole graph's") {
  // Feeds 0 and 2 are used on CPU:1, feed 1 on CPU:0; fetches 0 and 2 on CPU:0, fetch 1 on CPU:1.
  proto::GraphDef def;
  auto add = [&](const std::string& name, const std::string& op, const std::string& device,
                 std::vector<std::string> inputs, int index = -1) {
    proto::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op(op);
    n->set_device(device);
    for (const auto& in : inputs) n->add_input(in);
    (*n->mutable_attr())["T"] = AttrType(DT_FLOAT);
    if (index >= 0) (*n->mutable_attr())["index"] = AttrInt(index);
  };
  add("arg0", "_Arg", kCpu1, {}, 0);
  add("arg1", "_Arg", kCpu0, {}, 1);
  add("arg2", "_Arg", kCpu1, {}, 2);
  add("sum", "Add", kCpu1, {"arg0", "arg2"});
  add("neg", "Neg", kCpu0, {"arg1"});
  add("ret2", "_Retval", kCpu0, {"sum"}, 2);
  add("ret1", "_Retval", kCpu1, {"sum"}, 1);
  add("ret0", "_Retval", kCpu0, {"neg"}, 0);
  auto parts = PartitionOk(def);
  REQUIRE(parts.size() == 2);
  const auto& p0 = On(parts, kCpu0);
  const auto& p1 = On(parts, kCpu1);
  REQUIRE(p0.arg_indices == std::vector<int>{1});
  REQUIRE(p1.arg_indices == std::vector<int>{0, 2});
  REQUIRE(IntAttr(Named(p0, "arg1"), "index") == 0);
  REQUIRE(IntAttr(Named(p1, "arg0"), "index") == 0);
  REQUIRE(IntAttr(Named(p1, "arg2"), "index") == 1);
  // Per new index, the whole graph's: ret2 and ret0 on CPU:0 in node order.
  REQUIRE(p0.retval_indices == std::vector<int>{2, 0});
  REQUIRE(IntAttr(Named(p0, "ret2"), "index") == 0);
  REQUIRE(IntAttr(Named(p0, "ret0"), "index") == 1);
  REQUIRE(p1.retval_indices == std::vector<int>{1});
  REQUIRE(IntAttr(Named(p1, "ret1"), "index") == 0);
}

TEST_CASE("partition: a ref edge across devices and a node without a device are errors naming the nodes") {
  {
    Scope root = Scope::NewRootScope();
    auto v = ops::Variable(root.WithOpName("v").WithDevice(kCpu0), PartialTensorShape(TensorShape{2}), DT_FLOAT);
    ops::Assign(root.WithOpName("assign").WithDevice(kCpu1), v, ops::Const(root.WithDevice(kCpu1), {1.f, 2.f}));
    Graph g;
    ImportAssigned(ToDef(root), &g);
    std::vector<GraphPartition> parts;
    Status s = PartitionGraph(g, PartitionOptions(), &parts);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'assign'") && Catch::Contains("'v'") && Catch::Contains(kCpu0) &&
                                  Catch::Contains(kCpu1) && Catch::Contains("reference"));
  }
  {
    Scope root = Scope::NewRootScope();
    auto a = ops::Const(root.WithOpName("a").WithDevice(kCpu0), 1.f);
    ops::Neg(root.WithOpName("homeless"), a);
    Graph g;
    ImportAssigned(ToDef(root), &g);
    std::vector<GraphPartition> parts;
    Status s = PartitionGraph(g, PartitionOptions(), &parts);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'homeless'"));
  }
}

TEST_CASE("a variable read by value on another device crosses as its value, read by the _Send") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice(kCpu1), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  ops::Assign(root.WithOpName("init").WithDevice(kCpu1), v, ops::Const(root.WithDevice(kCpu1), {1.f, 2.f}));
  ops::Square(root.WithOpName("sq").WithDevice(kCpu0), v);  // the ref edge itself into a value input
  ops::AssignAdd(root.WithOpName("bump").WithDevice(kCpu1), v, ops::Const(root.WithDevice(kCpu1), {1.f, 1.f}));
  const auto def = ToDef(root);
  auto parts = PartitionOk(def);
  const auto sends = OfOp(On(parts, kCpu1), "_Send");
  REQUIRE(sends.size() == 1);
  REQUIRE(sends[0]->input(0) == "v");
  REQUIRE(static_cast<DataType>(sends[0]->attr().at("T").type()) == DT_FLOAT);  // the value, not the reference

  Runtime rt(Cpus(2));
  SessionOptions so;
  so.runtime = &rt;
  Session session(so);
  REQUIRE(session.Create(def).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {"init"}, &out).ok());
  Status s = session.Run({}, {"sq"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{1.f, 4.f});
  REQUIRE(session.Run({}, {}, {"bump"}, &out).ok());
  REQUIRE(session.Run({}, {"sq"}, {}, &out).ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{4.f, 9.f});  // reads the variable as it is now
}

TEST_CASE("partitioned equals unpartitioned: seeded random graphs give the same bits on 3 devices as on 1") {
  Runtime one(Cpus(1));
  Runtime three(Cpus(3));
  int multi_device = 0;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    INFO("seed " << seed);
    const RandomGraph r = MakeRandomGraph(seed);
    SessionOptions reference;
    reference.allow_soft_placement = true;  // the requests for CPU:1 and CPU:2 fall back to the one device
    SessionOptions split;
    split.placement = seed % 3 == 0 ? PlacementStrategy::kCostModel : PlacementStrategy::kRoundRobin;
    if (seed % 2 == 0) {  // run the graph as written: no folding of the constant parts away
      split.graph_options.do_constant_folding = false;
      split.graph_options.do_common_subexpression_elimination = false;
      reference.graph_options = split.graph_options;
    }
    const std::vector<Tensor> expected = RunOn(&one, r, reference);
    std::map<std::string, std::string> placement;
    const std::vector<Tensor> got = RunOn(&three, r, split, &placement);
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("fetch " << r.fetches[i]);
      REQUIRE(BitEqual(expected[i], got[i]));
    }
    std::set<std::string> used;
    for (const auto& [node, device] : placement) used.insert(device);
    if (used.size() > 1) ++multi_device;
  }
  // Most of them did run across devices.
  REQUIRE(multi_device >= 20);
}

TEST_CASE("a variable on CPU:1 trains from a loss computed on CPU:0, as it does on one device") {
  auto build = [](Scope root) {
    root.SetGraphSeed(7);
    Variable w = NewVariable(root.WithDevice("/device:CPU:1"), "w", {3, 2}, DT_FLOAT, init::GlorotUniform());
    Scope on0 = root.WithDevice("/device:CPU:0");
    auto x = ops::Placeholder(on0.WithOpName("x"), DT_FLOAT, PartialTensorShape(TensorShape{4, 3}));
    auto y = ops::Placeholder(on0.WithOpName("y"), DT_FLOAT, PartialTensorShape(TensorShape{4, 2}));
    auto loss = ops::Mean(on0.WithOpName("loss"), ops::Square(on0, ops::Sub(on0, ops::MatMul(on0, x, w.value), y)),
                          {0, 1});
    GradientDescentOptimizer sgd(0.1);
    sgd.Minimize(root.WithOpName("train"), loss);
    GlobalVariablesInitializer(root);
    return ToDef(root);
  };
  const proto::GraphDef def = build(Scope::NewRootScope());
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", MakeTensor<float>({.1f, .2f, .3f, .4f, .5f, .6f, .7f, .8f, .9f, 1.f, 1.1f, 1.2f}, {4, 3})},
      {"y", MakeTensor<float>({1, 0, 0, 1, 1, 1, 0, 0}, {4, 2})}};

  // Five steps: the loss of each and the final w.
  auto train = [&](Runtime* rt, std::map<std::string, std::string>* placement,
                   PlacementStrategy strategy = PlacementStrategy::kCostModel) {
    SessionOptions so;
    so.runtime = rt;
    so.allow_soft_placement = true;
    so.placement = strategy;
    Session session(so);
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out, trace;
    RunOptions opts;
    opts.timeout_in_ms = 60000;
    REQUIRE(session.Run(opts, {}, {}, {"init"}, &out).ok());
    for (int step = 0; step < 5; ++step) {
      Status s = session.Run(opts, feeds, {"loss"}, {"train"}, &out);
      INFO(s.ToString());
      REQUIRE(s.ok());
      if (placement && step == 0) *placement = session.LastPlacement();
      trace.push_back(out[0]);
    }
    REQUIRE(session.Run(opts, {}, {"w"}, {}, &out).ok());
    trace.push_back(out[0]);
    return trace;
  };
  Runtime one(Cpus(1));
  Runtime three(Cpus(3));
  const auto expected = train(&one, nullptr);
  std::map<std::string, std::string> placement;
  const auto got = train(&three, &placement);
  REQUIRE(expected.size() == got.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(BitEqual(expected[i], got[i]));
  REQUIRE(Values<float>(got[4])[0] < Values<float>(got[0])[0]);  // it did learn
  // The update ran with its variable on CPU:1, the loss on CPU:0.
  REQUIRE(placement.at("w") == kCpu1);
  REQUIRE(placement.at("loss") == kCpu0);
  int updates = 0;
  for (const auto& [node, device] : placement)
    if (node.find("ApplyGradientDescent") != std::string::npos) {
      INFO(node);
      REQUIRE(device == kCpu1);
      ++updates;
    }
  REQUIRE(updates == 1);
  // Dealt out round robin, the gradient's nodes (shapes, int32 tensors, control edges to the train op)
  // cross devices all over: still the same bits.
  std::map<std::string, std::string> dealt;
  const auto spread = train(&three, &dealt, PlacementStrategy::kRoundRobin);
  for (size_t i = 0; i < spread.size(); ++i) REQUIRE(BitEqual(expected[i], spread[i]));
  std::set<std::string> used;
  for (const auto& [node, device] : dealt) used.insert(device);
  REQUIRE(used.size() == 3);
}

TEST_CASE("feeds and fetches live on different devices") {
  Runtime three(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
  auto on2 = ops::Square(root.WithOpName("on2").WithDevice("CPU:2"), x);
  auto on1 = ops::Neg(root.WithOpName("on1").WithDevice("CPU:1"), y);
  auto on0 = ops::Add(root.WithOpName("on0").WithDevice("CPU:0"), on1, on2);
  ops::Mul(root.WithOpName("unfed").WithDevice("CPU:1"), on0, 2.f);
  SessionOptions so;
  so.runtime = &three;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOptions opts;
  opts.timeout_in_ms = 60000;
  std::vector<Tensor> out;
  // Fetches from all three devices, a fed tensor, and one tensor twice.
  Status s = session.Run(opts, {{"x", MakeTensor<float>({1, 2}, {2})}, {"y", MakeTensor<float>({10, 20}, {2})}},
                         {"on0", "on1", "on2", "x", "on2", "unfed"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out.size() == 6);
  REQUIRE(Values<float>(out[0]) == std::vector<float>{-9, -16});
  REQUIRE(Values<float>(out[1]) == std::vector<float>{-10, -20});
  REQUIRE(Values<float>(out[2]) == std::vector<float>{1, 4});
  REQUIRE(Values<float>(out[3]) == std::vector<float>{1, 2});
  REQUIRE(Values<float>(out[4]) == std::vector<float>{1, 4});
  REQUIRE(Values<float>(out[5]) == std::vector<float>{-18, -32});
  auto p = session.LastPlacement();
  REQUIRE(p.at("on0") == kCpu0);
  REQUIRE(p.at("on1") == kCpu1);
  REQUIRE(p.at("on2") == kCpu2);
  // Feeding an intermediate that lives on CPU:1 cuts the graph there.
  s = session.Run(opts, {{"x", MakeTensor<float>({3}, {1})}, {"on1", MakeTensor<float>({5}, {1})}}, {"on0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{14});
  // Only targets, across devices.
  REQUIRE(session.Run(opts, {{"y", MakeTensor<float>({1}, {1})}, {"x", MakeTensor<float>({1}, {1})}}, {}, {"unfed"},
                      &out)
              .ok());
  REQUIRE(out.empty());
}

TEST_CASE("concurrent steps of a signature spread over three devices do not mix") {
  Runtime three(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto a = ops::Square(root.WithOpName("a").WithDevice("CPU:1"), x);
  auto b = ops::Neg(root.WithOpName("b").WithDevice("CPU:2"), x);
  ops::Add(root.WithOpName("c").WithDevice("CPU:0"), a, b);
  SessionOptions so;
  so.runtime = &three;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  auto client = [&](float base) {
    RunOptions opts;
    opts.timeout_in_ms = 60000;
    int wrong = 0;
    for (int i = 0; i < 50; ++i) {
      const float v = base + static_cast<float>(i);
      std::vector<Tensor> out;
      Status s = session.Run(opts, {{"x", Tensor::Scalar<float>(v)}}, {"c", "a"}, {}, &out);
      if (!s.ok() || out[0].scalar<float>() != v * v - v || out[1].scalar<float>() != v * v) ++wrong;
    }
    return wrong;
  };
  auto other = std::async(std::launch::async, client, 1000.f);
  const int wrong_here = client(0.f);
  REQUIRE(wrong_here == 0);
  REQUIRE(other.get() == 0);
}

TEST_CASE("a traced step across devices reports every partition's nodes and teaches the cost model") {
  Runtime three(Cpus(3));
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto a = ops::Square(root.WithOpName("a").WithDevice("CPU:1"), x);
  auto b = ops::Neg(root.WithOpName("b").WithDevice("CPU:2"), x);
  ops::Add(root.WithOpName("c").WithDevice("CPU:0"), a, b);
  SessionOptions so;
  so.runtime = &three;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOptions opts;
  opts.timeout_in_ms = 60000;
  opts.trace_level = TraceLevel::kFullTrace;
  RunMetadata metadata;
  std::vector<Tensor> out;
  REQUIRE(session.Run(opts, {{"x", Tensor::Scalar<float>(2)}}, {"c"}, {}, &out, &metadata).ok());
  REQUIRE(out[0].scalar<float>() == 2.f);
  std::map<std::string, std::string> ran;
  for (const auto& st : metadata.step_stats) ran[st.node] = st.device;
  REQUIRE(ran.at("a") == kCpu1);
  REQUIRE(ran.at("b") == kCpu2);
  REQUIRE(ran.at("c") == kCpu0);
  int sends = 0, recvs = 0;
  for (const auto& st : metadata.step_stats) {
    sends += st.op == "_Send";
    recvs += st.op == "_Recv";
  }
  REQUIRE(sends == recvs);
  REQUIRE(sends >= 2);  // a and b travel to c
  double us = 0;
  REQUIRE(session.cost_model().Lookup("a", kCpu1, &us));
  REQUIRE(session.cost_model().Lookup("c", kCpu0, &us));
  REQUIRE_FALSE(session.cost_model().Lookup("a", kCpu0, &us));
}
