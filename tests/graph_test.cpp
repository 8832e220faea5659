// Graph construction, GraphDef import/export and validation errors.
#include <catch2/catch.hpp>

#include <google/protobuf/util/message_differencer.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Import;

namespace {
const char* kConst = R"(attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } })";
std::string ConstNode(const std::string& name) { return "node { name: '" + name + "' op: 'Const' " + kConst + " }\n"; }
}  // namespace

TEST_CASE("a TensorFlow-written text GraphDef loads, with comments and unmodelled fields") {
  proto::GraphDef def;
  Status s = ReadGraphDefFile(std::string(AF_TEST_DATA_DIR) + "/tf_linear.pbtxt", &def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Graph g;
  REQUIRE(ImportGraphDef(def, &g).ok());
  REQUIRE(g.num_nodes() == 7);
  Node* mm = g.FindNode("MatMul");
  REQUIRE(mm != nullptr);
  REQUIRE(mm->requested_device() == "/device:CPU:0");
  REQUIRE(g.versions().producer() == 1087);
}

TEST_CASE("GraphDef binary and text round trips preserve the graph") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Add(root.WithOpName("y"), x, 2.f);
  auto z = ops::Identity(root.WithControlDependencies({y.op()}).WithOpName("z"), x);
  REQUIRE(root.ok());
  REQUIRE(z.node()->in_edges().size() == 2);
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  for (const char* ext : {".pb", ".pbtxt"}) {
    std::string path = "/tmp/actorflow_graph_test" + std::string(ext);
    REQUIRE(WriteGraphDefFile(path, def).ok());
    proto::GraphDef back;
    REQUIRE(ReadGraphDefFile(path, &back).ok());
    REQUIRE(google::protobuf::util::MessageDifferencer::Equals(back, def));
    Graph g;
    REQUIRE(ImportGraphDef(back, &g).ok());
    REQUIRE(z.node()->name() == "z");
    Node* zn = g.FindNode("z");
    REQUIRE(zn->in_edges().size() == 2);  // data from x, control from y
    std::remove(path.c_str());
  }
  // Attr defaults are filled in on import.
  Graph g;
  REQUIRE(ImportGraphDef(def, &g).ok());
  REQUIRE(HasNodeAttr(g.FindNode("y")->def(), "T"));
}

TEST_CASE("import errors name the node and the problem") {
  Graph g1;
  Status s = Import("node { name: 'a' op: 'NoSuchOp' }", &g1);
  REQUIRE(s.code() == Code::kNotFound);
  REQUIRE_THAT(s.message(), Catch::Contains("'a'") && Catch::Contains("NoSuchOp"));

  Graph g2;
  s = Import(ConstNode("a") + "node { name: 'b' op: 'Neg' input: 'missing' attr { key: 'T' value { type: DT_FLOAT } } }", &g2);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'b'") && Catch::Contains("missing"));

  Graph g3;
  s = Import(ConstNode("a") + "node { name: 'b' op: 'Neg' input: 'a' attr { key: 'T' value { type: DT_INT32 } } }", &g3);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'b'") && Catch::Contains("float") && Catch::Contains("int32"));

  Graph g4;
  s = Import(ConstNode("a") + ConstNode("a"), &g4);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("duplicate") && Catch::Contains("'a'"));

  Graph g5;
  s = Import(R"(node { name: 'p' op: 'Neg' input: 'q' attr { key: 'T' value { type: DT_FLOAT } } }
                node { name: 'q' op: 'Neg' input: 'p' attr { key: 'T' value { type: DT_FLOAT } } })", &g5);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("cycle") && Catch::Contains("'p'"));

  Graph g6;
  s = Import(ConstNode("a") + "node { name: 'b' op: 'Add' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } }", &g6);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'b'") && Catch::Contains("expects 2"));

  Graph g7;
  s = Import(ConstNode("a") + "node { name: 'b' op: 'Neg' input: 'a:3' attr { key: 'T' value { type: DT_FLOAT } } }", &g7);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("output 3"));

  Graph g8;
  s = Import("node { name: 'a' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } }", &g8);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("missing attr 'value'"));

  Graph g9;
  s = Import(ConstNode("a") + "node { name: 'b' op: 'Neg' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } attr { key: 'bogus' value { i: 1 } } }", &g9);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("bogus"));
}

TEST_CASE("malformed and missing graph files are errors naming the file") {
  proto::GraphDef def;
  Status s = ReadGraphDefFile("/nonexistent/graph.pb", &def);
  REQUIRE(s.code() == Code::kNotFound);
  REQUIRE_THAT(s.message(), Catch::Contains("/nonexistent/graph.pb"));
  const std::string path = "/tmp/actorflow_bad.pbtxt";
  std::ofstream(path) << "node { name: 'a' op: }\n";
  s = ReadGraphDefFile(path, &def);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains(path) && Catch::Contains("line 1"));
  std::remove(path.c_str());
}

TEST_CASE("a graph using several unregistered ops is refused with all of them in one error") {
  Graph g;
  Status s = Import(ConstNode("a") + R"(
      node { name: 'slice1' op: 'NoSuchSlice' input: 'a' }
      node { name: 'conv' op: 'NoSuchConv' input: 'a' }
      node { name: 'slice2' op: 'NoSuchSlice' input: 'a' }
      node { name: 'slice3' op: 'NoSuchSlice' })", &g);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kNotFound);
  CHECK_THAT(s.message(), Catch::Contains("2 op types") &&
                              Catch::Contains("'NoSuchSlice' (node 'slice1' and 2 more), 'NoSuchConv' (node 'conv')"));
  CHECK(g.num_nodes() == 0);  // refused before any node was added
}

TEST_CASE("a Placeholder's empty shape means unknown in graphs of producer 21 or older, a scalar after") {
  const std::string placeholder =
      "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }"
      " attr { key: 'shape' value { shape {} } } }\n";
  PartialTensorShape shape;
  for (const char* versions : {"versions { producer: 21 }", ""}) {  // none: producer 0
    INFO(versions);
    Graph g;
    REQUIRE(Import(placeholder + versions, &g).ok());
    REQUIRE(GetNodeAttr(g.FindNode("x")->def(), "shape", &shape).ok());
    CHECK(shape.unknown_rank());
  }
  Graph g;
  REQUIRE(Import(placeholder + "versions { producer: 22 }", &g).ok());
  REQUIRE(GetNodeAttr(g.FindNode("x")->def(), "shape", &shape).ok());
  CHECK_FALSE(shape.unknown_rank());
  CHECK(shape.dims() == 0);
  // Graphs built here carry a recent producer: their scalar placeholders stay scalars.
  Scope root = Scope::NewRootScope();
  ops::Placeholder(root.WithOpName("s"), DT_FLOAT, PartialTensorShape::Scalar());
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  CHECK(def.versions().producer() == kGraphDefVersion);
  Graph built;
  REQUIRE(ImportGraphDef(def, &built).ok());
  REQUIRE(GetNodeAttr(built.FindNode("s")->def(), "shape", &shape).ok());
  CHECK(shape.dims() == 0);
  CHECK_FALSE(shape.unknown_rank());
}

TEST_CASE("graph files: a directory, an empty file and an unknown text field are errors; text in a .pb loads") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("af_graph_files_" + std::to_string(::getpid()));
  fs::create_directories(dir / "model");
  std::ofstream(dir / "model" / "saved_model.pb") << "x";
  proto::GraphDef def;
  Status s = ReadGraphDefFile((dir / "model").string(), &def);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("is a directory") && Catch::Contains("SavedModel"));

  const std::string empty = (dir / "empty.pb").string();
  std::ofstream(empty).close();
  s = ReadGraphDefFile(empty, &def);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains(empty) && Catch::Contains("is empty"));

  // tf.io.write_graph(..., as_text=True) under a .pb name.
  const std::string text_pb = (dir / "text.pb").string();
  std::ofstream(text_pb) << ConstNode("a") << "versions { producer: 27 }\n";
  s = ReadGraphDefFile(text_pb, &def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(def.node_size() == 1);
  CHECK(def.versions().producer() == 27);

  const std::string binary_garbage = (dir / "garbage.pb").string();
  std::ofstream(binary_garbage, std::ios::binary) << std::string("\x0a\xff\xff\xff\xff\x01\x02", 7);
  s = ReadGraphDefFile(binary_garbage, &def);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("cannot parse binary GraphDef") && Catch::Contains("7 bytes"));

  const std::string misspelt = (dir / "misspelt.pbtxt").string();
  std::ofstream(misspelt) << ConstNode("a") << "node {\n  nmae: 'b'\n  op: 'NoOp'\n}\n";
  s = ReadGraphDefFile(misspelt, &def);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains(misspelt) && Catch::Contains("line 4") &&
                              Catch::Contains("unknown field 'nmae' in NodeDef"));

  // TensorFlow's fields the protos here leave out are skipped.
  s = ParseGraphDefText(ConstNode("a") + "node { name: 'n' op: 'NoOp' experimental_type { type_id: TFT_PRODUCT } }"
                                         " debug_info { files: 'model.py' }", &def);
  INFO(s.ToString());
  CHECK(s.ok());
  fs::remove_all(dir);
}

TEST_CASE("the builder reports shape errors when the graph is built") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1.f, 2.f, 3.f}});   // [1,3]
  auto b = ops::Const(root, {{1.f, 2.f}});        // [1,2]
  ops::MatMul(root.WithOpName("mm"), a, b);
  REQUIRE_FALSE(root.ok());
  REQUIRE(root.status().code() == Code::kInvalidArgument);
  REQUIRE_THAT(root.status().message(), Catch::Contains("'mm'") && Catch::Contains("3 and 1"));
}

TEST_CASE("a scope imports a GraphDef and builds on top of it") {
  proto::GraphDef def;
  REQUIRE(ReadGraphDefFile(std::string(AF_TEST_DATA_DIR) + "/tf_linear.pbtxt", &def).ok());
  Scope root = Scope::NewRootScope();
  Status s = root.ImportGraphDef(def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Node* y = root.graph()->FindNode("y");
  REQUIRE(y != nullptr);
  // Shapes were inferred: MatMul of [-1,2] by [2,1] is [-1,1].
  REQUIRE(root.InferredShape(Output(root.graph()->FindNode("MatMul"), 0)).dim_sizes() == std::vector<int64_t>{-1, 1});
  auto z = ops::Square(root.WithOpName("z"), Output(y, 0));
  REQUIRE(z.node()->name() == "z");
  auto out = test::RunOk(root, {z}, {{"x", test::MakeTensor<float>({1, 2}, {1, 2})}});
  REQUIRE(test::Values<float>(out[0]) == std::vector<float>{5.5f * 5.5f});
  // A built op's name does not collide with an imported one's.
  REQUIRE(ops::MatMul(root, Output(root.graph()->FindNode("x"), 0), Output(root.graph()->FindNode("w"), 0))
              .node()
              ->name() == "MatMul_1");
  // Only into an empty graph.
  s = root.ImportGraphDef(def);
  REQUIRE(s.code() == Code::kFailedPrecondition);
  REQUIRE(root.ok());
}

TEST_CASE("a GraphDef that does not import leaves the scope's graph empty, naming the node") {
  Scope root = Scope::NewRootScope();
  proto::GraphDef bad_input;
  REQUIRE(ParseGraphDefText(ConstNode("a") + "node { name: 'n' op: 'Neg' input: 'missing' attr { key: 'T' value { type: DT_FLOAT } } }",
                            &bad_input)
              .ok());
  Status s = root.ImportGraphDef(bad_input);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'n'") && Catch::Contains("'missing'"));
  REQUIRE(root.graph()->num_nodes() == 0);
  proto::GraphDef bad_shape;
  REQUIRE(ParseGraphDefText(R"(
    node { name: 'a' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }
           attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1 } } } }
    node { name: 'mm' op: 'MatMul' input: 'a' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } })",
                            &bad_shape)
              .ok());
  s = root.ImportGraphDef(bad_shape);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'mm'") && Catch::Contains("rank 2"));
  REQUIRE(root.graph()->num_nodes() == 0);
  REQUIRE(root.ok());
  proto::GraphDef good;
  REQUIRE(ParseGraphDefText(ConstNode("a"), &good).ok());
  REQUIRE(root.ImportGraphDef(good).ok());
  REQUIRE(root.graph()->num_nodes() == 1);
}

TEST_CASE("the builder names ops uniquely inside sub-scopes") {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("layer");
  auto a = ops::Const(layer, 1.f);
  auto b = ops::Neg(layer, a);
  auto c = ops::Neg(layer, b);
  REQUIRE(b.node()->name() == "layer/Neg");
  REQUIRE(c.node()->name() == "layer/Neg_1");
  auto d = ops::Neg(root.WithDevice("/device:CPU:0").WithOpName("named"), c);
  REQUIRE(d.node()->name() == "named");
  REQUIRE(d.node()->requested_device() == "/device:CPU:0");
}

TEST_CASE("a missing kernel is an error naming node, op, device and dtype") {
  proto::NodeDef def;
  def.set_name("add_on_gpu");
  def.set_op("Add");
  (*def.mutable_attr())["T"] = AttrType(DT_DOUBLE);  // no GPU kernel, in CUDA builds either (float32 only)
  const KernelDef* k;
  KernelFactory f;
  Status s = KernelRegistry::Global()->Find(def, "GPU", &k, &f);
  REQUIRE(s.code() == Code::kNotFound);
  REQUIRE_THAT(s.message(), Catch::Contains("'add_on_gpu'") && Catch::Contains("'Add'") &&
                                Catch::Contains("GPU") && Catch::Contains("T=double"));
  REQUIRE(KernelRegistry::Global()->Find(def, "CPU", &k, &f).ok());
}

TEST_CASE("op specs: a minimum and a default on one attr both hold") {
  const OpRegistration* reg = OpRegistry::Global()->Find("Squeeze");
  REQUIRE(reg != nullptr);
  const auto& attr = reg->op_def.attr(1);
  REQUIRE(attr.name() == "squeeze_dims");
  REQUIRE(attr.has_minimum());
  REQUIRE(attr.minimum() == 0);
  REQUIRE(attr.has_default_value());
  REQUIRE(attr.default_value().has_list());
}

TEST_CASE("a tensor too large for memory is an error, not an overrun") {
  REQUIRE(TensorBuffer::Allocate(cpu_allocator(), DT_DOUBLE, int64_t{1} << 62) == nullptr);
  Scope root = Scope::NewRootScope();
  auto big = ops::Fill(root, ops::Const(root, {int64_t{1} << 31, int64_t{1} << 31, int64_t{4}}), 1.f);
  Status s = test::RunStatus(root, {big});
  REQUIRE_FALSE(s.ok());
}

TEST_CASE("Scope::SetShape refines an inferred shape for the ops built after it, and refuses a conflict") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);  // unknown rank
  REQUIRE(root.SetShape(x, PartialTensorShape(std::vector<int64_t>{-1, 3})).ok());
  CHECK(root.InferredShape(x).dim_sizes() == std::vector<int64_t>{-1, 3});
  REQUIRE(root.SetShape(x, PartialTensorShape(std::vector<int64_t>{4, -1})).ok());  // merged: [4, 3]
  CHECK(root.InferredShape(x).dim_sizes() == std::vector<int64_t>{4, 3});
  auto y = ops::MatMul(root, x, ops::Const(root, {{1.f}, {2.f}, {3.f}}));
  CHECK(root.InferredShape(y).dim_sizes() == std::vector<int64_t>{4, 1});  // built after: sees the refinement
  CHECK(root.SetShape(x, PartialTensorShape(std::vector<int64_t>{5, 3})).code() == Code::kInvalidArgument);
  CHECK(root.SetShape(x, PartialTensorShape(std::vector<int64_t>{4})).code() == Code::kInvalidArgument);
  CHECK(root.InferredShape(x).dim_sizes() == std::vector<int64_t>{4, 3});  // unchanged
  CHECK(root.ok());
}
