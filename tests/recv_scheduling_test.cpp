// Recv scheduling (graph/recv_scheduling.hpp): which gates handmade partitions
// get, that any partition stays acyclic, that PartitionGraph applies it only
// when asked, that results do not change, and that the bench's graph
// (bench/recv_scheduling_graph.hpp) peaks lower in memory with it.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "bench/recv_scheduling_graph.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/partition.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/graph/recv_scheduling.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::kCpu0;
using test::kCpu1;

namespace {

// One partition on CPU:0, node by node.
struct PartitionBuilder {
  proto::NodeDef* Add(const std::string& name, const std::string& op, const std::vector<std::string>& inputs) {
    proto::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op(op);
    n->set_device(kCpu0);
    for (const auto& in : inputs) n->add_input(in);
    return n;
  }
  void Const(const std::string& name) {
    auto& attr = *Add(name, "Const", {})->mutable_attr();
    attr["dtype"] = AttrType(DT_FLOAT);
    attr["value"] = AttrTensor(Tensor::Scalar(1.0f));
  }
  void Op(const std::string& name, const std::string& op, const std::vector<std::string>& inputs) {
    (*Add(name, op, inputs)->mutable_attr())["T"] = AttrType(DT_FLOAT);
  }
  void Transfer(const std::string& name, const std::string& op, const std::vector<std::string>& inputs) {
    auto& attr = *Add(name, op, inputs)->mutable_attr();
    attr[op == "_Recv" ? "tensor_type" : "T"] = AttrType(DT_FLOAT);
    attr["tensor_name"] = AttrString(name);
    attr["send_device"] = AttrString(op == "_Recv" ? kCpu1 : kCpu0);
    attr["send_device_incarnation"] = AttrInt(1);
    attr["recv_device"] = AttrString(op == "_Recv" ? kCpu0 : kCpu1);
  }
  void Recv(const std::string& name) { Transfer(name, "_Recv", {}); }
  void Send(const std::string& name, const std::string& input) { Transfer(name, "_Send", {input}); }
  proto::GraphDef def;
};

const proto::NodeDef& NodeNamed(const proto::GraphDef& def, const std::string& name) {
  for (const auto& n : def.node())
    if (n.name() == name) return n;
  FAIL("no node " << name);
  return def.node(0);
}

std::vector<std::string> Inputs(const proto::GraphDef& def, const std::string& name) {
  const auto& in = NodeNamed(def, name).input();
  return std::vector<std::string>(in.begin(), in.end());
}

// Every node's inputs, in order: what scheduling may change.
std::vector<std::vector<std::string>> AllInputs(const proto::GraphDef& def) {
  std::vector<std::vector<std::string>> out;
  for (const auto& n : def.node()) out.emplace_back(n.input().begin(), n.input().end());
  return out;
}

void RequireAcyclic(const proto::GraphDef& def) {
  Graph g;
  Status s = ImportGraphDef(def, &g);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::vector<Node*> order;
  s = TopologicalOrder(g, &order);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// x -> a1 -> a2 -> a3 -> a4 -> a5, with a2 = a1 + r0 (needed at once) and
// b = a4 + r (needed late); with `round_trip`, CPU:0 also sends -r0 back.
proto::GraphDef ChainPartition(bool round_trip) {
  PartitionBuilder p;
  p.Const("x");
  p.Recv("r0");
  p.Recv("r");
  p.Op("a1", "Neg", {"x"});
  p.Op("a2", "Add", {"a1", "r0"});
  p.Op("a3", "Neg", {"a2"});
  p.Op("a4", "Neg", {"a3"});
  p.Op("a5", "Neg", {"a4"});
  p.Op("b", "Add", {"a4", "r"});
  if (round_trip) {
    p.Op("n0", "Neg", {"r0"});
    p.Send("back", "n0");
  }
  return p.def;
}

RecvSchedulingOptions UnitCosts() {
  RecvSchedulingOptions o;
  o.costs = RecvCostEstimate::kUnit;
  o.transfer_cost = 1;
  return o;
}

}  // namespace

TEST_CASE("a _Recv needed late waits for the node finishing last before its consumer") {
  // Unit costs: a1 [0,1], a2 [1,2], a3 [2,3], a4 [3,4], b [4,5]; r must
  // arrive by 4, a 1-long transfer: a3 (ALAP finish 3) is its gate.
  proto::GraphDef def = ChainPartition(false);
  int added = -1;
  REQUIRE(ScheduleRecvsLate(&def, UnitCosts(), &added).ok());
  REQUIRE(added == 1);
  REQUIRE(Inputs(def, "r") == std::vector<std::string>{"^a3"});
  REQUIRE(Inputs(def, "r0").empty());  // needed at once: no gate would help
  RequireAcyclic(def);

  SECTION("the same partition gets the same edges") {
    proto::GraphDef again = ChainPartition(false);
    REQUIRE(ScheduleRecvsLate(&again, UnitCosts()).ok());
    REQUIRE(AllInputs(again) == AllInputs(def));
  }
  SECTION("with the static estimate, where the transfer takes as long as two scalar Negs") {
    proto::GraphDef sized = ChainPartition(false);
    RecvSchedulingOptions any_delay;
    any_delay.min_delay_us = 0;  // the delays here are a few microseconds
    REQUIRE(ScheduleRecvsLate(&sized, any_delay, &added).ok());
    REQUIRE(added == 1);
    REQUIRE(Inputs(sized, "r") == std::vector<std::string>{"^a2"});
  }
  SECTION("by default, a gate that would hold a transfer back by only microseconds is not added") {
    proto::GraphDef sized = ChainPartition(false);
    REQUIRE(ScheduleRecvsLate(&sized, RecvSchedulingOptions(), &added).ok());
    REQUIRE(added == 0);
    REQUIRE(Inputs(sized, "r").empty());
  }
}

TEST_CASE("when a _Send depends on a _Recv, gates depend on no _Recv") {
  // a3 depends on r0, whose sender might wait for what this partition sends
  // back: gating r on it could deadlock across devices. a1 is the latest
  // gate that waits for nothing.
  proto::GraphDef def = ChainPartition(true);
  int added = -1;
  REQUIRE(ScheduleRecvsLate(&def, UnitCosts(), &added).ok());
  REQUIRE(added == 1);
  REQUIRE(Inputs(def, "r") == std::vector<std::string>{"^a1"});
  REQUIRE(Inputs(def, "r0").empty());
  RequireAcyclic(def);
}

TEST_CASE("what a _Send needs is never delayed") {
  // Locally the _Send is a sink that could run last; another device may be
  // waiting for it, so r is not gated although the chain would allow it.
  PartitionBuilder p;
  p.Const("x");
  p.Op("a1", "Neg", {"x"});
  p.Op("a2", "Neg", {"a1"});
  p.Op("a3", "Neg", {"a2"});
  p.Op("a4", "Neg", {"a3"});
  p.Recv("r");
  p.Op("n", "Neg", {"r"});
  p.Send("out", "n");
  int added = -1;
  REQUIRE(ScheduleRecvsLate(&p.def, UnitCosts(), &added).ok());
  REQUIRE(added == 0);
  REQUIRE(Inputs(p.def, "r").empty());
}

TEST_CASE("partitions without _Recvs, or with loop frames, are left alone") {
  PartitionBuilder p;
  p.Const("x");
  p.Op("a", "Neg", {"x"});
  const auto before = AllInputs(p.def);
  int added = -1;
  REQUIRE(ScheduleRecvsLate(&p.def, UnitCosts(), &added).ok());
  REQUIRE(added == 0);
  REQUIRE(AllInputs(p.def) == before);

  proto::GraphDef loop = ChainPartition(false);
  loop.add_node()->set_op("NextIteration");  // not importable: must not be looked at
  REQUIRE(ScheduleRecvsLate(&loop, UnitCosts(), &added).ok());
  REQUIRE(added == 0);
}

TEST_CASE("a partition that does not import is an error naming its device") {
  proto::GraphDef def = ChainPartition(false);
  def.mutable_node(3)->set_input(0, "missing");
  Status s = ScheduleRecvsLate(&def, UnitCosts());
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains(kCpu0) && Catch::Contains("missing"));
}

TEST_CASE("random partitions stay acyclic and are never gated by a _Recv") {
  std::mt19937 rng(7);
  int total = 0;
  for (int graph = 0; graph < 60; ++graph) {
    PartitionBuilder p;
    std::vector<std::string> names;
    std::set<std::string> recvs;
    for (int i = 0; i < 40; ++i) {
      const std::string name = "n" + std::to_string(i);
      const int kind = names.size() < 2 ? 0 : static_cast<int>(rng() % 10);
      auto pick = [&] { return names[rng() % names.size()]; };
      if (kind == 0) {
        p.Const(name);
      } else if (kind <= 2) {
        p.Recv(name);
        recvs.insert(name);
      } else if (kind == 3) {
        p.Send(name, pick());
      } else if (kind <= 6) {
        p.Op(name, "Neg", {pick()});
      } else {
        p.Op(name, "Add", {pick(), pick()});
      }
      if (kind != 3) names.push_back(name);
    }
    for (RecvCostEstimate costs : {RecvCostEstimate::kUnit, RecvCostEstimate::kStatic}) {
      proto::GraphDef def = p.def;
      RecvSchedulingOptions o;
      o.costs = costs;
      int added = 0;
      REQUIRE(ScheduleRecvsLate(&def, o, &added).ok());
      total += added;
      RequireAcyclic(def);
      for (const auto& n : def.node())
        for (const auto& in : n.input())
          if (in[0] == '^') {
            REQUIRE(n.op() == "_Recv");
            REQUIRE(recvs.count(in.substr(1)) == 0);
          }
    }
  }
  REQUIRE(total > 0);
}

namespace {

struct TwoDevices {
  TwoDevices() : rt(test::TwoThreads(2)) {}
  SessionOptions Options(bool late) {
    SessionOptions so;
    so.runtime = &rt;
    so.partitioning.schedule_recvs_late = late;
    return so;
  }
  Runtime rt;
};

bench_graphs::LateConsumerParams SmallParams(bool expand) {
  bench_graphs::LateConsumerParams p;
  p.chain = 20;
  p.tensors = 3;
  p.elements = 4096;
  p.n = 8;
  p.expand_on_receiver = expand;
  return p;
}

std::vector<std::pair<std::string, Tensor>> Feeds(const bench_graphs::LateConsumerGraph& g, int n) {
  Tensor x(DT_FLOAT, TensorShape{n, n});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) * 0.25f;
  return {{g.x.name(), x}, {g.y.name(), Tensor::Scalar(3.0f)}};
}

Status RunOnce(Session* session, const std::vector<std::pair<std::string, Tensor>>& feeds,
               const std::vector<std::string>& fetches, std::vector<Tensor>* out) {
  RunOptions opts;
  opts.timeout_in_ms = 60000;  // a deadlock would fail here, not hang
  return session->Run(opts, feeds, fetches, {}, out);
}

}  // namespace

TEST_CASE("PartitionGraph gates the _Recvs of the bench's graph only when asked") {
  TwoDevices d;
  Scope root = Scope::NewRootScope();
  bench_graphs::BuildLateConsumerGraph(root, SmallParams(true));
  Graph g;
  REQUIRE(ImportGraphDef(test::ToDef(root), &g).ok());
  REQUIRE(PlaceGraph(&g, d.rt.device_manager(), PlacerOptions()).ok());
  for (bool late : {true, false}) {
    PartitionOptions po;
    po.schedule_recvs_late = late;
    std::vector<GraphPartition> parts;
    REQUIRE(PartitionGraph(g, po, &parts).ok());
    REQUIRE(parts.size() == 2);
    REQUIRE(parts[0].device == kCpu0);
    REQUIRE(parts[0].num_recvs == 3);
    int gated = 0;
    for (const auto& n : parts[0].graph.node())
      if (n.op() == "_Recv") gated += n.input_size();
    INFO("late: " << late);
    if (late) REQUIRE(gated > 0);  // the first value is needed too early to gate
    else REQUIRE(gated == 0);
    for (const auto& part : parts) RequireAcyclic(part.graph);
  }
}

TEST_CASE("PartitionGraph leaves a GPU partition that may be captured ungated: float32 feeds, and int32 labels "
          "read only as SparseSoftmaxCrossEntropyWithLogits's labels") {
  TwoDevices d;
  // The bench's graph with CPU:0's nodes moved to a GPU (by name: partitioning
  // needs no device), plus a cross-entropy whose int32 labels come from CPU:1.
  // Variants: labels read by the xent only; also by a Cast; a stateful op
  // (RandomUniform) beside; on CPU:0 as it is.
  for (const int variant : {0, 1, 2, 3}) {
    INFO("variant " << variant);
    Scope root = Scope::NewRootScope();
    bench_graphs::LateConsumerGraph lc = bench_graphs::BuildLateConsumerGraph(root, SmallParams(true));
    const Scope cpu0 = root.WithDevice("/device:CPU:0");
    Output labels = ops::Placeholder(root.WithDevice("/device:CPU:1").WithOpName("labels"), DT_INT32);
    ops::SparseSoftmaxCrossEntropyWithLogits(cpu0.WithOpName("xent"), lc.result, labels);
    // A variable updated there (exempt from the stateful ops' refusal).
    auto v = ops::Variable(cpu0.WithOpName("v"), PartialTensorShape(TensorShape{4}), DT_FLOAT);
    ops::ApplyGradientDescent(cpu0.WithOpName("update"), v, 0.5f, {1.f, 2.f, 3.f, 4.f});
    if (variant == 1) ops::Cast(cpu0.WithOpName("cast"), labels, DT_FLOAT);
    if (variant == 2) ops::RandomUniform(cpu0.WithOpName("random"), ops::Const(cpu0, {4}), DT_FLOAT);
    Graph g;
    REQUIRE(ImportGraphDef(test::ToDef(root), &g).ok());
    REQUIRE(PlaceGraph(&g, d.rt.device_manager(), PlacerOptions()).ok());
    const std::string target = variant < 3 ? test::kGpu : kCpu0;
    for (Node* n : g.nodes())
      if (n->assigned_device() == kCpu0) n->set_assigned_device(target);
    PartitionOptions po;
    po.schedule_recvs_late = true;
    std::vector<GraphPartition> parts;
    REQUIRE(PartitionGraph(g, po, &parts).ok());
    int gated = -1, recvs = 0;
    for (const auto& part : parts) {
      if (part.device != target) continue;
      gated = 0;
      for (const auto& n : part.graph.node())
        if (n.op() == "_Recv") recvs += 1, gated += n.input_size();
    }
    REQUIRE(recvs == 4);  // the 3 big tensors and the labels
    if (variant == 0) CHECK(gated == 0);  // a replay waits for every _Recv: none may wait for a node
    else CHECK(gated > 0);                // never captured (labels read on the host, a stateful op): scheduled
  }
}

TEST_CASE("sessions give the same results with _Recvs scheduled late or not") {
  TwoDevices d;
  SECTION("the bench's graphs") {
    for (bool expand : {true, false}) {
      const auto params = SmallParams(expand);
      Scope root = Scope::NewRootScope();
      const auto g = bench_graphs::BuildLateConsumerGraph(root, params);
      const proto::GraphDef def = test::ToDef(root);
      std::vector<std::vector<Tensor>> results;
      for (bool late : {true, false}) {
        Session session(d.Options(late));
        REQUIRE(session.Create(def).ok());
        results.emplace_back();
        Status s = RunOnce(&session, Feeds(g, params.n), {g.result.name()}, &results.back());
        INFO(s.ToString());
        REQUIRE(s.ok());
      }
      REQUIRE(test::Values<float>(results[0][0]) == test::Values<float>(results[1][0]));
    }
  }
  SECTION("tensors going back and forth between the devices") {
    Scope root = Scope::NewRootScope();
    const Scope cpu0 = root.WithDevice("/device:CPU:0"), cpu1 = root.WithDevice("/device:CPU:1");
    auto x = ops::Placeholder(cpu0.WithOpName("x"), DT_FLOAT);
    Output a = ops::Neg(cpu0, x);
    for (int i = 0; i < 6; ++i) a = ops::Neg(cpu0, a);
    auto far = ops::Square(cpu1, x);             // needed late on CPU:0
    auto there = ops::Mul(cpu1, ops::Neg(cpu0, x), 2.0f);  // CPU:0 -> CPU:1 ...
    auto back = ops::Add(cpu0, there, a);         // ... -> CPU:0
    ops::Add(cpu0.WithOpName("out"), ops::Add(cpu1, back, far), far);
    const proto::GraphDef def = test::ToDef(root);
    std::vector<std::vector<Tensor>> results;
    for (bool late : {true, false}) {
      Session session(d.Options(late));
      REQUIRE(session.Create(def).ok());
      results.emplace_back();
      Status s = RunOnce(&session, {{"x", test::MakeTensor<float>({1, -2, 3}, TensorShape{3})}}, {"out"},
                         &results.back());
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
    REQUIRE(test::Values<float>(results[0][0]) == test::Values<float>(results[1][0]));
    // a = -x (7 Negs), back = -2x + a = -3x, out = back + 2 x^2
    REQUIRE(test::Values<float>(results[0][0]) == std::vector<float>{-1, 14, 9});
  }
}

TEST_CASE("the bench's graph peaks lower in memory with _Recvs scheduled late") {
  // 6 tensors of 1 MiB made on CPU:0 from scalars CPU:1 sends at once, each
  // consumed further along a chain of 100 MatMuls. Received early, the Fills
  // run early and all 6 live together; gated, the next is made only after the
  // last was consumed (its gate comes later on the chain).
  TwoDevices d;
  bench_graphs::LateConsumerParams params;
  params.chain = 100;
  params.tensors = 6;
  params.elements = int64_t{1} << 18;
  params.n = 128;
  Scope root = Scope::NewRootScope();
  const auto g = bench_graphs::BuildLateConsumerGraph(root, params);
  const proto::GraphDef def = test::ToDef(root);
  const auto feeds = Feeds(g, params.n);
  Allocator* a = cpu_allocator();
  // The highest of 5 steps each: late, the next tensor is never made before
  // the last was consumed; early, how many are made before the chain reaches
  // the first consumer depends on when CPU:0 handles the Recvs' answers.
  int64_t peak[2] = {0, 0};  // late, asap
  for (int late = 1; late >= 0; --late) {
    Session session(d.Options(late == 1));
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out;
    REQUIRE(RunOnce(&session, feeds, {g.result.name()}, &out).ok());  // prepares
    for (int step = 0; step < 5; ++step) {
      out.clear();
      const int64_t base = a->bytes_in_use();
      a->ResetPeak();
      REQUIRE(RunOnce(&session, feeds, {g.result.name()}, &out).ok());
      peak[1 - late] = std::max(peak[1 - late], a->peak_bytes_in_use() - base);
    }
  }
  const int64_t mib = int64_t{1} << 20;
  INFO("peak with late Recvs " << peak[0] << " B, without " << peak[1] << " B");
  REQUIRE(peak[0] < 3 * mib);            // one tensor and its product at a time
  REQUIRE(peak[1] >= peak[0] + 1 * mib);  // at least one more (seen here: 6 MiB against 2)
}
