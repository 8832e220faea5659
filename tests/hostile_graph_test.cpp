// Hostile GraphDefs: count attrs that disagree with a node's inputs or ask for
// absurd numbers of tensors, shapes of absurd rank, and static shapes whose
// dims would size or overflow shape inference. Each is refused quickly with an
// InvalidArgument naming the node, its op and the attr (never std::bad_alloc,
// length_error or gigabytes taken), and the valid graph of each op still works.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "graph/graph_def_io.hpp"
#include "graph/static_shapes.hpp"
#include "ops/attrs.hpp"
#include "ops/shape_inference.hpp"
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
