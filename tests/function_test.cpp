// Graphs that call the functions of their library, as TensorFlow 2 writes
// them (graph/function_inlining.hpp): PartitionedCall and
// StatefulPartitionedCall with captured resource variables, nested calls,
// direct calls by function name, side effects run by a call's control edge,
// If and StatelessIf lowered to Switch and Merge, and what is refused.
#include <catch2/catch.hpp>

#include "actorflow/client/session.hpp"
#include "actorflow/graph/function_inlining.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::Values;

namespace {

proto::GraphDef Parse(const std::string& text) {
  proto::GraphDef def;
  Status s = ParseGraphDefText(text, &def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return def;
}

Status RunGraph(const proto::GraphDef& def, const std::vector<std::pair<std::string, Tensor>>& feeds,
                const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                std::vector<Tensor>* out, Session* session = nullptr) {
  Session own;
  Session* s = session ? session : &own;
  if (!session) AF_RETURN_IF_ERROR(s->Create(def));
  RunOptions bounded;
  bounded.timeout_in_ms = 60000;
  return s->Run(bounded, feeds, fetches, targets, out);
}

// A TF2-style graph: y = matmul(x, read(w)) + 1 inside a function whose call
// captures the variable's handle; a second function (called by the first)
// adds the one; an "assign" function sets w and returns nothing.
const char* kCallGraph = R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "w" op: "VarHandleOp"
       attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } dim { size: 2 } } } }
       attr { key: "shared_name" value { s: "function_test_w" } } }
node { name: "init_value" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 2 } }
                                            float_val: 2 float_val: 0 float_val: 0 float_val: 3 } } } }
node { name: "init" op: "StatefulPartitionedCall" input: "w" input: "init_value"
       attr { key: "Tin" value { list { type: DT_RESOURCE type: DT_FLOAT } } }
       attr { key: "Tout" value { list { } } }
       attr { key: "f" value { func { name: "__inference_assign_7" } } } }
node { name: "serve" op: "StatefulPartitionedCall" input: "x" input: "w"
       attr { key: "Tin" value { list { type: DT_FLOAT type: DT_RESOURCE } } }
       attr { key: "Tout" value { list { type: DT_FLOAT } } }
       attr { key: "f" value { func { name: "__inference_serve_12" } } } }
node { name: "y" op: "Identity" input: "serve" attr { key: "T" value { type: DT_FLOAT } } }
library {
  function {
    signature { name: "__inference_serve_12"
                input_arg { name: "x" type: DT_FLOAT } input_arg { name: "w" type: DT_RESOURCE }
                output_arg { name: "identity" type: DT_FLOAT } is_stateful: true }
    node_def { name: "ReadVariableOp" op: "ReadVariableOp" input: "w" attr { key: "dtype" value { type: DT_FLOAT } } }
    node_def { name: "MatMul" op: "MatMul" input: "x" input: "ReadVariableOp:value:0"
               attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "add_one" op: "PartitionedCall" input: "MatMul:product:0"
               attr { key: "Tin" value { list { type: DT_FLOAT } } }
               attr { key: "Tout" value { list { type: DT_FLOAT } } }
               attr { key: "f" value { func { name: "__inference_add_one_3" } } } }
    node_def { name: "Identity" op: "Identity" input: "add_one:output:0" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "identity" value: "Identity:output:0" }
  }
  function {
    signature { name: "__inference_add_one_3" input_arg { name: "v" type: DT_FLOAT }
                output_arg { name: "out" type: DT_FLOAT } }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }
    node_def { name: "sum" op: "AddV2" input: "v" input: "one:output:0" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "out" value: "sum:z:0" }
  }
  function {
    signature { name: "__inference_assign_7" input_arg { name: "w" type: DT_RESOURCE }
                input_arg { name: "value" type: DT_FLOAT } is_stateful: true }
    node_def { name: "AssignVariableOp" op: "AssignVariableOp" input: "w" input: "value"
               attr { key: "dtype" value { type: DT_FLOAT } } }
    control_ret { key: "AssignVariableOp" value: "AssignVariableOp" }
  }
}
)";

}  // namespace

TEST_CASE("calls of library functions run: captured variables, nested calls, side effects by control edge") {
  proto::GraphDef def = Parse(kCallGraph);
  CHECK(HasFunctionCalls(def));
  CHECK(UnregisteredOps(def).empty());
  Session session;
  Status s = session.Create(def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::vector<Tensor> out;
  REQUIRE(RunGraph(def, {}, {}, {"init"}, &out, &session).ok());  // "init" returns nothing: its effect runs
  s = RunGraph(def, {{"x", test::MakeTensor<float>({1, 1, 2, -1}, TensorShape{2, 2})}}, {"y", "serve:0"}, {}, &out,
               &session);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Values<float>(out[0]) == std::vector<float>{3, 4, 5, -2});  // x . [[2,0],[0,3]] + 1
  CHECK(Values<float>(out[1]) == Values<float>(out[0]));

  // The inlined graph names its nodes after the call.
  proto::GraphDef inlined = def;
  REQUIRE(InlineFunctionCalls(&inlined).ok());
  std::set<std::string> names;
  for (const auto& n : inlined.node()) names.insert(n.name());
  CHECK(names.count("serve/MatMul"));
  CHECK(names.count("serve/add_one/sum"));
  CHECK(!HasFunctionCalls(inlined));
}

TEST_CASE("If and StatelessIf run only the branch taken, side effects included") {
  const std::string text = R"(
node { name: "p" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "v" op: "VarHandleOp" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { } } } attr { key: "shared_name" value { s: "function_test_if_v" } } }
node { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 0 } } } }
node { name: "init" op: "AssignVariableOp" input: "v" input: "zero" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "cond" op: "If" input: "p" input: "x" input: "v"
       attr { key: "Tcond" value { type: DT_BOOL } }
       attr { key: "Tin" value { list { type: DT_FLOAT type: DT_RESOURCE } } }
       attr { key: "Tout" value { list { type: DT_FLOAT } } }
       attr { key: "then_branch" value { func { name: "double_and_count" } } }
       attr { key: "else_branch" value { func { name: "negate" } } } }
node { name: "read" op: "ReadVariableOp" input: "v" input: "^cond" attr { key: "dtype" value { type: DT_FLOAT } } }
library {
  function {
    signature { name: "double_and_count" input_arg { name: "a" type: DT_FLOAT } input_arg { name: "c" type: DT_RESOURCE }
                output_arg { name: "r" type: DT_FLOAT } is_stateful: true }
    node_def { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 2 } } } }
    node_def { name: "m" op: "Mul" input: "a" input: "two:output:0" attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }
    node_def { name: "count" op: "AssignAddVariableOp" input: "c" input: "one:output:0"
               attr { key: "dtype" value { type: DT_FLOAT } } }
    ret { key: "r" value: "m:z:0" }
  }
  function {
    signature { name: "negate" input_arg { name: "a" type: DT_FLOAT } input_arg { name: "c" type: DT_RESOURCE }
                output_arg { name: "r" type: DT_FLOAT } }
    node_def { name: "n" op: "Neg" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "r" value: "n:y:0" }
  }
}
)";
  for (const char* op : {"If", "StatelessIf"}) {
    INFO(op);
    proto::GraphDef def = Parse(text);
    for (auto& n : *def.mutable_node())
      if (n.name() == "cond") n.set_op(op);
    Session session;
    Status s = session.Create(def);
    INFO(s.ToString());
    REQUIRE(s.ok());
    std::vector<Tensor> out;
    REQUIRE(RunGraph(def, {}, {}, {"init"}, &out, &session).ok());
    auto run = [&](bool p, float x) {
      Status st = RunGraph(def, {{"p", Tensor::Scalar<bool>(p)}, {"x", Tensor::Scalar<float>(x)}}, {"cond", "read"}, {},
                           &out, &session);
      INFO(st.ToString());
      REQUIRE(st.ok());
      return std::make_pair(out[0].scalar<float>(), out[1].scalar<float>());
    };
    CHECK(run(true, 3.f) == std::make_pair(6.f, 1.f));    // doubled; counted
    CHECK(run(false, 3.f) == std::make_pair(-3.f, 1.f));  // negated; the count unchanged
    CHECK(run(true, -1.f) == std::make_pair(-2.f, 2.f));
  }
}

TEST_CASE("calls that cannot be inlined are refused naming the node and the function") {
  // A function the library lacks.
  proto::GraphDef def = Parse(R"(
node { name: "c" op: "PartitionedCall"
       attr { key: "Tin" value { list { } } } attr { key: "Tout" value { list { } } }
       attr { key: "f" value { func { name: "missing_fn" } } } })");
  Graph g;
  Status s = ImportGraphDef(def, &g);
  CHECK(!s.ok());
  CHECK_THAT(s.message(), Contains("'c'") && Contains("missing_fn"));
  // Unknown ops inside a function are listed with the function's name.
  def = Parse(R"(
node { name: "c" op: "f" }
library { function { signature { name: "f" } node_def { name: "inner" op: "NoSuchOp" } } })");
  const auto missing = UnregisteredOps(def);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].op == "NoSuchOp");
  CHECK(missing[0].first_node == "f/inner");
  Graph g2;
  s = ImportGraphDef(def, &g2);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("NoSuchOp") && Contains("f/inner"));
  // A function calling itself.
  def = Parse(R"(
node { name: "c" op: "loop" }
library { function { signature { name: "loop" } node_def { name: "again" op: "loop" } } })");
  Graph g3;
  s = ImportGraphDef(def, &g3);
  CHECK(errors::IsUnimplemented(s));
  CHECK_THAT(s.message(), Contains("nested deeper"));
}

TEST_CASE("While and StatelessWhile run as frames: loop variables, a resource counter, the result") {
  // i = 0, acc = 1; while i < n: acc *= 2; i += 1; count += 1 (a resource variable) -> acc = 2^n.
  const std::string text = R"(
node { name: "n" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "count" op: "VarHandleOp" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "shape" value { shape { } } } attr { key: "shared_name" value { s: "function_test_while_count" } } }
node { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 0 } } } }
node { name: "one_f" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }
node { name: "init" op: "AssignVariableOp" input: "count" input: "zero" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "loop" op: "While" input: "zero" input: "one_f" input: "n" input: "count"
       attr { key: "T" value { list { type: DT_INT32 type: DT_FLOAT type: DT_INT32 type: DT_RESOURCE } } }
       attr { key: "cond" value { func { name: "loop_cond" } } }
       attr { key: "body" value { func { name: "loop_body" } } }
       attr { key: "parallel_iterations" value { i: 10 } } }
node { name: "acc" op: "Identity" input: "loop:1" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "read" op: "ReadVariableOp" input: "count" input: "^loop" attr { key: "dtype" value { type: DT_INT32 } } }
library {
  function {
    signature { name: "loop_cond" input_arg { name: "i" type: DT_INT32 } input_arg { name: "acc" type: DT_FLOAT }
                input_arg { name: "n" type: DT_INT32 } input_arg { name: "c" type: DT_RESOURCE }
                output_arg { name: "keep_going" type: DT_BOOL } }
    node_def { name: "Less" op: "Less" input: "i" input: "n" attr { key: "T" value { type: DT_INT32 } } }
    ret { key: "keep_going" value: "Less:z:0" }
  }
  function {
    signature { name: "loop_body" input_arg { name: "i" type: DT_INT32 } input_arg { name: "acc" type: DT_FLOAT }
                input_arg { name: "n" type: DT_INT32 } input_arg { name: "c" type: DT_RESOURCE }
                output_arg { name: "i_next" type: DT_INT32 } output_arg { name: "acc_next" type: DT_FLOAT }
                output_arg { name: "n_same" type: DT_INT32 } output_arg { name: "c_same" type: DT_RESOURCE }
                is_stateful: true }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
               attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 1 } } } }
    node_def { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 2 } } } }
    node_def { name: "add" op: "AddV2" input: "i" input: "one:output:0" attr { key: "T" value { type: DT_INT32 } } }
    node_def { name: "mul" op: "Mul" input: "acc" input: "two:output:0" attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "bump" op: "AssignAddVariableOp" input: "c" input: "one:output:0"
               attr { key: "dtype" value { type: DT_INT32 } } }
    ret { key: "i_next" value: "add:z:0" }
    ret { key: "acc_next" value: "mul:z:0" }
    ret { key: "n_same" value: "n" }
    ret { key: "c_same" value: "c" }
  }
}
)";
  for (const char* op : {"While", "StatelessWhile"}) {
    INFO(op);
    proto::GraphDef def = Parse(text);
    for (auto& n : *def.mutable_node())
      if (n.name() == "loop") n.set_op(op);
    Session session;
    Status s = session.Create(def);
    INFO(s.ToString());
    REQUIRE(s.ok());
    std::vector<Tensor> out;
    for (int n : {0, 1, 5}) {
      INFO("n = " << n);
      REQUIRE(RunGraph(def, {}, {}, {"init"}, &out, &session).ok());
      s = RunGraph(def, {{"n", Tensor::Scalar<int32_t>(n)}}, {"acc", "loop:0", "read"}, {}, &out, &session);
      INFO(s.ToString());
      REQUIRE(s.ok());
      CHECK(out[0].scalar<float>() == static_cast<float>(1 << n));
      CHECK(out[1].scalar<int32_t>() == n);
      CHECK(out[2].scalar<int32_t>() == n);  // the body's side effect ran once per iteration, before the read
    }
  }
}

TEST_CASE("nested calls that would grow the graph exponentially are refused, not run out of memory") {
  // f0 calls f1 twice, f1 calls f2 twice, ... f30: 2^30 copies of f30's body.
  std::string text = "node { name: \"c\" op: \"f0\" }\nlibrary {\n";
  for (int i = 0; i < 30; ++i)
    text += "function { signature { name: \"f" + std::to_string(i) + "\" } node_def { name: \"a\" op: \"f" +
            std::to_string(i + 1) + "\" } node_def { name: \"b\" op: \"f" + std::to_string(i + 1) + "\" } }\n";
  text += "function { signature { name: \"f30\" } node_def { name: \"n\" op: \"NoOp\" } }\n}\n";
  proto::GraphDef def = Parse(text);
  Graph g;
  Status s = ImportGraphDef(def, &g);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("more than"));
}
