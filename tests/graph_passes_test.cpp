// Graph optimization passes: common subexpression elimination, constant
// folding, and the Session running with them on and off.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/graph/constant_folding.hpp"
#include "actorflow/graph/cse.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/optimize.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

GraphOptions NoPasses() {
  GraphOptions o;
  o.do_common_subexpression_elimination = false;
  o.do_constant_folding = false;
  return o;
}

// Runs `def` once in a new session with `graph_options`; REQUIREs success.
std::vector<Tensor> RunDef(const proto::GraphDef& def, const GraphOptions& graph_options,
                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches) {
  SessionOptions so;
  so.graph_options = graph_options;
  Session session(so);
  REQUIRE(session.Create(def).ok());
  RunOptions ro;
  ro.timeout_in_ms = 60'000;
  std::vector<Tensor> out;
  Status s = session.Run(ro, feeds, fetches, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

std::vector<Tensor> RunGraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                            const std::vector<std::string>& fetches) {
  proto::GraphDef def;
  g.ToGraphDef(&def);
  return RunDef(def, NoPasses(), feeds, fetches);
}

// "src:port" of data input i of the node named `name`.
std::string InputOf(const Graph& g, const std::string& name, int i) {
  const Node* n = g.FindNode(name);
  REQUIRE(n != nullptr);
  const Edge* e = n->input_edge(i);
  REQUIRE(e != nullptr);
  return e->src->name() + ":" + std::to_string(e->src_output);
}

bool HasControlFrom(const Graph& g, const std::string& dst, const std::string& src) {
  for (const Edge* e : g.FindNode(dst)->in_edges())
    if (e->IsControlEdge() && e->src->name() == src) return true;
  return false;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         (a.TotalBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0);
}

// The value of the Const node `n`.
Tensor ConstValue(const Node* n) {
  REQUIRE(n->type_string() == "Const");
  Tensor t;
  REQUIRE(TensorFromProto(n->def().attr().at("value").tensor(), &t).ok());
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------
// Graph edits the passes rely on.

TEST_CASE("ReplaceEdgeSource moves an edge and keeps control edges unique; RemoveNodes removes in one pass") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a"), 1.f);
  auto b = ops::Const(root.WithOpName("b"), 2.f);
  auto y = ops::Neg(root.WithOpName("y"), a);
  auto z = ops::Identity(root.WithOpName("z").WithControlDependencies({a.op(), b.op()}), y);
  REQUIRE(root.ok());
  Graph* g = root.graph();
  const Edge* e = g->FindNode("y")->input_edge(0);
  const Edge* moved = g->ReplaceEdgeSource(e, b.node(), 0);
  REQUIRE(moved == e);
  REQUIRE(InputOf(*g, "y", 0) == "b:0");
  REQUIRE(b.node()->out_edges().size() == 2);  // y's data, z's control
  REQUIRE(a.node()->out_edges().size() == 1);  // z's control only
  // z's control edge from a, moved to b, meets the one already there: one remains.
  const Edge* ctrl = nullptr;
  for (const Edge* in : z.node()->in_edges())
    if (in->IsControlEdge() && in->src == a.node()) ctrl = in;
  REQUIRE(ctrl != nullptr);
  REQUIRE(g->ReplaceEdgeSource(ctrl, b.node(), kControlSlot) != nullptr);
  REQUIRE(z.node()->in_edges().size() == 2);
  REQUIRE(HasControlFrom(*g, "z", "b"));
  REQUIRE(!HasControlFrom(*g, "z", "a"));
  REQUIRE(g->ReplaceEdgeSource(g->FindNode("y")->input_edge(0), a.node(), kControlSlot) == nullptr);
  REQUIRE(ValidateGraph(*g).ok());

  g->RemoveNodes({y.node(), z.node(), y.node()});
  REQUIRE(g->num_nodes() == 2);
  REQUIRE(g->FindNode("y") == nullptr);
  REQUIRE(b.node()->out_edges().empty());
  REQUIRE(ValidateGraph(*g).ok());
}

// ---------------------------------------------------------------------------
// Common subexpression elimination.

TEST_CASE("CSE merges equal nodes, parents first, and rewires data and control consumers to the first") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto c1 = ops::Const(root.WithOpName("c1"), {1.f, 2.f});
  auto c2 = ops::Const(root.WithOpName("c2"), {1.f, 2.f});
  auto a1 = ops::Add(root.WithOpName("a1"), x, c1);
  auto a2 = ops::Add(root.WithOpName("a2"), x, c2);  // equal once c2 is c1
  auto n1 = ops::Neg(root.WithOpName("n1"), a1);
  auto n2 = ops::Neg(root.WithOpName("n2"), a2);     // equal once a2 is a1
  ops::Mul(root.WithOpName("y"), n1, n2);
  ops::Identity(root.WithOpName("z").WithControlDependencies({n2.op()}), x);
  REQUIRE(root.ok());
  const Tensor xv = MakeTensor<float>({3, 4}, {2});
  const auto before = RunGraph(*root.graph(), {{"x", xv}}, {"y", "z"});

  Graph* g = root.graph();
  const int nodes = g->num_nodes();
  int removed = -1;
  REQUIRE(EliminateCommonSubexpressions(g, &removed).ok());
  REQUIRE(removed == 3);
  REQUIRE(g->num_nodes() == nodes - 3);
  for (const char* gone : {"c2", "a2", "n2"}) REQUIRE(g->FindNode(gone) == nullptr);
  REQUIRE(InputOf(*g, "a1", 1) == "c1:0");
  REQUIRE(InputOf(*g, "y", 0) == "n1:0");
  REQUIRE(InputOf(*g, "y", 1) == "n1:0");
  REQUIRE(HasControlFrom(*g, "z", "n1"));
  REQUIRE(ValidateGraph(*g).ok());

  const auto after = RunGraph(*g, {{"x", xv}}, {"y", "z"});
  REQUIRE(Values<float>(after[0]) == std::vector<float>{16, 36});
  REQUIRE(SameBits(before[0], after[0]));
  REQUIRE(SameBits(before[1], after[1]));

  int again = -1;
  REQUIRE(EliminateCommonSubexpressions(g, &again).ok());
  REQUIRE(again == 0);
}

TEST_CASE("CSE keeps the node with the smallest id whatever the topological order") {
  // b2 reads pa, which comes first, so b2 is ready (and numbered) before b1;
  // b1 was created first and survives.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto pa = ops::Identity(root.WithOpName("pa"), x);
  auto pb = ops::Identity(root.WithOpName("pb"), x);
  auto b1 = ops::Neg(root.WithOpName("b1"), pb);
  auto b2 = ops::Neg(root.WithOpName("b2"), pa);
  ops::Add(root.WithOpName("y"), b1, b2);
  REQUIRE(root.ok());
  Graph* g = root.graph();
  std::vector<Node*> order;
  REQUIRE(TopologicalOrder(*g, &order).ok());
  REQUIRE(std::find(order.begin(), order.end(), b2.node()) < std::find(order.begin(), order.end(), b1.node()));
  REQUIRE(EliminateCommonSubexpressions(g).ok());
  REQUIRE(g->FindNode("pb") == nullptr);
  REQUIRE(g->FindNode("b2") == nullptr);
  REQUIRE(InputOf(*g, "b1", 0) == "pa:0");
  REQUIRE(InputOf(*g, "y", 1) == "b1:0");
}

TEST_CASE("CSE compares attrs canonically: map order does not matter, values do, bit for bit") {
  Graph g;
  const std::string cast = "op: 'Cast' input: 'x' ";
  const std::string f32 = "attr { key: 'SrcT' value { type: DT_FLOAT } } ";
  Status s = Import(
      "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
      "node { name: 'c1' " + cast + f32 + "attr { key: 'DstT' value { type: DT_INT32 } } "
      "attr { key: 'Truncate' value { b: false } } }\n"
      "node { name: 'c2' " + cast + "attr { key: 'Truncate' value { b: false } } "
      "attr { key: 'DstT' value { type: DT_INT32 } } " + f32 + "}\n"
      "node { name: 'c3' " + cast + f32 + "attr { key: 'DstT' value { type: DT_INT64 } } }\n"
      "node { name: 'z1' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } "
      "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.0 } } } }\n"
      "node { name: 'z2' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } "
      "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: -0.0 } } } }\n"
      "node { name: 'z3' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} "
      "float_val: 0.0 } } } attr { key: 'dtype' value { type: DT_FLOAT } } }\n",
      &g);
  INFO(s.ToString());
  REQUIRE(s.ok());
  int removed = -1;
  REQUIRE(EliminateCommonSubexpressions(&g, &removed).ok());
  REQUIRE(removed == 2);
  REQUIRE(g.FindNode("c2") == nullptr);  // same attrs, listed in another order
  REQUIRE(g.FindNode("c3") != nullptr);  // another DstT
  REQUIRE(g.FindNode("z2") != nullptr);  // -0.0 is not 0.0
  REQUIRE(g.FindNode("z3") == nullptr);
}

TEST_CASE("CSE does not merge nodes with different inputs, input order, control inputs or devices") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
  auto c = ops::Const(root.WithOpName("c"), 2.f);
  auto s1 = ops::Sub(root.WithOpName("s1"), x, c);
  auto s2 = ops::Sub(root.WithOpName("s2"), c, x);                                     // input order
  auto s3 = ops::Sub(root.WithOpName("s3"), w, c);                                     // another input
  auto s4 = ops::Sub(root.WithOpName("s4").WithDevice("/device:CPU:0"), x, c);         // requested device
  auto s5 = ops::Sub(root.WithOpName("s5").WithControlDependencies({s2.op()}), x, c);  // control input
  auto s6 = ops::Sub(root.WithOpName("s6").WithControlDependencies({s2.op()}), x, c);  // same as s5
  auto p1 = ops::Placeholder(root.WithOpName("p1"), DT_FLOAT);
  auto p2 = ops::Placeholder(root.WithOpName("p2"), DT_FLOAT);
  ops::AddN(root.WithOpName("y"), std::vector<Input>{s1, s2, s3, s4, s5, s6, p1, p2});
  REQUIRE(root.ok());
  int removed = -1;
  REQUIRE(EliminateCommonSubexpressions(root.graph(), &removed).ok());
  REQUIRE(removed == 1);
  REQUIRE(root.graph()->FindNode("s6") == nullptr);
  REQUIRE(InputOf(*root.graph(), "y", 5) == "s5:0");
  REQUIRE(root.graph()->FindNode("p2") != nullptr);  // placeholders stand for feeds
}

TEST_CASE("CSE never merges stateful ops: random ops and variables") {
  Scope root = Scope::NewRootScope();
  auto r1 = ops::RandomUniform(root.WithOpName("r1"), {3}, DT_FLOAT, 7);
  auto r2 = ops::RandomUniform(root.WithOpName("r2"), {3}, DT_FLOAT, 7);
  // Same attrs exactly (seed and seed2 7 both): only statefulness keeps them apart.
  *r2.node()->mutable_def()->mutable_attr() = r1.node()->def().attr();
  auto v1 = ops::Variable(root.WithOpName("v1"), PartialTensorShape(std::vector<int64_t>{2}), DT_FLOAT, "", "v");
  auto v2 = ops::Variable(root.WithOpName("v2"), PartialTensorShape(std::vector<int64_t>{2}), DT_FLOAT, "", "v");
  auto a1 = ops::Assign(root.WithOpName("a1"), v1, {1.f, 2.f});
  auto a2 = ops::Assign(root.WithOpName("a2"), v1, {1.f, 2.f});
  ops::AddN(root.WithOpName("y"), std::vector<Input>{r1, r2});
  ops::AddN(root.WithOpName("u"), std::vector<Input>{a1, a2, v2});
  REQUIRE(root.ok());
  int removed = -1;
  REQUIRE(EliminateCommonSubexpressions(root.graph(), &removed).ok());
  for (const char* kept : {"r1", "r2", "v1", "v2", "a1", "a2"}) REQUIRE(root.graph()->FindNode(kept) != nullptr);
  REQUIRE(removed == 2);  // only the equal shape and value Consts
}

// ---------------------------------------------------------------------------
// Constant folding.

TEST_CASE("folding replaces a Const subgraph by one Const with its value, dtype and shape") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_INT32);
  auto c1 = ops::Const(root.WithOpName("c1"), {{1, 2, 3}, {4, 5, 6}});
  auto c2 = ops::Const(root.WithOpName("c2"), {{6, 5, 4}, {3, 2, 1}});
  auto sum = ops::Add(root.WithOpName("sum"), c1, c2);
  auto prod = ops::Mul(root.WithOpName("prod").WithDevice("/device:CPU:0"), sum, c1);
  ops::Sub(root.WithOpName("y"), x, prod);
  auto rows = ops::Unstack(root.WithOpName("rows"), c2, 2);
  ops::Add(root.WithOpName("r"), rows[0], rows[1]);  // a leaf (a target): stays, its inputs fold
  ops::Mul(root.WithOpName("q"), ops::Identity(root.WithOpName("rows1"), rows[1]), x);
  REQUIRE(root.ok());
  const Tensor xv = MakeTensor<int32_t>({1, 1, 1, 1, 1, 1}, {2, 3});
  const auto before = RunGraph(*root.graph(), {{"x", xv}}, {"y", "r", "q"});

  Graph* g = root.graph();
  bool changed = false;
  REQUIRE(FoldConstants(g, Cpu(), ConstantFoldingOptions(), &changed).ok());
  REQUIRE(changed);
  for (const char* gone : {"c1", "c2", "sum", "prod", "rows", "rows1"}) {
    INFO(gone);
    REQUIRE(g->FindNode(gone) == nullptr);
  }
  const Node* folded = g->FindNode("prod/_folded_0");
  REQUIRE(folded != nullptr);
  REQUIRE(folded->requested_device() == "/device:CPU:0");
  REQUIRE(InputOf(*g, "y", 1) == "prod/_folded_0:0");
  const Tensor v = ConstValue(folded);
  REQUIRE(v.dtype() == DT_INT32);
  REQUIRE(v.shape() == TensorShape({2, 3}));
  REQUIRE(Values<int32_t>(v) == std::vector<int32_t>{7, 14, 21, 28, 35, 42});
  REQUIRE(InputOf(*g, "q", 0) == "rows1/_folded_0:0");
  REQUIRE(Values<int32_t>(ConstValue(g->FindNode("rows1/_folded_0"))) == std::vector<int32_t>{3, 2, 1});
  REQUIRE(InputOf(*g, "r", 0) == "rows/_folded_0:0");  // one Const per consumed output
  REQUIRE(InputOf(*g, "r", 1) == "rows/_folded_1:0");
  REQUIRE(Values<int32_t>(ConstValue(g->FindNode("rows/_folded_1"))) == std::vector<int32_t>{3, 2, 1});
  REQUIRE(CountOp(*g, "Const") == 4);
  REQUIRE(g->num_nodes() == 8);  // and x, y, q, r
  REQUIRE(ValidateGraph(*g).ok());

  const auto after = RunGraph(*g, {{"x", xv}}, {"y", "r", "q"});
  for (int i = 0; i < 3; ++i) REQUIRE(SameBits(before[i], after[i]));

  REQUIRE(FoldConstants(g, Cpu(), ConstantFoldingOptions(), &changed).ok());
  REQUIRE(!changed);
}

TEST_CASE("folding leaves alone what reaches a Placeholder or a stateful op, and names stay unique") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto c = ops::Const(root.WithOpName("c"), {1.f, 2.f, 3.f});
  auto fed = ops::Add(root.WithOpName("fed"), x, c);
  auto rnd = ops::RandomUniform(root.WithOpName("rnd"), {3}, DT_FLOAT, 1);
  auto noisy = ops::Mul(root.WithOpName("noisy"), rnd, ops::Neg(root.WithOpName("neg"), c));
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{3}), DT_FLOAT);
  auto read = ops::Identity(root.WithOpName("read"), v);
  ops::Const(root.WithOpName("neg/_folded_0"), 0.f);  // the name a folded "neg" would take
  ops::AddN(root.WithOpName("y"), std::vector<Input>{fed, noisy, read});
  REQUIRE(root.ok());
  Graph* g = root.graph();
  bool changed = false;
  REQUIRE(FoldConstants(g, Cpu(), ConstantFoldingOptions(), &changed).ok());
  REQUIRE(changed);
  for (const char* kept : {"x", "c", "fed", "rnd", "noisy", "v", "read", "y"}) {
    INFO(kept);
    REQUIRE(g->FindNode(kept) != nullptr);
  }
  REQUIRE(g->FindNode("neg") == nullptr);
  REQUIRE(InputOf(*g, "noisy", 1) == "neg/_folded_0_1:0");
  REQUIRE(Values<float>(ConstValue(g->FindNode("neg/_folded_0_1"))) == std::vector<float>{-1, -2, -3});
  REQUIRE(g->FindNode("rnd")->input_edge(0)->src->type_string() == "Const");  // its shape, as it was
  REQUIRE(ValidateGraph(*g).ok());
}

TEST_CASE("folding leaves results over the size limit to run time, folding their inputs instead") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto value = ops::Add(root.WithOpName("value"), ops::Const(root.WithOpName("a"), 1.5f),
                        ops::Const(root.WithOpName("b"), 2.f));
  auto big = ops::Fill(root.WithOpName("big"), ops::Const(root.WithOpName("dims"), {100}), value);  // 400 bytes
  auto sq = ops::Square(root.WithOpName("sq"), big);                                                // 400 bytes
  auto total = ops::Sum(root.WithOpName("total"), sq, 0);                                           // 4 bytes
  ops::Add(root.WithOpName("y"), ops::Add(root, x, sq), total);
  REQUIRE(root.ok());
  const auto before = RunGraph(*root.graph(), {{"x", Tensor::Scalar<float>(1)}}, {"y"});

  ConstantFoldingOptions options;
  options.max_constant_size_in_bytes = 100;
  Graph* g = root.graph();
  bool changed = false;
  REQUIRE(FoldConstants(g, Cpu(), options, &changed).ok());
  REQUIRE(changed);
  REQUIRE(g->FindNode("sq") != nullptr);   // too large to be a Const
  REQUIRE(g->FindNode("big") != nullptr);  // its output feeds sq, which runs
  REQUIRE(g->FindNode("dims") != nullptr);
  REQUIRE(g->FindNode("value") == nullptr);  // a scalar: folded
  REQUIRE(InputOf(*g, "big", 1) == "value/_folded_0:0");
  REQUIRE(g->FindNode("total") == nullptr);  // small, though computed from sq
  REQUIRE(Values<float>(ConstValue(g->FindNode("total/_folded_0"))) == std::vector<float>{100 * 3.5f * 3.5f});
  const auto after = RunGraph(*g, {{"x", Tensor::Scalar<float>(1)}}, {"y"});
  REQUIRE(SameBits(before[0], after[0]));

  // Under the default limit (10 MiB) everything folds.
  Scope root2 = Scope::NewRootScope();
  auto x2 = ops::Placeholder(root2.WithOpName("x"), DT_FLOAT);
  ops::Add(root2.WithOpName("y"), x2, ops::Square(root2.WithOpName("sq"), ops::Fill(root2, {100}, 3.5f)));
  REQUIRE(FoldConstants(root2.graph(), Cpu(), ConstantFoldingOptions(), &changed).ok());
  REQUIRE(root2.graph()->num_nodes() == 3);
  // The kill switch changes nothing.
  Scope root3 = Scope::NewRootScope();
  ops::Square(root3.WithOpName("sq"), ops::Fill(root3, {100}, 3.5f));
  const int nodes = root3.graph()->num_nodes();
  options.enabled = false;
  REQUIRE(FoldConstants(root3.graph(), Cpu(), options, &changed).ok());
  REQUIRE(!changed);
  REQUIRE(root3.graph()->num_nodes() == nodes);
}

TEST_CASE("folding keeps the control dependencies the folded nodes had on the rest of the graph") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape::Scalar(), DT_FLOAT);
  auto init = ops::Assign(root.WithOpName("init"), v, 1.f);
  auto c = ops::Const(root.WithOpName("c").WithControlDependencies({init.op()}), 2.f);
  auto d = ops::Const(root.WithOpName("d"), 3.f);
  auto sum = ops::Add(root.WithOpName("sum"), c, d);
  ops::Mul(root.WithOpName("y"), x, sum);
  ops::Identity(root.WithOpName("z").WithControlDependencies({sum.op()}), x);
  REQUIRE(root.ok());
  Graph* g = root.graph();
  REQUIRE(FoldConstants(g, Cpu(), ConstantFoldingOptions()).ok());
  REQUIRE(g->FindNode("sum") == nullptr);
  REQUIRE(g->FindNode("c") == nullptr);
  REQUIRE(InputOf(*g, "y", 1) == "sum/_folded_0:0");
  REQUIRE(HasControlFrom(*g, "sum/_folded_0", "init"));
  REQUIRE(HasControlFrom(*g, "z", "init"));  // z waited on sum, which waited on init
  REQUIRE(g->FindNode("z")->in_edges().size() == 2);
  REQUIRE(ValidateGraph(*g).ok());
}

TEST_CASE("a kernel failing during folding leaves its node to fail at run time, naming it") {
  const std::string text =
      "node { name: 'v' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } "
      "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } "
      "float_val: [1, 2, 3] } } } }\n"
      "node { name: 'shape' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } } "
      "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: [2, 2] } } } }\n"
      "node { name: 'bad' op: 'Reshape' input: 'v' input: 'shape' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "node { name: 'y' op: 'Neg' input: 'bad' attr { key: 'T' value { type: DT_FLOAT } } }\n";
  Graph g;
  REQUIRE(Import(text, &g).ok());
  bool changed = true;
  REQUIRE(FoldConstants(&g, Cpu(), ConstantFoldingOptions(), &changed).ok());
  REQUIRE(!changed);
  REQUIRE(g.num_nodes() == 4);

  proto::GraphDef def;
  REQUIRE(ParseGraphDefText(text, &def).ok());
  Session session;
  REQUIRE(session.Create(def).ok());
  std::vector<Tensor> out;
  RunOptions ro;
  ro.timeout_in_ms = 60'000;
  Status s = session.Run(ro, {}, {"y"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'bad'"));
}

// ---------------------------------------------------------------------------
// The passes in a Session.

TEST_CASE("with the passes on, feeds still win over folded values") {
  Scope root = Scope::NewRootScope();
  auto c = ops::Const(root.WithOpName("c"), 2.f);
  auto sum = ops::Add(root.WithOpName("sum"), c, 3.f);
  ops::Mul(root.WithOpName("y"), sum, 10.f);
  const proto::GraphDef def = ToDef(root);
  const GraphOptions on;
  REQUIRE(RunDef(def, on, {}, {"y"})[0].scalar<float>() == 50.f);
  REQUIRE(RunDef(def, on, {{"c", Tensor::Scalar<float>(4)}}, {"y"})[0].scalar<float>() == 70.f);
  REQUIRE(RunDef(def, on, {{"sum", Tensor::Scalar<float>(1)}}, {"y", "sum"})[0].scalar<float>() == 10.f);
  // One session, both signatures: each is optimized for its own feeds.
  Session session;
  REQUIRE(session.Create(def).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {"y"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == 50.f);
  REQUIRE(session.Run({{"sum", Tensor::Scalar<float>(-1)}}, {"y"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == -10.f);
}

TEST_CASE("a Session optimizes each pruned graph unless its GraphOptions say no") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto k = ops::Mul(root.WithOpName("k"), ops::Add(root.WithOpName("sum"), 2.f, 3.f), 10.f);
  auto a1 = ops::Add(root.WithOpName("a1"), x, k);
  auto a2 = ops::Add(root.WithOpName("a2"), x, k);
  ops::Sub(root.WithOpName("y"), a1, a2);
  const proto::GraphDef def = ToDef(root);
  // The ops that ran, by the step's stats.
  auto ran = [&def](const GraphOptions& graph_options) {
    SessionOptions so;
    so.graph_options = graph_options;
    Session session(so);
    REQUIRE(session.Create(def).ok());
    RunOptions ro;
    ro.timeout_in_ms = 60'000;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    std::vector<Tensor> out;
    RunMetadata md;
    REQUIRE(session.Run(ro, {{"x", Tensor::Scalar<float>(1)}}, {"y"}, {}, &out, &md).ok());
    REQUIRE(out[0].scalar<float>() == 0.f);
    std::multiset<std::string> ops;
    for (const auto& st : md.step_stats) ops.insert(st.op);
    return ops;
  };
  const auto plain = ran(NoPasses());
  REQUIRE(plain.count("Add") == 3);
  REQUIRE(plain.count("Mul") == 1);
  REQUIRE(plain.count("Const") == 3);
  const auto optimized = ran(GraphOptions());
  REQUIRE(optimized.count("Add") == 1);  // a1 and a2 merged, sum folded
  REQUIRE(optimized.count("Mul") == 0);  // folded
  REQUIRE(optimized.count("Const") == 1);
  GraphOptions cse_only;
  cse_only.do_constant_folding = false;
  const auto merged = ran(cse_only);
  REQUIRE(merged.count("Add") == 2);
  REQUIRE(merged.count("Mul") == 1);
}

TEST_CASE("on random graphs a session's results with both passes on equal those with both off, bit for bit") {
  std::mt19937 rng(20240611);
  const char* kBinary[] = {"Add", "Mul", "Sub"};
  const char* kUnary[] = {"Neg", "Square", "Identity"};
  int total_cse = 0, total_folded = 0;
  for (int graph = 0; graph < 30; ++graph) {
    INFO("graph " << graph);
    Scope root = Scope::NewRootScope();
    std::vector<Output> outs;
    std::vector<std::pair<std::string, Tensor>> feeds;
    const int num_placeholders = graph % 4 == 0 ? 0 : 1 + static_cast<int>(rng() % 2);
    for (int p = 0; p < num_placeholders; ++p) {
      const std::string name = "x" + std::to_string(p);
      outs.push_back(ops::Placeholder(root.WithOpName(name), DT_FLOAT));
      std::vector<float> v(4);
      for (auto& e : v) e = std::uniform_real_distribution<float>(-2, 2)(rng);
      feeds.push_back({name, MakeTensor<float>(v, {4})});
    }
    const int num_consts = 2 + static_cast<int>(rng() % 3);
    for (int c = 0; c < num_consts; ++c) {
      if (rng() % 2) {
        outs.push_back(ops::Const(root, std::uniform_real_distribution<float>(-2, 2)(rng)));
      } else {
        std::vector<float> v(4);
        for (auto& e : v) e = std::uniform_real_distribution<float>(-2, 2)(rng);
        outs.push_back(ops::Const(root, MakeTensor<float>(v, {4})));
      }
    }
    const int num_ops = 15 + static_cast<int>(rng() % 20);
    for (int i = 0; i < num_ops; ++i) {
      auto pick = [&] { return outs[rng() % outs.size()]; };
      Output a = pick(), b = pick();
      if (rng() % 2) {
        outs.push_back(root.AddOp(kBinary[rng() % 3], {{a}, {b}}).output(0));
      } else {
        outs.push_back(root.AddOp(kUnary[rng() % 3], {{a}}).output(0));
      }
      if (rng() % 4 == 0) {  // a duplicate, for CSE
        const Node* n = outs.back().node();
        std::vector<OutputList> args;
        for (int k = 0; k < n->num_inputs(); ++k) args.push_back({Operation(outs.back().node()).input(k)});
        outs.push_back(root.AddOp(n->type_string(), args).output(0));
      }
    }
    REQUIRE(root.ok());
    std::vector<std::string> fetches;
    for (int f = 0; f < 4; ++f) fetches.push_back(outs[outs.size() - 1 - rng() % (outs.size() / 2)].name());
    const proto::GraphDef def = ToDef(root);

    const auto plain = RunDef(def, NoPasses(), feeds, fetches);
    const auto optimized = RunDef(def, GraphOptions(), feeds, fetches);
    REQUIRE(plain.size() == optimized.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      INFO(fetches[i] << ": " << plain[i].DebugString() << " vs " << optimized[i].DebugString());
      REQUIRE(SameBits(plain[i], optimized[i]));
    }

    // The passes did something on these graphs (counted on a copy).
    Graph g;
    REQUIRE(ImportGraphDef(def, &g).ok());
    int removed = 0;
    bool changed = false;
    REQUIRE(EliminateCommonSubexpressions(&g, &removed).ok());
    REQUIRE(FoldConstants(&g, Cpu(), ConstantFoldingOptions(), &changed).ok());
    total_cse += removed;
    total_folded += changed;
  }
  REQUIRE(total_cse > 10);
  REQUIRE(total_folded > 10);
}

TEST_CASE("OptimizeGraph runs CSE, folding and CSE again: equal folded results become one Const") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto f1 = ops::Neg(root.WithOpName("f1"), ops::Const(root, {1.f, 2.f}));
  auto f2 = ops::Sub(root.WithOpName("f2"), ops::Const(root, {0.f, 0.f}), ops::Const(root, {1.f, 2.f}));
  auto u = ops::Add(root.WithOpName("u"), x, f1);
  auto w = ops::Add(root.WithOpName("w"), x, f2);
  ops::Add(root.WithOpName("y"), u, w);
  REQUIRE(root.ok());
  Graph* g = root.graph();
  REQUIRE(OptimizeGraph(g, Cpu(), GraphOptions()).ok());
  // f1 and f2 fold to equal Consts, which merge; then u and w are equal and merge too.
  REQUIRE(CountOp(*g, "Const") == 1);
  REQUIRE(g->FindNode("w") == nullptr);
  REQUIRE(InputOf(*g, "y", 0) == "u:0");
  REQUIRE(InputOf(*g, "y", 1) == "u:0");

  Scope off = Scope::NewRootScope();
  ops::Neg(off.WithOpName("n"), ops::Const(off, 1.f));
  const int nodes = off.graph()->num_nodes();
  REQUIRE(OptimizeGraph(off.graph(), Cpu(), NoPasses()).ok());
  REQUIRE(off.graph()->num_nodes() == nodes);
}
