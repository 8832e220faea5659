// MatMul -> BiasAdd [-> activation] fusion (graph/remapper.hpp) and the
// _FusedMatMul CPU kernel (ops/math/matmul_op.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/remapper.hpp"
#include "actorflow/ops/attrs.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

Tensor Random(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor t(DT_FLOAT, cols < 0 ? TensorShape{rows} : TensorShape{rows, cols});
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Runs `def` in a session with remapping on or off, fetching `fetch`;
// `ops` gets the op of every node that ran.
Tensor RunOnce(const proto::GraphDef& def, bool remap, const std::vector<std::pair<std::string, Tensor>>& feeds,
               const std::string& fetch, std::vector<std::string>* ops) {
  SessionOptions so;
  so.graph_options.do_remapping = remap;
  Session session(so);
  REQUIRE(session.Create(def).ok());
  RunOptions ro;
  ro.timeout_in_ms = 120'000;
  ro.trace_level = TraceLevel::kSoftwareTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  Status s = session.Run(ro, feeds, {fetch}, {}, &out, &md);
  INFO(s.ToString());
  REQUIRE(s.ok());
  for (const NodeExecStats& st : md.step_stats) ops->push_back(st.op);
  return out[0];
}

// A text-format GraphDef: float32 Placeholders named `inputs`, and the node
// `name` of the fused `op` on them (T float32, one argument) with `attrs`.
std::string FusedGraph(const std::vector<std::string>& inputs, const std::string& name, const std::string& op,
                       const std::string& attrs) {
  std::string text, node = "node { name: \"" + name + "\" op: \"" + op + "\"";
  for (const std::string& n : inputs) {
    text += "node { name: \"" + n + "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n";
    node += " input: \"" + n + "\"";
  }
  return text + node + R"pb( attr { key: "T" value { type: DT_FLOAT } } attr { key: "num_args" value { i: 1 } } )pb" +
         attrs + "}\n";
}

int Count(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

}  // namespace

TEST_CASE("remapper: MatMul -> BiasAdd -> Relu becomes one _FusedMatMul named as the Relu, taking its edges") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  auto before = ops::NoOp(root.WithOpName("before"));
  auto before_ba = ops::NoOp(root.WithOpName("before_ba"));
  auto before_relu = ops::NoOp(root.WithOpName("before_relu"));
  auto mm = ops::MatMul(root.WithOpName("mm").WithControlDependencies({before}), x, w, false, true);
  auto ba = ops::BiasAdd(root.WithOpName("ba").WithControlDependencies({before_ba}), mm, b);
  auto relu = ops::Relu(root.WithOpName("relu").WithControlDependencies({before_relu}), ba);
  ops::Identity(root.WithOpName("out"), relu);
  ops::NoOp(root.WithOpName("after").WithControlDependencies({relu.op()}));
  REQUIRE(root.ok());
  Graph* g = root.graph();
  AssignAll(g, kCpu);
  // Internal attrs come from the node whose output the fused node sends (partitioning reads
  // _wire_compression there), none from the others.
  (*g->FindNode("relu")->mutable_def()->mutable_attr())["_wire_compression"] = AttrString("truncate16");
  (*g->FindNode("mm")->mutable_def()->mutable_attr())["_wire_compression"] = AttrString("none");
  (*g->FindNode("mm")->mutable_def()->mutable_attr())["_class"] = AttrStringList({"loc:@w"});
  int fused = -1;
  REQUIRE(FuseMatMulChains(g, &fused).ok());
  REQUIRE(fused == 1);
  REQUIRE(CountOp(*g, "MatMul") + CountOp(*g, "BiasAdd") + CountOp(*g, "Relu") == 0);
  const Node* f = g->FindNode("relu");
  REQUIRE(f != nullptr);
  REQUIRE(f->type_string() == "_FusedMatMul");
  REQUIRE(f->assigned_device() == kCpu);
  std::vector<std::string> fused_ops;
  REQUIRE(GetNodeAttr(f->def(), "fused_ops", &fused_ops).ok());
  REQUIRE(fused_ops == std::vector<std::string>{"BiasAdd", "Relu"});
  bool tb = false;
  REQUIRE(GetNodeAttr(f->def(), "transpose_b", &tb).ok());
  REQUIRE(tb);
  REQUIRE(f->num_inputs() == 3);
  REQUIRE(f->input_edge(0)->src->name() == "x");
  REQUIRE(f->input_edge(1)->src->name() == "w");
  REQUIRE(f->input_edge(2)->src->name() == "b");
  std::string compression;
  REQUIRE(GetNodeAttr(f->def(), "_wire_compression", &compression).ok());
  REQUIRE(compression == "truncate16");
  REQUIRE(!HasNodeAttr(f->def(), "_class"));
  // Every member's control inputs, once each, and the Relu's consumers, data and control.
  std::multiset<std::string> control_in;
  bool control_out = false;
  for (const Edge* e : f->in_edges())
    if (e->IsControlEdge()) control_in.insert(e->src->name());
  for (const Edge* e : f->out_edges()) control_out |= e->IsControlEdge() && e->dst->name() == "after";
  REQUIRE(control_in == std::multiset<std::string>{"before", "before_ba", "before_relu"});
  REQUIRE(control_out);
  REQUIRE(g->FindNode("out")->input_edge(0)->src == f);
}

TEST_CASE("remapper: a chain stops where an intermediate has another reader, a control consumer or another device") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  // 1: the pre-activation is read twice: MatMul+BiasAdd fuse, the Relu stays.
  auto ba1 = ops::BiasAdd(root.WithOpName("ba1"), ops::MatMul(root.WithOpName("mm1"), x, w), b);
  ops::Relu(root.WithOpName("relu1"), ba1);
  ops::Identity(root.WithOpName("read1"), ba1);
  // 2: the product is read twice: nothing fuses.
  auto mm2 = ops::MatMul(root.WithOpName("mm2"), x, w);
  ops::BiasAdd(root.WithOpName("ba2"), mm2, b);
  ops::Identity(root.WithOpName("read2"), mm2);
  // 3: something waits on the product: nothing fuses.
  auto mm3 = ops::MatMul(root.WithOpName("mm3"), x, w);
  ops::BiasAdd(root.WithOpName("ba3"), mm3, b);
  ops::NoOp(root.WithOpName("wait3").WithControlDependencies({mm3.op()}));
  // 4: float64: nothing fuses.
  auto xd = ops::Placeholder(root.WithOpName("xd"), DT_DOUBLE);
  ops::BiasAdd(root.WithOpName("ba4"), ops::MatMul(root.WithOpName("mm4"), xd, xd), ops::Placeholder(root, DT_DOUBLE));
  // 5: an activation that is not fused (Tanh): MatMul+BiasAdd fuse, named as the BiasAdd.
  ops::Tanh(root.WithOpName("tanh5"), ops::BiasAdd(root.WithOpName("ba5"), ops::MatMul(root.WithOpName("mm5"), x, w), b));
  REQUIRE(root.ok());
  Graph* g = root.graph();
  AssignAll(g, kCpu);
  SECTION("on a CPU") {
    int fused = -1;
    REQUIRE(FuseMatMulChains(g, &fused).ok());
    REQUIRE(fused == 2);
    REQUIRE(g->FindNode("ba1")->type_string() == "_FusedMatMul");
    REQUIRE(g->FindNode("relu1")->type_string() == "Relu");
    REQUIRE(g->FindNode("relu1")->input_edge(0)->src == g->FindNode("ba1"));
    REQUIRE(g->FindNode("read1")->input_edge(0)->src == g->FindNode("ba1"));
    for (const char* kept : {"mm2", "mm3", "mm4"}) REQUIRE(g->FindNode(kept)->type_string() == "MatMul");
    REQUIRE(g->FindNode("ba5")->type_string() == "_FusedMatMul");
    REQUIRE(g->FindNode("tanh5")->type_string() == "Tanh");
  }
  SECTION("across two CPU devices nothing fuses") {
    g->FindNode("ba5")->set_assigned_device(kCpu1);
    int fused = -1;
    REQUIRE(FuseMatMulChains(g, &fused).ok());
    REQUIRE(fused == 1);  // mm1 + ba1 only
    REQUIRE(g->FindNode("mm5")->type_string() == "MatMul");
    REQUIRE(g->FindNode("ba5")->type_string() == "BiasAdd");
  }
  SECTION("on a GPU, or with the BiasAdd on another device, nothing fuses") {
    AssignAll(g, kGpu);
    g->FindNode("ba5")->set_assigned_device(kCpu);
    g->FindNode("mm5")->set_assigned_device(kCpu);
    g->FindNode("ba1")->set_assigned_device(kCpu);  // mm1 on the GPU
    int fused = -1;
    REQUIRE(FuseMatMulChains(g, &fused).ok());
    REQUIRE(fused == 1);  // only mm5 + ba5, both on the CPU
    REQUIRE(g->FindNode("ba5")->type_string() == "_FusedMatMul");
    REQUIRE(CountOp(*g, "MatMul") == 4);
  }
}

TEST_CASE("remapper: a session's fused products equal the separate nodes' bit for bit, at every size and path") {
  struct Case {
    int64_t m, k, n;
    bool ta, tb;
  };
  // Inline (< 1 MFLOP), one pool job, rows sharded, columns sharded (m small,
  // n large), transposed operands, and Eigen's parallel contraction (>= 4 GFLOP).
  const std::vector<Case> cases = {{3, 5, 7, false, false},      {64, 128, 80, true, false},
                                   {256, 784, 256, false, false}, {4, 1024, 2048, false, true},
                                   {96, 200, 300, true, true},    {1024, 1024, 2048, false, false}};
  const std::vector<std::string> activations = {"", "Relu", "Relu6", "LeakyRelu"};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (const std::string& act : activations) {
      if (c.m * c.k * c.n > (int64_t{1} << 30) && act != "Relu") continue;  // the largest once
      INFO(c.m << "x" << c.k << "x" << c.n << " ta=" << c.ta << " tb=" << c.tb << " activation '" << act << "'");
      Scope root = Scope::NewRootScope();
      auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
      auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
      auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
      Output y = ops::BiasAdd(root.WithOpName("y"), ops::MatMul(root, x, w, c.ta, c.tb), b);
      if (act == "Relu") y = ops::Relu(root.WithOpName("act"), y);
      if (act == "Relu6") y = ops::Relu6(root.WithOpName("act"), y);
      if (act == "LeakyRelu") y = ops::LeakyRelu(root.WithOpName("act"), y, 0.3f);
      REQUIRE(root.ok());
      const proto::GraphDef def = ToDef(root);
      const std::vector<std::pair<std::string, Tensor>> feeds = {
          {"x", c.ta ? Random(c.k, c.m, seed) : Random(c.m, c.k, seed)},
          {"w", c.tb ? Random(c.n, c.k, seed + 1) : Random(c.k, c.n, seed + 1)},
          {"b", Random(c.n, -1, seed + 2)}};
      seed += 3;
      std::vector<std::string> fused_ops, plain_ops;
      const Tensor fused = RunOnce(def, true, feeds, y.name(), &fused_ops);
      const Tensor plain = RunOnce(def, false, feeds, y.name(), &plain_ops);
      REQUIRE(Count(fused_ops, "_FusedMatMul") == 1);
      REQUIRE(Count(fused_ops, "MatMul") + Count(fused_ops, "BiasAdd") == 0);
      REQUIRE(Count(plain_ops, "_FusedMatMul") == 0);
      REQUIRE(Count(plain_ops, "MatMul") == 1);
      REQUIRE(fused.shape() == TensorShape{c.m, c.n});
      REQUIRE(fused.shape() == plain.shape());
      REQUIRE(std::memcmp(fused.raw_data(), plain.raw_data(), plain.TotalBytes()) == 0);
      // The activation did something: some outputs negative (none for Relu*), some clipped.
      const float* v = fused.data<float>();
      const int64_t negatives = std::count_if(v, v + fused.NumElements(), [](float e) { return e < 0.f; });
      if (act == "Relu" || act == "Relu6") REQUIRE(negatives == 0);
      else REQUIRE(negatives > 0);
      if (act == "Relu6" && c.k >= 96) REQUIRE(*std::max_element(v, v + fused.NumElements()) == 6.f);
    }
  }
}

TEST_CASE("remapper: the fused node computes bias and activation (a small product checked by hand)") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {{1.f, 2.f}, {-3.f, 1.f}});
  auto w = ops::Const(root, {{1.f, 0.f, 2.f}, {0.f, 1.f, -1.f}});
  ops::LeakyRelu(root.WithOpName("y"), ops::BiasAdd(root, ops::MatMul(root, x, w), ops::Const(root, {0.5f, -1.f, 0.f})),
                 0.5f);
  // x*w = [[1, 2, 0], [-3, 1, -7]]; + bias = [[1.5, 1, 0], [-2.5, 0, -7]]; LeakyRelu(0.5).
  const proto::GraphDef def = ToDef(root);
  std::vector<std::string> ran;
  // Constant folding would compute it before the pass sees it: feed nothing, fold nothing.
  SessionOptions so;
  so.graph_options.do_constant_folding = false;
  Session session(so);
  REQUIRE(session.Create(def).ok());
  RunOptions ro;
  ro.trace_level = TraceLevel::kSoftwareTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  REQUIRE(session.Run(ro, {}, {"y"}, {}, &out, &md).ok());
  for (const NodeExecStats& st : md.step_stats) ran.push_back(st.op);
  REQUIRE(Count(ran, "_FusedMatMul") == 1);
  REQUIRE(Values<float>(out[0]) == std::vector<float>{1.5f, 1.f, 0.f, -1.25f, 0.f, -3.5f});
}

TEST_CASE("remapper: a fused node's bad bias fails the step naming the node, as BiasAdd's would") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  ops::Relu(root.WithOpName("y"), ops::BiasAdd(root, ops::MatMul(root, x, x), b));
  const proto::GraphDef def = ToDef(root);
  Session session;
  REQUIRE(session.Create(def).ok());
  std::vector<Tensor> out;
  for (const Tensor& bias : {Random(3, -1, 1), Random(2, 2, 2)}) {
    Status s = session.Run({{"x", Random(2, 2, 3)}, {"b", bias}}, {"y"}, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE(s.message().find("iases") != std::string::npos);  // "Biases must be 1D", "as many biases"
    REQUIRE(s.message().find("'y'") != std::string::npos);
  }
  REQUIRE(session.Run({{"x", Random(2, 2, 3)}, {"b", Random(2, -1, 4)}}, {"y"}, {}, &out).ok());
}

TEST_CASE("remapper: a TensorFlow GraphDef's _FusedMatMul runs; unsupported fused_ops fail naming them") {
  const std::string text =
      FusedGraph({"x", "w", "b"}, "f", "_FusedMatMul", R"pb(attr { key: "fused_ops" value { list { s: "BiasAdd" s: "FUSED" } } })pb");
  const Tensor x = MakeTensor<float>({1.f, -2.f}, TensorShape{1, 2});
  const Tensor w = MakeTensor<float>({1.f, 0.f, 0.f, 1.f}, TensorShape{2, 2});
  const Tensor b = MakeTensor<float>({0.f, 1.f}, TensorShape{2});
  auto run = [&](const std::string& fused, std::vector<Tensor>* out) {
    std::string t = text;
    t.replace(t.find("FUSED"), 5, fused);
    proto::GraphDef def;
    REQUIRE(ParseGraphDefText(t, &def).ok());
    Session session;
    REQUIRE(session.Create(def).ok());
    return session.Run({{"x", x}, {"w", w}, {"b", b}}, {"f"}, {}, out);
  };
  std::vector<Tensor> out;
  REQUIRE(run("Elu", &out).ok());
  // [1, -2] + [0, 1] = [1, -1]; Elu: [1, e^-1 - 1].
  REQUIRE(out[0].data<float>()[0] == 1.f);
  REQUIRE(std::fabs(out[0].data<float>()[1] - (std::exp(-1.f) - 1.f)) < 1e-6f);
  Status s = run("Sigmoid", &out);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kUnimplemented);
  REQUIRE(s.message().find("BiasAdd, Sigmoid") != std::string::npos);

  // Differentiating through it refuses, naming it, as TensorFlow's has no gradient either.
  std::string t = text;
  t.replace(t.find("FUSED"), 5, "Relu");
  proto::GraphDef def;
  REQUIRE(ParseGraphDefText(t, &def).ok());
  Scope root = Scope::NewRootScope();
  REQUIRE(root.ImportGraphDef(def).ok());
  OutputList grads;
  s = AddSymbolicGradients(root, {Output(root.graph()->FindNode("f"), 0)}, {Output(root.graph()->FindNode("w"), 0)},
                           &grads);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kUnimplemented);
  REQUIRE(s.message().find("'f' (op '_FusedMatMul')") != std::string::npos);
}

TEST_CASE("remapper: Conv2D -> BiasAdd -> Relu6 becomes one _FusedConv2D with the convolution's attrs; NCHW stays") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto f = ops::Placeholder(root.WithOpName("f"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  auto conv = ops::Conv2D(root.WithOpName("conv"), x, f, {1, 2, 2, 1}, "VALID");
  ops::Relu6(root.WithOpName("act"), ops::BiasAdd(root.WithOpName("ba"), conv, b));
  // A BiasAdd over the channels of NCHW (dimension 1) is not the fused op's.
  proto::NodeDef nchw;
  nchw.set_name("ba_nchw");
  nchw.set_op("BiasAdd");
  nchw.add_input("conv2");
  nchw.add_input("b");
  (*nchw.mutable_attr())["T"] = AttrType(DT_FLOAT);
  (*nchw.mutable_attr())["data_format"] = AttrString("NCHW");
  ops::Conv2D(root.WithOpName("conv2"), x, f, {1, 1, 1, 1}, "SAME");
  REQUIRE(root.ok());
  Graph* g = root.graph();
  Node* n = nullptr;
  REQUIRE(g->AddNode(nchw, &n).ok());
  g->AddEdge(g->FindNode("conv2"), 0, n, 0);
  g->AddEdge(g->FindNode("b"), 0, n, 1);
  AssignAll(g, kCpu);
  int fused = -1;
  REQUIRE(FuseMatMulChains(g, &fused).ok());
  REQUIRE(fused == 1);
  const Node* fc = g->FindNode("act");
  REQUIRE(fc->type_string() == "_FusedConv2D");
  std::vector<std::string> fused_ops;
  REQUIRE(GetNodeAttr(fc->def(), "fused_ops", &fused_ops).ok());
  REQUIRE(fused_ops == std::vector<std::string>{"BiasAdd", "Relu6"});
  std::vector<int64_t> strides;
  std::string padding;
  REQUIRE(GetNodeAttr(fc->def(), "strides", &strides).ok());
  REQUIRE(GetNodeAttr(fc->def(), "padding", &padding).ok());
  REQUIRE(strides == std::vector<int64_t>{1, 2, 2, 1});
  REQUIRE(padding == "VALID");
  REQUIRE(fc->input_edge(2)->src->name() == "b");
  REQUIRE(g->FindNode("conv2")->type_string() == "Conv2D");
  REQUIRE(g->FindNode("ba_nchw")->type_string() == "BiasAdd");
}

TEST_CASE("remapper: a session's fused convolutions equal the separate nodes' bit for bit (float and double)") {
  struct Case {
    int64_t batch, size, in, out, stride;
    const char* padding;
    DataType dtype;
    const char* act;
  };
  // One block and many blocks of output rows (ops/nn/conv_ops.cpp), strides, paddings, both dtypes.
  const std::vector<Case> cases = {{2, 9, 3, 5, 1, "SAME", DT_FLOAT, "Relu"},
                                   {3, 8, 4, 6, 2, "VALID", DT_FLOAT, ""},
                                   {32, 28, 1, 32, 1, "SAME", DT_FLOAT, "Relu"},
                                   {4, 14, 32, 64, 1, "SAME", DT_FLOAT, "LeakyRelu"},
                                   {8, 12, 16, 24, 2, "SAME", DT_FLOAT, "Relu6"},
                                   {4, 10, 8, 16, 1, "SAME", DT_DOUBLE, "Relu"}};
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO(c.batch << "x" << c.size << "^2x" << c.in << "->" << c.out << " stride " << c.stride << " " << c.padding
                  << " " << DataTypeString(c.dtype) << " '" << c.act << "'");
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), c.dtype);
    auto f = ops::Placeholder(root.WithOpName("f"), c.dtype);
    auto b = ops::Placeholder(root.WithOpName("b"), c.dtype);
    Output y = ops::BiasAdd(root.WithOpName("y"), ops::Conv2D(root, x, f, {1, c.stride, c.stride, 1}, c.padding), b);
    const std::string act = c.act;
    if (act == "Relu") y = ops::Relu(root.WithOpName("act"), y);
    if (act == "Relu6") y = ops::Relu6(root.WithOpName("act"), y);
    if (act == "LeakyRelu") y = ops::LeakyRelu(root.WithOpName("act"), y, 0.1f);
    REQUIRE(root.ok());
    auto feed = [&](const TensorShape& shape) {
      Tensor t = Random(shape.num_elements(), -1, seed++);
      Tensor out(c.dtype, shape);
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        if (c.dtype == DT_FLOAT) out.data<float>()[i] = t.data<float>()[i];
        else out.data<double>()[i] = t.data<float>()[i];
      }
      return out;
    };
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", feed(TensorShape{c.batch, c.size, c.size, c.in})},
                                                               {"f", feed(TensorShape{3, 3, c.in, c.out})},
                                                               {"b", feed(TensorShape{c.out})}};
    std::vector<std::string> fused_ops, plain_ops;
    const proto::GraphDef def = ToDef(root);
    const Tensor fused = RunOnce(def, true, feeds, y.name(), &fused_ops);
    const Tensor plain = RunOnce(def, false, feeds, y.name(), &plain_ops);
    REQUIRE(Count(fused_ops, "_FusedConv2D") == 1);
    REQUIRE(Count(fused_ops, "Conv2D") + Count(fused_ops, "BiasAdd") == 0);
    REQUIRE(Count(plain_ops, "Conv2D") == 1);
    REQUIRE(fused.shape() == plain.shape());
    REQUIRE(fused.NumElements() > 0);
    REQUIRE(std::memcmp(fused.raw_data(), plain.raw_data(), plain.TotalBytes()) == 0);
    // Relu's outputs are never negative; without it, and with LeakyRelu's slope, some are.
    int64_t negatives = 0;
    for (int64_t i = 0; i < fused.NumElements(); ++i)
      negatives += c.dtype == DT_FLOAT ? fused.data<float>()[i] < 0.f : fused.data<double>()[i] < 0.0;
    if (act == "Relu" || act == "Relu6") REQUIRE(negatives == 0);
    else REQUIRE(negatives > 0);
  }
}

TEST_CASE("remapper: a TensorFlow GraphDef's _FusedConv2D runs, and a bias of the wrong depth fails naming the node") {
  const std::string text = FusedGraph({"x", "f", "b"}, "conv", "_FusedConv2D", R"pb(
      attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } }
      attr { key: "padding" value { s: "VALID" } }
      attr { key: "data_format" value { s: "NHWC" } }
      attr { key: "fused_ops" value { list { s: "BiasAdd" s: "Relu" } } })pb");
  proto::GraphDef def;
  REQUIRE(ParseGraphDefText(text, &def).ok());
  Session session;
  REQUIRE(session.Create(def).ok());
  // A 1x1 convolution of one 1x2 image with 2 channels: each pixel [a, b] -> [a + b, a - b] + [1, -1], then Relu.
  const Tensor x = MakeTensor<float>({1.f, 2.f, 3.f, -5.f}, TensorShape{1, 1, 2, 2});
  const Tensor f = MakeTensor<float>({1.f, 1.f, 1.f, -1.f}, TensorShape{1, 1, 2, 2});
  std::vector<Tensor> out;
  REQUIRE(session.Run({{"x", x}, {"f", f}, {"b", MakeTensor<float>({1.f, -1.f}, TensorShape{2})}}, {"conv"}, {}, &out).ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{4.f, 0.f, 0.f, 7.f});
  Status s = session.Run({{"x", x}, {"f", f}, {"b", MakeTensor<float>({1.f, -1.f, 0.f}, TensorShape{3})}}, {"conv"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE(s.message().find("'conv'") != std::string::npos);
  REQUIRE(s.message().find("biases") != std::string::npos);
}
