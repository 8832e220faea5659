// Defined arithmetic: integer kernels wrap in two's complement at the overflow
// edge, on every path (fed at run time, constant inputs folded when the
// session is created, and FoldConstants itself); Cast from floating point to
// integers saturates; integer division by zero is refused, naming the node;
// AssignAdd/AssignSub on integer variables wrap and CountUpTo stops at the
// dtype's maximum.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/graph/constant_folding.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Cpu;
using test::MakeTensor;
using test::RunOk;
using test::RunStatus;
using test::Values;
using Catch::Matchers::Contains;

namespace {

constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::lowest();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::lowest();

using Build = std::function<Output(const Scope&, const std::vector<Output>&)>;

// Builds `build` on `inputs` and REQUIREs `expected` three ways:
//  - the inputs fed to placeholders: the kernel runs in the step;
//  - the inputs as constants in a session: the graph is folded at Create;
//  - FoldConstants on the constant graph: the folded Const holds `expected`
//    (skipped for `folds` false: asynchronous kernels are never folded).
template <class T>
void CheckAllPaths(const std::vector<Tensor>& inputs, const Build& build, const std::vector<T>& expected,
                   bool folds = true) {
  {
    INFO("fed through placeholders");
    Scope root = Scope::NewRootScope();
    std::vector<Output> in;
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string name = "in" + std::to_string(i);
      in.push_back(ops::Placeholder(root.WithOpName(name), inputs[i].dtype()));
      feeds.emplace_back(name, inputs[i]);
    }
    auto out = RunOk(root, {build(root, in)}, feeds);
    REQUIRE(Values<T>(out[0]) == expected);
  }
  {
    INFO("constants, folded by the session");
    Scope root = Scope::NewRootScope();
    std::vector<Output> in;
    for (const Tensor& t : inputs) in.push_back(ops::Const(root, t));
    auto out = RunOk(root, {ops::Identity(root, build(root, in))});
    REQUIRE(Values<T>(out[0]) == expected);
  }
  if (!folds) return;
  INFO("FoldConstants");
  Scope root = Scope::NewRootScope();
  std::vector<Output> in;
  for (const Tensor& t : inputs) in.push_back(ops::Const(root, t));
  ops::Identity(root.WithOpName("leaf"), build(root, in));
  REQUIRE(root.ok());
  Graph* g = root.graph();
  bool changed = false;
  REQUIRE(FoldConstants(g, Cpu(), ConstantFoldingOptions(), &changed).ok());
  REQUIRE(changed);
  const Edge* e = g->FindNode("leaf")->input_edge(0);
  REQUIRE(e != nullptr);
  REQUIRE(e->src->type_string() == "Const");
  Tensor folded;
  REQUIRE(TensorFromProto(e->src->def().attr().at("value").tensor(), &folded).ok());
  REQUIRE(Values<T>(folded) == expected);
}

template <class T>
Tensor Vec(const std::vector<T>& v) {
  return MakeTensor<T>(v, TensorShape{static_cast<int64_t>(v.size())});
}

Build Binary(const std::string& op) {
  return [op](const Scope& s, const std::vector<Output>& in) { return s.AddOp(op, {{in[0]}, {in[1]}}).output(0); };
}
Build Unary(const std::string& op) {
  return [op](const Scope& s, const std::vector<Output>& in) { return s.AddOp(op, {{in[0]}}).output(0); };
}

}  // namespace

TEST_CASE("integer Add, Sub and Mul wrap in two's complement") {
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, kMin32, 5}), Vec<int32_t>({1, -1, 7})}, Binary("Add"),
                         {kMin32, kMax32, 12});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMax64}), Vec<int64_t>({1})}, Binary("AddV2"), {kMin64});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, kMax32}), Vec<int32_t>({1, -1})}, Binary("Sub"), {kMax32, kMin32});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMin64}), Vec<int64_t>({1})}, Binary("Sub"), {kMax64});
  CheckAllPaths<int32_t>({Vec<int32_t>({65536, kMax32, kMin32}), Vec<int32_t>({65536, 2, -1})}, Binary("Mul"),
                         {0, -2, kMin32});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMax64, int64_t{1} << 32}), Vec<int64_t>({kMax64, int64_t{1} << 32})},
                         Binary("Mul"), {1, 0});
  // A scalar operand, and numpy broadcasting ([2,1] * [2]).
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, 3}), Tensor::Scalar<int32_t>(2)}, Binary("Mul"), {-2, 6});
  CheckAllPaths<int32_t>({Tensor::Scalar<int32_t>(kMax32), Vec<int32_t>({1, 2})}, Binary("Add"),
                         {kMin32, kMin32 + 1});
  CheckAllPaths<int32_t>({MakeTensor<int32_t>({kMax32, kMin32}, {2, 1}), Vec<int32_t>({1, -1})}, Binary("Add"),
                         {kMin32, kMax32 - 1, kMin32 + 1, kMax32});
}

TEST_CASE("integer Neg, Abs and Square wrap: Neg(INT_MIN) == INT_MIN") {
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, 5, 0})}, Unary("Neg"), {kMin32, -5, 0});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMin64, -7})}, Unary("Neg"), {kMin64, 7});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, -3, 4})}, Unary("Abs"), {kMin32, 3, 4});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMin64, -3})}, Unary("Abs"), {kMin64, 3});
  CheckAllPaths<int32_t>({Vec<int32_t>({65536, 46341, -3})}, Unary("Square"), {0, -2147479015, 9});
  CheckAllPaths<int64_t>({Vec<int64_t>({int64_t{1} << 32, kMax64})}, Unary("Square"), {0, 1});
}

TEST_CASE("integer Sum, Mean and Prod wrap, in every reduction layout") {
  auto reduce = [](const std::string& op, std::vector<int32_t> axes) -> Build {
    return [op, axes](const Scope& s, const std::vector<Output>& in) {
      return s.AddOp(op, {{in[0]}, {ops::Const(s, Vec<int32_t>(axes))}}).output(0);
    };
  };
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, 1})}, reduce("Sum", {0}), {kMin32});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMax64, kMax64, 2})}, reduce("Sum", {0}), {0});
  // [K, R] rows, [R, K] columns, [K, R, K] and a transposed general layout.
  const Tensor m = MakeTensor<int32_t>({kMax32, 1, 1, kMax32}, {2, 2});
  CheckAllPaths<int32_t>({m}, reduce("Sum", {1}), {kMin32, kMin32});
  CheckAllPaths<int32_t>({m}, reduce("Sum", {0}), {kMin32, kMin32});
  const Tensor cube = MakeTensor<int32_t>({kMax32, 1, 1, 1, 1, 1, 1, kMax32}, {2, 2, 2});
  CheckAllPaths<int32_t>({cube}, reduce("Sum", {1}), {kMin32, 2, 2, kMin32});
  CheckAllPaths<int32_t>({cube}, reduce("Sum", {0, 2}), {kMin32 + 2, kMin32 + 2});
  // The mean divides the wrapped sum.
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, 1})}, reduce("Mean", {0}), {kMin32 / 2});
  CheckAllPaths<int32_t>({Vec<int32_t>({65536, 65536}), Vec<int32_t>({0})},
                         [](const Scope& s, const std::vector<Output>& in) { return ops::Prod(s, in[0], in[1]); }, {0});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, kMax32, -1})}, reduce("Prod", {0}), {-1});
  CheckAllPaths<int64_t>({MakeTensor<int64_t>({int64_t{1} << 32, 3, int64_t{1} << 32, 5}, {2, 2})}, reduce("Prod", {0}),
                         {0, 15});
  // Max and Min still compare as signed.
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, -1, kMax32})}, reduce("Max", {0}), {kMax32});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, -1, kMax32})}, reduce("Min", {0}), {kMin32});
}

TEST_CASE("integer Cumsum, Cumprod and AddN wrap") {
  auto scan = [](const std::string& op, bool exclusive, bool reverse) -> Build {
    return [=](const Scope& s, const std::vector<Output>& in) {
      return op == "Cumsum" ? ops::Cumsum(s, in[0], 0, exclusive, reverse) : ops::Cumprod(s, in[0], 0, exclusive, reverse);
    };
  };
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, 1, 1})}, scan("Cumsum", false, false), {kMax32, kMin32, kMin32 + 1});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, 1, 1})}, scan("Cumsum", true, false), {0, kMax32, kMin32});
  CheckAllPaths<int32_t>({Vec<int32_t>({1, 1, kMax32})}, scan("Cumsum", false, true), {kMin32 + 1, kMin32, kMax32});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMax64, kMax64})}, scan("Cumsum", false, false), {kMax64, -2});
  CheckAllPaths<int64_t>({Vec<int64_t>({int64_t{1} << 32, int64_t{1} << 32, 3})}, scan("Cumprod", false, false),
                         {int64_t{1} << 32, 0, 0});
  CheckAllPaths<int32_t>({Vec<int32_t>({65536, 65536, 3})}, scan("Cumprod", true, false), {1, 65536, 0});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMax32, 0}), Vec<int32_t>({1, kMin32}), Vec<int32_t>({1, -1})},
                         [](const Scope& s, const std::vector<Output>& in) {
                           return ops::AddN(s, {in[0], in[1], in[2]});
                         },
                         {kMin32 + 1, kMax32});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMax64}), Vec<int64_t>({kMax64})},
                         [](const Scope& s, const std::vector<Output>& in) { return ops::AddN(s, {in[0], in[1]}); },
                         {-2});
}

TEST_CASE("integer MatMul wraps, small and sharded over the pool") {
  auto matmul = [](bool ta, bool tb) -> Build {
    return [=](const Scope& s, const std::vector<Output>& in) { return ops::MatMul(s, in[0], in[1], ta, tb); };
  };
  // MatMul is asynchronous: never folded; its constant inputs still run in a session.
  CheckAllPaths<int32_t>({MakeTensor<int32_t>({kMax32, 1}, {1, 2}), MakeTensor<int32_t>({1, 1}, {2, 1})},
                         matmul(false, false), {kMin32}, false);
  CheckAllPaths<int32_t>({MakeTensor<int32_t>({65536}, {1, 1}), MakeTensor<int32_t>({65536}, {1, 1})},
                         matmul(false, false), {0}, false);
  CheckAllPaths<int64_t>({MakeTensor<int64_t>({kMax64, kMax64}, {1, 2}), MakeTensor<int64_t>({1, 2}, {1, 2})},
                         matmul(false, true), {kMax64 - 2}, false);
  // 256^3: computed on the compute pool, in row blocks; all of A's entries
  // are INT32_MAX, all of B's 1: 256 * INT32_MAX wraps to -256.
  const int n = 256;
  const Tensor a = MakeTensor<int32_t>(std::vector<int32_t>(n * n, kMax32), {n, n});
  const Tensor b = MakeTensor<int32_t>(std::vector<int32_t>(n * n, 1), {n, n});
  CheckAllPaths<int32_t>({a, b}, matmul(false, false), std::vector<int32_t>(n * n, -256), false);
  CheckAllPaths<int32_t>({a, b}, matmul(true, false), std::vector<int32_t>(n * n, -256), false);
}

TEST_CASE("integer BiasAdd and BiasAddGrad wrap") {
  CheckAllPaths<int32_t>({MakeTensor<int32_t>({kMax32, 0, kMin32, 5}, {2, 2}), Vec<int32_t>({1, -1})},
                         [](const Scope& s, const std::vector<Output>& in) { return ops::BiasAdd(s, in[0], in[1]); },
                         {kMin32, -1, kMin32 + 1, 4});
  CheckAllPaths<int64_t>({MakeTensor<int64_t>({kMax64, kMax64, kMin64, 0}, {1, 2, 2}), Vec<int64_t>({1, -1})},
                         [](const Scope& s, const std::vector<Output>& in) {
                           return ops::BiasAdd(s, in[0], in[1], "NCHW");
                         },
                         {kMin64, kMin64, kMax64, -1});
  CheckAllPaths<int32_t>({MakeTensor<int32_t>({kMax32, 1, 1, 1}, {2, 2})},
                         [](const Scope& s, const std::vector<Output>& in) { return ops::BiasAddGrad(s, in[0]); },
                         {kMin32, 2});
}

TEST_CASE("integer division: INT_MIN / -1 wraps, a zero divisor is refused naming the node") {
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, 7, -7}), Vec<int32_t>({-1, -1, 2})}, Binary("Div"), {kMin32, -7, -3});
  CheckAllPaths<int64_t>({Vec<int64_t>({kMin64}), Vec<int64_t>({-1})}, Binary("FloorDiv"), {kMin64});
  CheckAllPaths<int32_t>({Vec<int32_t>({kMin32, -7}), Vec<int32_t>({-1, 2})}, Binary("FloorMod"), {0, 1});
  for (const char* op : {"Div", "FloorDiv", "FloorMod"}) {
    INFO(op);
    for (bool fed : {true, false}) {  // at run time, and with constant inputs (folding leaves the node)
      Scope root = Scope::NewRootScope();
      Output y = fed ? ops::Placeholder(root.WithOpName("y"), DT_INT64) : ops::Const(root, Vec<int64_t>({3, 0}));
      Output q = root.WithOpName("quotient").AddOp(op, {{ops::Const(root, Vec<int64_t>({6, 6}))}, {y}}).output(0);
      std::vector<std::pair<std::string, Tensor>> feeds;
      if (fed) feeds.emplace_back("y", Vec<int64_t>({3, 0}));
      const Status s = RunStatus(root, {q}, feeds);
      INFO(s.ToString());
      REQUIRE(s.code() == Code::kInvalidArgument);
      REQUIRE_THAT(s.message(), Contains("Integer division by zero") && Contains("'quotient'"));
    }
  }
}

TEST_CASE("Cast from floating point to integers saturates; NaN is 0") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto cast = [](DataType dt) -> Build {
    return [dt](const Scope& s, const std::vector<Output>& in) { return ops::Cast(s, in[0], dt); };
  };
  // float(INT32_MAX) is 2^31, one past the max: it saturates too.
  CheckAllPaths<int32_t>({Vec<float>({nan, inf, -inf, 3e9f, -3e9f, 2147483648.f, -2147483648.f, 1.9f, -1.9f})},
                         cast(DT_INT32), {0, kMax32, kMin32, kMax32, kMin32, kMax32, kMin32, 1, -1});
  const double dinf = std::numeric_limits<double>::infinity();
  CheckAllPaths<int64_t>({Vec<double>({std::nan(""), dinf, -dinf, 1e19, -1e19, 0x1p62, -0x1p63, 9223372036854775807.0})},
                         cast(DT_INT64), {0, kMax64, kMin64, kMax64, kMin64, int64_t{1} << 62, kMin64, kMax64});
  CheckAllPaths<int32_t>({Vec<double>({1e300, -1e300, 2147483647.0, -2147483648.5})}, cast(DT_INT32),
                         {kMax32, kMin32, kMax32, kMin32});
  CheckAllPaths<uint8_t>({Vec<float>({nan, inf, -inf, 300.f, -5.f, 255.9f, 7.5f, -0.5f})}, cast(DT_UINT8),
                         {0, 255, 0, 255, 0, 255, 7, 0});
  CheckAllPaths<int8_t>({Vec<float>({200.f, -200.f, nan, -128.f, 127.f})}, cast(DT_INT8), {127, -128, 0, -128, 127});
  CheckAllPaths<int16_t>({Vec<double>({1e5, -1e5, dinf})}, cast(DT_INT16), {32767, -32768, 32767});
  CheckAllPaths<uint16_t>({Vec<float>({1e5f, -1.f, 65535.f})}, cast(DT_UINT16), {65535, 0, 65535});
  CheckAllPaths<uint32_t>({Vec<double>({5e9, -1.0, 4294967295.0, std::nan("")})}, cast(DT_UINT32),
                          {4294967295u, 0, 4294967295u, 0});
  CheckAllPaths<uint64_t>({Vec<float>({1e20f, -inf, 18446744073709551616.f, 1.5f})}, cast(DT_UINT64),
                          {std::numeric_limits<uint64_t>::max(), 0, std::numeric_limits<uint64_t>::max(), 1});
  // In range, and the other conversions, are plain C++ conversions.
  CheckAllPaths<int32_t>({Vec<int64_t>({(int64_t{1} << 32) + 5, -1})}, cast(DT_INT32), {5, -1});
  CheckAllPaths<float>({Vec<int32_t>({kMax32, -3})}, cast(DT_FLOAT), {2147483648.f, -3.f});
}

namespace {

// Runs `targets` then fetches `fetches` in a session of `root`'s graph.
std::vector<Tensor> RunSteps(Session* session, const std::vector<std::string>& fetches,
                             const std::vector<std::string>& targets = {}) {
  std::vector<Tensor> out;
  Status s = session->Run({}, fetches, targets, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

template <class T>
void CheckVariableAddSubWraps() {
  constexpr T kMax = std::numeric_limits<T>::max(), kMin = std::numeric_limits<T>::lowest();
  const std::string p = std::string("wrap_var_") + DataTypeString(DataTypeToEnum<T>::value);
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName(p), PartialTensorShape(TensorShape{3}), DataTypeToEnum<T>::value);
  ops::Assign(root.WithOpName(p + "_init"), v, ops::Const(root, Vec<T>({kMax, kMin, 5})));
  ops::AssignAdd(root.WithOpName(p + "_add"), v, ops::Const(root, Vec<T>({1, -1, kMax})));
  ops::AssignSub(root.WithOpName(p + "_sub"), v, ops::Const(root, Vec<T>({1, -1, kMax})));
  REQUIRE(root.ok());
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  Session session;
  REQUIRE(session.Create(def).ok());
  RunSteps(&session, {}, {p + "_init"});
  // kMax + 1 == kMin, kMin - 1 == kMax, 5 + kMax == kMin + 4.
  REQUIRE(Values<T>(RunSteps(&session, {p + "_add"})[0]) == std::vector<T>{kMin, kMax, static_cast<T>(kMin + 4)});
  // And back: AssignSub wraps the other way.
  REQUIRE(Values<T>(RunSteps(&session, {p + "_sub"})[0]) == std::vector<T>{kMax, kMin, 5});
}

}  // namespace

TEST_CASE("AssignAdd and AssignSub on int32 and int64 variables wrap in two's complement") {
  CheckVariableAddSubWraps<int32_t>();
  CheckVariableAddSubWraps<int64_t>();
}

TEST_CASE("CountUpTo on an int32 variable stops at INT32_MAX even when the limit is above it") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("count_up_to_max32"), PartialTensorShape(TensorShape{}), DT_INT32);
  ops::Assign(root.WithOpName("init"), v, ops::Const(root, Tensor::Scalar<int32_t>(kMax32 - 1)));
  ops::CountUpTo(root.WithOpName("count"), v, int64_t{1} << 40);
  ops::Identity(root.WithOpName("read"), v);
  REQUIRE(root.ok());
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  Session session;
  REQUIRE(session.Create(def).ok());
  RunSteps(&session, {}, {"init"});
  REQUIRE(Values<int32_t>(RunSteps(&session, {"count"})[0]) == std::vector<int32_t>{kMax32 - 1});
  std::vector<Tensor> out;
  const Status s = session.Run({}, {"count"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kOutOfRange);
  REQUIRE_THAT(s.message(), Contains("count_up_to_max32"));
  REQUIRE(Values<int32_t>(RunSteps(&session, {"read"})[0]) == std::vector<int32_t>{kMax32});
}
