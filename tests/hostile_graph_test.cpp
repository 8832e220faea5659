// Hostile GraphDefs: count attrs that disagree with a node's inputs or ask for
// absurd numbers of tensors, shapes of absurd rank, and static shapes whose
// dims would size or overflow shape inference. Each is refused quickly with an
// InvalidArgument naming the node, its op and the attr (never std::bad_alloc,
// length_error or gigabytes taken), and the valid graph of each op still works.
// Also: int attrs read as int32 are range-checked, Fill and Range sizes never
// overflow, the builder never materialises a huge Const, and a loop frame's
// memory follows its live iterations, not its parallel_iterations.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>

#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/actors/device/propagation.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/static_shapes.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

const std::string kF = "attr { key: 'T' value { type: DT_FLOAT } }";

std::string Const(const std::string& name, const std::string& shape = "dim { size: 2 }",
                  const std::string& vals = "float_val: 1 float_val: 2") {
  return "node { name: '" + name + "' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } "
         "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { " + shape + " } " + vals + " } } } }\n";
}

std::string IntConst(const std::string& name, const std::string& shape, const std::string& vals) {
  return "node { name: '" + name + "' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } } "
         "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { " + shape + " } " + vals + " } } } }\n";
}

std::string Placeholder(const std::string& name, const std::string& shape, const std::string& dtype = "DT_FLOAT") {
  return "node { name: '" + name + "' op: 'Placeholder' attr { key: 'dtype' value { type: " + dtype +
         " } } attr { key: 'shape' value { shape { " + shape + " } } } }\n";
}

proto::GraphDef Parse(const std::string& text) {
  proto::GraphDef def;
  const Status s = ParseGraphDefText(text, &def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return def;
}

Status Import(const std::string& text) {
  Graph g;
  return ImportGraphDef(Parse(text), &g);
}

// Imports into a Scope, which also runs every node's shape function.
Status ScopeImport(const std::string& text) {
  Scope root = Scope::NewRootScope();
  return root.ImportGraphDef(Parse(text));
}

void RequireRefused(const Status& s, const std::vector<std::string>& words) {
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kInvalidArgument);
  for (const auto& w : words) REQUIRE_THAT(s.message(), Catch::Contains(w));
}

std::vector<Tensor> RunText(const std::string& text, const std::vector<std::string>& fetches) {
  Session session;
  Status s = session.Create(Parse(text));
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::vector<Tensor> out;
  s = session.Run({}, fetches, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

}  // namespace

TEST_CASE("a count attr is checked against the inputs the node lists before it sizes anything") {
  // AddN N = 2^31-1 with one input: allocated 8 GB of dtypes before the check.
  RequireRefused(Import(Const("a") + "node { name: 'sum' op: 'AddN' input: 'a' " + kF +
                        " attr { key: 'N' value { i: 2147483647 } } }"),
                 {"'sum'", "'AddN'", "'N'", "2147483647", "lists 1"});
  // Merge N = INT64_MAX: became a negative int and died with length_error.
  RequireRefused(Import(Const("a") + "node { name: 'm' op: 'Merge' input: 'a' " + kF +
                        " attr { key: 'N' value { i: 9223372036854775807 } } }"),
                 {"'m'", "'Merge'", "'N'", "9223372036854775807", "lists 1"});
  // Too few: ConcatV2 N = 3 takes N + 1 inputs.
  RequireRefused(Import(Const("a") + IntConst("ax", "", "int_val: 0") +
                        "node { name: 'c' op: 'ConcatV2' input: 'a' input: 'a' input: 'ax' " + kF +
                        " attr { key: 'N' value { i: 3 } } }"),
                 {"'c'", "'ConcatV2'", "'N' is 3", "takes 4 data inputs", "lists 3"});
  // A type list of three dtypes for one data input; control inputs do not count.
  RequireRefused(Import("node { name: 'cond' op: 'Const' attr { key: 'dtype' value { type: DT_BOOL } } "
                        "attr { key: 'value' value { tensor { dtype: DT_BOOL bool_val: true } } } }\n" + Const("a") +
                        "node { name: 'check' op: 'Assert' input: 'cond' input: 'a' input: '^a' "
                        "attr { key: 'T' value { list { type: DT_FLOAT type: DT_FLOAT type: DT_FLOAT } } } }"),
                 {"'check'", "'Assert'", "'T' is 3", "takes 4 data inputs", "lists 2"});
  // Below the op's minimum, and negative where the op sets none lower than 0.
  RequireRefused(Import(Const("a") + "node { name: 'sum' op: 'AddN' " + kF + " attr { key: 'N' value { i: 0 } } }"),
                 {"'sum'", "'N'", "at least 1"});
  RequireRefused(Import(Const("a") + "node { name: 'u' op: 'Unpack' input: 'a' " + kF +
                        " attr { key: 'num' value { i: -5 } } }"),
                 {"'u'", "'Unpack'", "'num'", "-5"});
}

TEST_CASE("a count attr sizing outputs is bounded") {
  // Split num_split = 1e9 on a 2-element tensor took gigabytes of dtypes.
  RequireRefused(Import(IntConst("d", "", "int_val: 0") + Const("a") +
                        "node { name: 'split' op: 'Split' input: 'd' input: 'a' " + kF +
                        " attr { key: 'num_split' value { i: 1000000000 } } }"),
                 {"'split'", "'Split'", "'num_split'", "1000000000", std::to_string(kMaxArgCount)});
  RequireRefused(Import(Const("a") + "node { name: 'u' op: 'Unpack' input: 'a' " + kF +
                        " attr { key: 'num' value { i: 9223372036854775807 } } }"),
                 {"'u'", "'Unpack'", "'num'", "9223372036854775807"});
  // Many nodes each at the bound: the graph's outputs in all are bounded too.
  std::string text = IntConst("d", "", "int_val: 0") + Const("a");
  const int64_t nodes = kMaxImportedOutputs / kMaxArgCount + 1;
  for (int64_t i = 0; i < nodes; ++i)
    text += "node { name: 's" + std::to_string(i) + "' op: 'Split' input: 'd' input: 'a' " + kF +
            " attr { key: 'num_split' value { i: " + std::to_string(kMaxArgCount) + " } } }\n";
  RequireRefused(Import(text), {"node 's", "'Split'", std::to_string(kMaxImportedOutputs)});
}

TEST_CASE("a shape attr of more than the maximum rank is refused") {
  std::string dims;
  for (int i = 0; i <= kMaxShapeRank; ++i) dims += "dim { size: 1 } ";
  RequireRefused(Import(Placeholder("p", dims)), {"'p'", "'Placeholder'", "'shape'", "255"});
  std::string ok_dims;
  for (int i = 0; i < 3; ++i) ok_dims += "dim { size: 2 } ";
  REQUIRE(Import(Placeholder("p", ok_dims)).ok());
}

TEST_CASE("graph files are read without throwing") {
  const std::string path = std::filesystem::temp_directory_path() / "af_hostile_addn.pbtxt";
  {
    std::ofstream f(path);
    f << Const("a") << "node { name: 'sum' op: 'AddN' input: 'a' " << kF << " attr { key: 'N' value { i: 2147483647 } } }";
  }
  proto::GraphDef def;
  REQUIRE(ReadGraphDefFile(path, &def).ok());
  Graph g;
  RequireRefused(ImportGraphDef(def, &g), {"'sum'", "'N'"});
  Session session;
  RequireRefused(session.Create(def), {"'sum'", "'N'"});
  std::remove(path.c_str());
}

TEST_CASE("node names follow TensorFlow's rule") {
  for (const char* ok : {"a", "x/y_1", "gradients/MatMul_grad/tuple/control_dependency-1", ".hidden", "_send_x_0",
                         "0", "a>b", "a/b>.c/d"})
    CHECK(IsValidNodeName(ok));
  for (const char* bad : {"", "a:b", "a b", "-a", "/a", "a>", ">a", "a>_b", "a>>b", "a^b", "a\n", "caf\xc3\xa9"})
    CHECK_FALSE(IsValidNodeName(bad));
}

TEST_CASE("a node whose name TensorFlow would refuse is refused at import, naming it") {
  // Found by fuzz_graphdef: a sink named "v/read: x" imported, then its fetch
  // "v/read: x" parsed as node "v/read" port " x" once partitioned.
  const std::string text = Const("c") + "node { name: 'v/read: x' op: 'Identity' input: 'c' " + kF + " }\n";
  RequireRefused(Import(text), {"'v/read: x'", "name"});
  RequireRefused(ScopeImport(text), {"'v/read: x'"});
  Session session;
  RequireRefused(session.Create(Parse(text)), {"'v/read: x'"});
  REQUIRE(Import(Const("c") + "node { name: 'v/read' op: 'Identity' input: 'c' " + kF + " }\n").ok());
}

TEST_CASE("a dtype of any int32 value is named without recursion and refused") {
  // Found by fuzz_graphdef: DataTypeString recursed once per 100 of the value
  // (a "ref of a ref of ..."), overflowing the stack for type: 2147483647.
  CHECK(DataTypeString(static_cast<DataType>(2147483647)) == "unknown dtype 2147483647");
  CHECK(DataTypeEnumName(static_cast<DataType>(2147483647)) == "DT_INVALID");
  CHECK(DataTypeString(static_cast<DataType>(201)) == "unknown dtype 201");
  CHECK(DataTypeString(static_cast<DataType>(-7)) == "unknown dtype -7");
  CHECK(DataTypeString(DT_FLOAT_REF) == "float_ref");
  CHECK(DataTypeEnumName(DT_FLOAT_REF) == "DT_FLOAT_REF");
  const Status s = Import(Const("a") + "node { name: 'b' op: 'Identity' input: 'a' attr { key: 'T' value { type: 2147483647 } } }\n");
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'b'") && Catch::Contains("2147483647"));
}

TEST_CASE("a text GraphDef nested deeper than 100 levels is refused before protobuf recurses") {
  // Found by fuzz_graphdef: protobuf skips an unknown field's value
  // recursively without a limit, so 30,000 '[' overflowed the stack.
  proto::GraphDef def;
  const Status deep =
      ParseGraphDefText("node { name: 'a' op: 'NoOp' }\nunknown: " + std::string(30000, '['), &def, "'deep.pbtxt'");
  INFO(deep.ToString());
  REQUIRE(deep.code() == Code::kInvalidArgument);
  REQUIRE_THAT(deep.message(), Catch::Contains("'deep.pbtxt'") && Catch::Contains("line 2, column 110") &&
                                   Catch::Contains("nested deeper than 100"));
  // Brackets inside strings and comments do not count; 100 levels parse.
  const std::string braces(500, '{');
  REQUIRE(ParseGraphDefText("# " + braces + "\nnode { name: 'a' op: 'NoOp' device: '" + braces + "\\'\"' }", &def).ok());
  REQUIRE(def.node(0).device() == braces + "'\"");
  std::string nested = "debug_info: ";  // a TensorFlow field skipped here, so any value nests
  for (int i = 0; i < 100; ++i) nested += "{ x: ";
  nested += "1" + std::string(100, '}') + " node { name: 'a' op: 'NoOp' }";
  const Status ok = ParseGraphDefText(nested, &def);
  INFO(ok.ToString());
  REQUIRE(ok.ok());
}

TEST_CASE("the CLI exits 2 with the InvalidArgument for a graph whose counts are hostile") {
  const std::string path = std::filesystem::temp_directory_path() / "af_hostile_split.pbtxt";
  const std::string err = std::filesystem::temp_directory_path() / "af_hostile_split.err";
  {
    std::ofstream f(path);
    f << IntConst("d", "", "int_val: 0") << Const("a")
      << "node { name: 'split' op: 'Split' input: 'd' input: 'a' " << kF
      << " attr { key: 'num_split' value { i: 1000000000 } } }";
  }
  REQUIRE(std::filesystem::exists(AF_CLI_PATH));
  const std::string cmd =
      std::string("timeout 60 ") + AF_CLI_PATH + " run --graph " + path + " --fetch split >/dev/null 2>" + err;
  const int status = std::system(cmd.c_str());
  std::ifstream e(err);
  const std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  INFO(text);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 2);
  REQUIRE_THAT(text, Catch::Contains("'split'") && Catch::Contains("'num_split'"));
  std::remove(path.c_str());
  std::remove(err.c_str());
}

TEST_CASE("a rank taken from a static dim is bounded in shape inference") {
  // Pad of an input of unknown rank with paddings of static shape [1e9, 2]:
  // took 15 GB and 19 s in static shape inference.
  const std::string pad = Placeholder("x", "unknown_rank: true") +
                          Placeholder("p", "dim { size: 1000000000 } dim { size: 2 }", "DT_INT32") +
                          "node { name: 'pad' op: 'Pad' input: 'x' input: 'p' " + kF +
                          " attr { key: 'Tpaddings' value { type: DT_INT32 } } }";
  RequireRefused(ScopeImport(pad), {"'pad'", "'Pad'", "paddings", "1000000000", "254"});
  Graph g;
  REQUIRE(ImportGraphDef(Parse(pad), &g).ok());
  const StaticShapes shapes = InferStaticShapes(g);  // the shape stays unknown
  REQUIRE(shapes[g.FindNode("pad")->id()][0].unknown_rank());

  const std::string big_vec = "dim { size: 1000000000 }";
  RequireRefused(ScopeImport(Placeholder("d", big_vec, "DT_INT32") + Placeholder("v", "") +
                             "node { name: 'fill' op: 'Fill' input: 'd' input: 'v' " + kF + " }"),
                 {"'fill'", "'Fill'", "1000000000"});
  RequireRefused(ScopeImport(Placeholder("x", "unknown_rank: true") + Placeholder("s", big_vec, "DT_INT32") +
                             "node { name: 'r' op: 'Reshape' input: 'x' input: 's' " + kF + " }"),
                 {"'r'", "'Reshape'", "1000000000"});
  RequireRefused(ScopeImport(Placeholder("x", "unknown_rank: true") + Placeholder("m", big_vec, "DT_INT32") +
                             "node { name: 't' op: 'Tile' input: 'x' input: 'm' " + kF + " }"),
                 {"'t'", "'Tile'", "1000000000"});
  RequireRefused(ScopeImport(Placeholder("x", "unknown_rank: true") + Placeholder("q", big_vec, "DT_INT32") +
                             "node { name: 'tr' op: 'Transpose' input: 'x' input: 'q' " + kF + " }"),
                 {"'tr'", "'Transpose'", "1000000000"});
  RequireRefused(ScopeImport(Placeholder("x", "unknown_rank: true") + Placeholder("b", big_vec, "DT_INT32") +
                             "node { name: 'sl' op: 'Slice' input: 'x' input: 'b' input: 'b' " + kF +
                             " attr { key: 'Index' value { type: DT_INT32 } } }"),
                 {"'sl'", "'Slice'", "1000000000"});
}

TEST_CASE("static dims are combined with overflow checks") {
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max() - 1);
  RequireRefused(ScopeImport(Placeholder("x", "dim { size: " + max + " }") +
                             IntConst("p", "dim { size: 1 } dim { size: 2 }", "int_val: 1 int_val: 5") +
                             "node { name: 'pad' op: 'Pad' input: 'x' input: 'p' " + kF + " }"),
                 {"'pad'", "'Pad'", "overflows"});
  RequireRefused(ScopeImport(Placeholder("x", "dim { size: " + max + " }") +
                             IntConst("m", "dim { size: 1 }", "int_val: 3") +
                             "node { name: 't' op: 'Tile' input: 'x' input: 'm' " + kF + " }"),
                 {"'t'", "'Tile'", "overflows"});
}

TEST_CASE("shape functions see only small constants") {
  // A Const declaring 1e9 elements is not materialised for its value.
  proto::GraphDef def = Parse(IntConst("big", "dim { size: 1000000000 }", "int_val: 1") +
                              IntConst("small", "dim { size: 2 }", "int_val: 3 int_val: 4"));
  Tensor t;
  REQUIRE_FALSE(ConstValueForShapeFn(def.node(0), &t));
  REQUIRE(ConstValueForShapeFn(def.node(1), &t));
  REQUIRE(t.NumElements() == 2);
  // And a Reshape by it leaves the shape unknown rather than allocating 4 GB.
  Graph g;
  REQUIRE(ImportGraphDef(Parse(IntConst("big", "dim { size: 1000000000 }", "int_val: 1") + Const("a") +
                               "node { name: 'r' op: 'Reshape' input: 'a' input: 'big' " + kF + " }"),
                         &g).ok());
  const StaticShapes shapes = InferStaticShapes(g);
  REQUIRE(shapes[g.FindNode("r")->id()][0].unknown_rank());
}

TEST_CASE("a shape function that throws is a Status") {
  proto::NodeDef nd;
  nd.set_name("n");
  nd.set_op("X");
  InferenceContext c(&nd, {}, {}, 1);
  Status s = RunShapeFn([](InferenceContext*) -> Status { throw std::bad_alloc(); }, &c);
  REQUIRE(s.code() == Code::kResourceExhausted);
  REQUIRE_THAT(s.message(), Catch::Contains("'n'"));
  s = RunShapeFn([](InferenceContext*) -> Status { throw std::length_error("vector"); }, &c);
  REQUIRE(s.code() == Code::kInvalidArgument);
}

TEST_CASE("valid graphs of the bounded ops still work") {
  const std::string a = Const("a");
  auto v = RunText(a + "node { name: 'sum' op: 'AddN' input: 'a' input: 'a' input: 'a' " + kF +
                       " attr { key: 'N' value { i: 3 } } }",
                   {"sum"});
  REQUIRE(test::Values<float>(v[0]) == std::vector<float>{3, 6});
  v = RunText(IntConst("d", "", "int_val: 0") + a + "node { name: 'split' op: 'Split' input: 'd' input: 'a' " + kF +
                  " attr { key: 'num_split' value { i: 2 } } }",
              {"split:0", "split:1"});
  REQUIRE(test::Values<float>(v[1]) == std::vector<float>{2});
  v = RunText(a + "node { name: 'u' op: 'Unpack' input: 'a' " + kF + " attr { key: 'num' value { i: 2 } } }",
              {"u:1"});
  REQUIRE(test::Values<float>(v[0]) == std::vector<float>{2});
  v = RunText(a + IntConst("ax", "", "int_val: 0") + "node { name: 'c' op: 'ConcatV2' input: 'a' input: 'a' input: 'ax' " +
                  kF + " attr { key: 'N' value { i: 2 } } }",
              {"c"});
  REQUIRE(test::Values<float>(v[0]) == std::vector<float>{1, 2, 1, 2});
  v = RunText(a + "node { name: 'pk' op: 'Pack' input: 'a' input: 'a' " + kF + " attr { key: 'N' value { i: 2 } } }",
              {"pk"});
  REQUIRE(v[0].shape() == TensorShape{2, 2});
  v = RunText(a + "node { name: 'm' op: 'Merge' input: 'a' input: 'a' " + kF + " attr { key: 'N' value { i: 2 } } }",
              {"m"});
  REQUIRE(test::Values<float>(v[0]) == std::vector<float>{1, 2});
  const std::string pad = a + IntConst("p", "dim { size: 1 } dim { size: 2 }", "int_val: 1 int_val: 2") +
                          "node { name: 'pad' op: 'Pad' input: 'a' input: 'p' " + kF + " }";
  REQUIRE(ScopeImport(pad).ok());
  Graph g;
  REQUIRE(ImportGraphDef(Parse(pad), &g).ok());
  REQUIRE(InferStaticShapes(g)[g.FindNode("pad")->id()][0].dim_sizes() == std::vector<int64_t>{5});
  v = RunText(pad, {"pad"});
  REQUIRE(test::Values<float>(v[0]) == std::vector<float>{0, 1, 2, 0, 0});
  // Unknown-rank input, paddings of a sane static shape: the rank is inferred.
  Graph g2;
  REQUIRE(ImportGraphDef(Parse(Placeholder("x", "unknown_rank: true") +
                               Placeholder("q", "dim { size: 3 } dim { size: 2 }", "DT_INT32") +
                               "node { name: 'pad' op: 'Pad' input: 'x' input: 'q' " + kF + " }"),
                         &g2).ok());
  REQUIRE(InferStaticShapes(g2)[g2.FindNode("pad")->id()][0].dims() == 3);
}

// ---------------------------------------------------------------------------
// Follow-ups: the builder's shape inference, int32 attrs, Fill and Range
// sizes, and loop frames sized by parallel_iterations.

TEST_CASE("Scope::ImportGraphDef does not materialise a Const declaring a huge shape") {
  // 1e8 int32 (400 MB) declared with one value, fed to a Neg: the builder's
  // shape inference must not build it just to look at it.
  const std::string neg = "node { name: 'r' op: 'Neg' input: 'big' attr { key: 'T' value { type: DT_INT32 } } }";
  const std::string text = IntConst("big", "dim { size: 100000000 }", "int_val: 1") + neg;
  Allocator* a = cpu_allocator();
  a->ResetPeak();
  const int64_t before = a->bytes_in_use();
  Scope root = Scope::NewRootScope();
  const Status s = root.ImportGraphDef(Parse(text));
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(a->peak_bytes_in_use() - before < (int64_t{64} << 20));
  REQUIRE(root.graph()->num_nodes() >= 2);
  // And 1e9 elements under a budget of 256 MiB more than in use: still fine.
  const int64_t old_limit = a->limit();
  a->set_limit(a->bytes_in_use() + (int64_t{256} << 20));
  Scope root2 = Scope::NewRootScope();
  const Status s2 = root2.ImportGraphDef(
      Parse(IntConst("big", "dim { size: 1000000000 }", "int_val: 1") + neg));
  a->set_limit(old_limit);
  INFO(s2.ToString());
  REQUIRE(s2.ok());
}

TEST_CASE("an int attr read as int32 is refused outside int32's range, never truncated") {
  // 2^32 + 2 would truncate to 2: an AddN of two inputs would then load.
  const std::string two = Const("a") + Const("b");
  RequireRefused(Import(two + "node { name: 'sum' op: 'AddN' input: 'a' input: 'b' " + kF +
                        " attr { key: 'N' value { i: 4294967298 } } }"),
                 {"'sum'", "'N'"});
  proto::NodeDef nd;
  nd.set_name("n");
  nd.set_op("X");
  (*nd.mutable_attr())["big"].set_i(int64_t{1} << 40);
  (*nd.mutable_attr())["low"].set_i(std::numeric_limits<int32_t>::min());
  (*nd.mutable_attr())["list"].mutable_list()->add_i(1);
  (*nd.mutable_attr())["list"].mutable_list()->add_i(-(int64_t{1} << 33));
  int32_t v = 7;
  RequireRefused(GetNodeAttr(nd, "big", &v), {"'n'", "'big'", "int32"});
  REQUIRE(v == 7);
  REQUIRE(GetNodeAttr(nd, "low", &v).ok());
  REQUIRE(v == std::numeric_limits<int32_t>::min());
  int64_t w = 0;
  REQUIRE(GetNodeAttr(nd, "big", &w).ok());
  REQUIRE(w == int64_t{1} << 40);
  std::vector<int32_t> l;
  RequireRefused(GetNodeAttr(nd, "list", &l), {"'n'", "'list'"});
}

TEST_CASE("Fill's static shape refuses dims whose product overflows") {
  RequireRefused(ScopeImport(IntConst("d", "dim { size: 2 }", "int_val: 2000000000 int_val: 2000000000") +
                             IntConst("e", "dim { size: 3 }", "int_val: 2000000000 int_val: 2000000000 int_val: 2000000000") +
                             Const("v", "", "float_val: 1") +
                             "node { name: 'ok' op: 'Fill' input: 'd' input: 'v' " + kF + " }\n"
                             "node { name: 'f' op: 'Fill' input: 'e' input: 'v' " + kF + " }"),
                 {"'f'", "2^63-1"});
  // A zero dim makes the product 0: any other dims are fine.
  REQUIRE(ScopeImport(IntConst("e", "dim { size: 3 }", "int_val: 0 int_val: 2000000000 int_val: 2000000000") +
                      Const("v", "", "float_val: 1") + "node { name: 'f' op: 'Fill' input: 'e' input: 'v' " + kF + " }")
              .ok());
}

TEST_CASE("random ops' static shape refuses hostile shape constants") {
  const std::string kRandom = "attr { key: 'dtype' value { type: DT_FLOAT } } attr { key: 'T' value { type: DT_INT32 } }";
  RequireRefused(ScopeImport(IntConst("e", "dim { size: 3 }", "int_val: 2000000000 int_val: 2000000000 int_val: 2000000000") +
                             "node { name: 'r' op: 'RandomUniform' input: 'e' " + kRandom + " }"),
                 {"'r'", "2^63-1"});
  RequireRefused(ScopeImport(IntConst("n", "dim { size: 2 }", "int_val: 3 int_val: -4") +
                             "node { name: 'r' op: 'RandomUniform' input: 'n' " + kRandom + " }"),
                 {"'r'", ">= 0"});
  REQUIRE(ScopeImport(IntConst("ok", "dim { size: 2 }", "int_val: 3 int_val: 4") +
                      "node { name: 'r' op: 'RandomUniform' input: 'ok' " + kRandom + " }")
              .ok());
}

namespace {
std::string Int64Const(const std::string& name, int64_t v) {
  return "node { name: '" + name + "' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } } "
         "attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: " + std::to_string(v) +
         " } } } }\n";
}
std::string RangeNode(const std::string& dtype) {
  return "node { name: 'range' op: 'Range' input: 'start' input: 'limit' input: 'delta' attr { key: 'Tidx' value { "
         "type: " + dtype + " } } }\n";
}
}  // namespace

TEST_CASE("integer Range sizes never overflow: too many is InvalidArgument, huge but valid meets the budget") {
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max(), kMin64 = std::numeric_limits<int64_t>::min();
  // 2^64 - 1 elements: refused statically and by the kernel, naming the node.
  const std::string too_many = Int64Const("start", kMin64) + Int64Const("limit", kMax64) + Int64Const("delta", 1);
  RequireRefused(ScopeImport(too_many + RangeNode("DT_INT64")), {"'range'", "limit - start"});
  Session session;
  proto::GraphDef def = Parse(Placeholder("start", "", "DT_INT64") + Int64Const("limit", kMax64) +
                              Int64Const("delta", 1) + RangeNode("DT_INT64"));
  REQUIRE(session.Create(def).ok());
  std::vector<Tensor> out;
  Status s = session.Run({{"start", Tensor::Scalar<int64_t>(kMin64)}}, {"range"}, {}, &out);
  RequireRefused(s, {"range", "limit - start"});
  // 2^32 - 1 int32 (16 GiB) is a valid size: the allocator refuses it.
  Allocator* a = cpu_allocator();
  const int64_t old_limit = a->limit();
  a->set_limit(a->bytes_in_use() + (int64_t{1} << 30));
  Scope root = Scope::NewRootScope();
  auto start = ops::Placeholder(root.WithOpName("start"), DT_INT32);
  auto r = ops::Range(root.WithOpName("big_range"), start, std::numeric_limits<int32_t>::max(), 1);
  s = test::RunStatus(root, {r}, {{"start", Tensor::Scalar<int32_t>(std::numeric_limits<int32_t>::min())}});
  a->set_limit(old_limit);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kResourceExhausted);
  REQUIRE_THAT(s.message(), Catch::Contains("big_range"));
  // A negative delta across the whole int64 range: 4 values, each exact
  // (|limit - start| and start + i * delta computed without overflow).
  constexpr int64_t q = int64_t{1} << 62;
  auto v = RunText(Int64Const("start", kMax64 - 2) + Int64Const("limit", kMin64) + Int64Const("delta", -q) +
                       RangeNode("DT_INT64"),
                   {"range"});
  REQUIRE(test::Values<int64_t>(v[0]) == std::vector<int64_t>{kMax64 - 2, kMax64 - 2 - q, kMax64 - 2 - q - q,
                                                               kMax64 - 2 - q - q - q});
}

TEST_CASE("a loop frame's iterations grow with those live, not with parallel_iterations") {
  FrameInfo info;
  FrameState f;
  f.info = &info;
  f.parallel_iterations = 1 << 20;
  f.iterations.resize(kInitialIterationRing);
  f.iterations[0] = std::make_unique<IterationState>(info, true, &f, 0);
  auto start_next = [&f, &info] {
    const int64_t next = ++f.iteration_count;
    auto& slot = NewIterationSlot(&f, next);
    REQUIRE(slot == nullptr);
    slot = std::make_unique<IterationState>(info, true, &f, next);
    ++f.num_outstanding_iterations;
  };
  for (int i = 1; i < 100; ++i) start_next();  // 100 live: the ring doubled to 128 slots
  REQUIRE(f.iterations.size() == 128);
  for (int64_t i = 0; i < 100; ++i) REQUIRE(f.iteration(i)->iter == i);
  for (int64_t i = 0; i < 90; ++i) {  // the oldest 90 finish, in order
    f.iteration_slot(i).reset();
    --f.num_outstanding_iterations;
  }
  for (int i = 0; i < 1000; ++i) {  // a long run with 10 live: no growth, slots reused
    start_next();
    f.iteration_slot(f.iteration_count - 10).reset();
    --f.num_outstanding_iterations;
  }
  REQUIRE(f.iterations.size() == 128);
  REQUIRE(f.iteration(f.iteration_count - 10) == nullptr);  // the one just freed reads empty
  for (int64_t i = f.iteration_count - 9; i <= f.iteration_count; ++i) REQUIRE(f.iteration(i)->iter == i);
  // The ring never passes parallel_iterations + 1 slots.
  FrameState g;
  g.info = &info;
  g.parallel_iterations = 20;
  g.iterations.resize(kInitialIterationRing);
  g.iterations[0] = std::make_unique<IterationState>(info, true, &g, 0);
  for (int64_t next = 1; next < 20; ++next) {
    g.iteration_count = next;
    NewIterationSlot(&g, next) = std::make_unique<IterationState>(info, true, &g, next);
    ++g.num_outstanding_iterations;
  }
  REQUIRE(g.iterations.size() == 21);
  for (int64_t i = 0; i < 20; ++i) REQUIRE(g.iteration(i)->iter == i);
}

TEST_CASE("a loop with parallel_iterations 2^20 runs, its iterations overlapping") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Fill(root, {32, 32}, 1.f);
  OutputList out;
  ops::WhileOptions o;
  o.parallel_iterations = 1 << 20;
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0), ops::Const(root, 0.f)},
              [](const Scope& s, const OutputList& v, Output* pred) {
                *pred = ops::Less(s, v[0], 300);
                return s.status();
              },
              [&m](const Scope& s, const OutputList& v, OutputList* next) {
                // Waits only for the counter: iterations may run ahead of the sum.
                auto prod = ops::MatMul(s.WithControlDependencies({v[0].op()}), m, m);
                auto corner = ops::Sum(s, ops::Slice(s, prod, {0, 0}, {1, 1}), {0, 1});
                *next = {ops::Add(s, v[0], 1), ops::Add(s, v[1], corner)};
                return s.status();
              },
              &out, o)
              .ok());
  auto v = test::RunOk(root, {out[0], out[1]});
  REQUIRE(test::Values<int32_t>(v[0]) == std::vector<int32_t>{300});
  REQUIRE(test::Values<float>(v[1]) == std::vector<float>{300 * 32.f});
}

namespace {
// Loops nested `depth` deep: a chain of Enters, each into a new frame whose
// name has `name_bytes` bytes, then as many Exits back to the root.
std::string NestedFrames(int depth, size_t name_bytes) {
  std::string text = Const("n0");
  for (int i = 1; i <= depth; ++i) {
    std::string frame = "f" + std::to_string(i);
    frame.resize(std::max(frame.size(), name_bytes), 'x');
    text += "node { name: 'n" + std::to_string(i) + "' op: 'Enter' input: 'n" + std::to_string(i - 1) + "' " + kF +
            " attr { key: 'frame_name' value { s: '" + frame + "' } } }\n";
  }
  for (int i = depth + 1; i <= 2 * depth; ++i)
    text += "node { name: 'n" + std::to_string(i) + "' op: 'Exit' input: 'n" + std::to_string(i - 1) + "' " + kF + " }\n";
  return text;
}
}  // namespace

TEST_CASE("loops nested past the bounds on depth and frame names are refused; 1000 deep runs") {
  // 100,000 nested loops (a 14 MB GraphDef) took memory quadratic in their
  // depth in a step (each run-time frame names its ancestors) until killed.
  const std::vector<Tensor> out = RunText(NestedFrames(kMaxFrameDepth, 1), {"n2000"});
  REQUIRE(test::Values<float>(out.at(0)) == std::vector<float>{1, 2});
  Session session;
  REQUIRE(session.Create(Parse(NestedFrames(kMaxFrameDepth + 1, 1))).ok());
  std::vector<Tensor> none;
  RequireRefused(session.Run({}, {"n2002"}, {}, &none), {"'n1001'", "'Enter'", "1001 deep"});
  Session named;
  REQUIRE(named.Create(Parse(NestedFrames(3, 30000))).ok());
  RequireRefused(named.Run({}, {"n6"}, {}, &none), {"'n3'", "90000 bytes"});
  REQUIRE(session.Run({}, {"n0"}, {}, &none).ok());  // the session goes on
}
