// Kernels of the ops gradient graphs are built from, against hand-computed
// values: AddN, StopGradient, the backprop ops, BiasAddGrad, Reciprocal, Sign,
// Div, FloorDiv, FloorMod, Cumsum, Cumprod, Tile, Pad, Unpack and the index
// ops; the errors bad inputs give; large inputs sharded over the pool.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Run1;
using test::RunOk;
using test::RunStatus;
using test::ShapeOf;
using test::Values;
using Catch::Matchers::Contains;

namespace {
/// The error of running `o` with `feeds`; REQUIREs InvalidArgument.
std::string ErrorOf(const Scope& root, const Output& o, const std::vector<std::pair<std::string, Tensor>>& feeds) {
  const Status s = RunStatus(root, {o}, feeds);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kInvalidArgument);
  return s.message();
}
}  // namespace

TEST_CASE("AddN sums tensors of one shape") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}});
  auto b = ops::Const(root, {{10.f, 20.f}, {30.f, 40.f}});
  REQUIRE(Run1<float>(root, ops::AddN(root, {a, b, a})) == std::vector<float>{12, 24, 36, 48});
  REQUIRE(Run1<float>(root, ops::AddN(root, {a})) == std::vector<float>{1, 2, 3, 4});
  REQUIRE(Run1<int64_t>(root, ops::AddN(root, {int64_t{5}, int64_t{-7}})) == std::vector<int64_t>{-2});
  // Known shapes that differ fail when the graph is built, unknown ones when it runs.
  Scope bad = Scope::NewRootScope();
  ops::AddN(bad.WithOpName("sum"), {ops::Const(bad, {1.f, 2.f}), ops::Const(bad, {1.f})});
  REQUIRE_THAT(bad.status().message(), Contains("'sum'") && Contains("same shape"));
  auto p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT);
  REQUIRE_THAT(ErrorOf(root, ops::AddN(root, {a, p}), {{"p", MakeTensor<float>({1, 2}, {2})}}),
               Contains("must have the same shape"));
}

TEST_CASE("StopGradient passes its input through") {
  Scope root = Scope::NewRootScope();
  REQUIRE(Run1<int32_t>(root, ops::StopGradient(root, ops::Const(root, {1, 2}))) == std::vector<int32_t>{1, 2});
}

TEST_CASE("Reciprocal, Sign and the backprop ops of element-wise functions") {
  Scope root = Scope::NewRootScope();
  REQUIRE(Run1<double>(root, ops::Reciprocal(root, ops::Const(root, {2.0, -4.0}))) == std::vector<double>{0.5, -0.25});
  REQUIRE(Run1<float>(root, ops::Sign(root, ops::Const(root, {-2.f, 0.f, 3.f}))) == std::vector<float>{-1, 0, 1});
  REQUIRE(Run1<int32_t>(root, ops::Sign(root, ops::Const(root, {-2, 0, 3}))) == std::vector<int32_t>{-1, 0, 1});
  auto y = ops::Const(root, {0.5, 2.0});
  auto dy = ops::Const(root, {2.0, 1.0});
  // y (1 - y) dy, (1 - y^2) dy, 0.5 dy / y, -0.5 y^3 dy, -y^2 dy
  REQUIRE(Run1<double>(root, ops::SigmoidGrad(root, y, dy)) == std::vector<double>{0.5, -2});
  REQUIRE(Run1<double>(root, ops::TanhGrad(root, y, dy)) == std::vector<double>{1.5, -3});
  REQUIRE(Run1<double>(root, ops::SqrtGrad(root, y, dy)) == std::vector<double>{2, 0.25});
  REQUIRE(Run1<double>(root, ops::RsqrtGrad(root, y, dy)) == std::vector<double>{-0.125, -4});
  REQUIRE(Run1<double>(root, ops::ReciprocalGrad(root, y, dy)) == std::vector<double>{-0.5, -4});
  REQUIRE(Run1<float>(root, ops::ReluGrad(root, ops::Const(root, {1.f, 2.f, 3.f}), ops::Const(root, {-1.f, 0.f, 2.f}))) ==
          std::vector<float>{0, 0, 3});
  REQUIRE(Run1<int32_t>(root, ops::ReluGrad(root, ops::Const(root, {4, 5}), ops::Const(root, {1, -1}))) ==
          std::vector<int32_t>{4, 0});
}

TEST_CASE("BiasAddGrad sums all but the channel dimension") {
  Scope root = Scope::NewRootScope();
  auto nhwc = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});  // [3, C=2]
  REQUIRE(Run1<float>(root, ops::BiasAddGrad(root, nhwc)) == std::vector<float>{9, 12});
  auto nchw = ops::Const(root, {{{{1.0}, {2.0}}, {{3.0}, {4.0}}}, {{{5.0}, {6.0}}, {{7.0}, {8.0}}}});  // [2, C=2, 2, 1]
  REQUIRE(Run1<double>(root, ops::BiasAddGrad(root, nchw, "NCHW")) == std::vector<double>{14, 22});
  auto rank3 = ops::Const(root, {{{1, 2, 3}, {4, 5, 6}}});  // [1, 2, C=3]
  REQUIRE(Run1<int32_t>(root, ops::BiasAddGrad(root, rank3)) == std::vector<int32_t>{5, 7, 9});
  auto p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT);
  REQUIRE(Run1<float>(root, ops::BiasAddGrad(root, p), {{"p", Tensor(DT_FLOAT, TensorShape{0, 3})}}) ==
          std::vector<float>{0, 0, 0});
  REQUIRE_THAT(ErrorOf(root, ops::BiasAddGrad(root, p), {{"p", MakeTensor<float>({1, 2}, {2})}}),
               Contains("at least 2D"));
}

TEST_CASE("Div truncates integers, FloorDiv and FloorMod round toward -inf, zero divisors fail") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {7, -7, 7, -7});
  auto y = ops::Const(root, {2, 2, -2, -2});
  auto div = root.AddOp("Div", {{x}, {y}}).output(0);
  REQUIRE(Run1<int32_t>(root, div) == std::vector<int32_t>{3, -3, -3, 3});
  REQUIRE(Run1<int32_t>(root, ops::FloorDiv(root, x, y)) == std::vector<int32_t>{3, -4, -4, 3});
  REQUIRE(Run1<int32_t>(root, ops::FloorMod(root, x, y)) == std::vector<int32_t>{1, 1, -1, -1});
  auto xf = ops::Const(root, {7.5, -7.5});
  REQUIRE(Run1<double>(root, ops::FloorDiv(root, xf, 2.0)) == std::vector<double>{3, -4});
  REQUIRE(Run1<double>(root, ops::FloorMod(root, xf, 2.0)) == std::vector<double>{1.5, 0.5});
  REQUIRE(Run1<double>(root, ops::FloorMod(root, xf, -2.0)) == std::vector<double>{-0.5, -1.5});
  REQUIRE(Run1<double>(root, root.AddOp("Div", {{xf}, {ops::Const(root, 2.0)}}).output(0)) ==
          std::vector<double>{3.75, -3.75});
  // The one overflowing quotient wraps instead of trapping.
  const int64_t lowest = std::numeric_limits<int64_t>::lowest();
  REQUIRE(Run1<int64_t>(root, ops::FloorDiv(root, lowest, int64_t{-1})) == std::vector<int64_t>{lowest});
  REQUIRE(Run1<int64_t>(root, ops::FloorMod(root, lowest, int64_t{-1})) == std::vector<int64_t>{0});
  auto d = ops::Placeholder(root.WithOpName("d"), DT_INT32);
  const std::vector<std::pair<std::string, Tensor>> zero = {{"d", MakeTensor<int32_t>({1, 0}, {2})}};
  REQUIRE_THAT(ErrorOf(root, ops::FloorDiv(root, x, d), zero), Contains("Integer division by zero"));
  REQUIRE_THAT(ErrorOf(root, ops::FloorMod(root, 3, d), zero), Contains("Integer division by zero"));
  REQUIRE_THAT(ErrorOf(root, root.AddOp("Div", {{ops::Const(root, 5)}, {d}}).output(0), zero),
               Contains("Integer division by zero"));
  // Nothing divided, nothing to fail.
  REQUIRE(ShapeOf(root, ops::FloorMod(root, ops::Const(root, Tensor(DT_INT32, TensorShape{0})), 0)) ==
          std::vector<int64_t>{0});
}

TEST_CASE("Cumsum and Cumprod: inclusive, exclusive, reversed, along any axis") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Const(root, {1.f, 2.f, 3.f});
  REQUIRE(Run1<float>(root, ops::Cumsum(root, v, 0)) == std::vector<float>{1, 3, 6});
  REQUIRE(Run1<float>(root, ops::Cumsum(root, v, 0, true)) == std::vector<float>{0, 1, 3});
  REQUIRE(Run1<float>(root, ops::Cumsum(root, v, 0, false, true)) == std::vector<float>{6, 5, 3});
  REQUIRE(Run1<float>(root, ops::Cumsum(root, v, 0, true, true)) == std::vector<float>{5, 3, 0});
  REQUIRE(Run1<float>(root, ops::Cumprod(root, v, 0)) == std::vector<float>{1, 2, 6});
  REQUIRE(Run1<float>(root, ops::Cumprod(root, v, 0, true)) == std::vector<float>{1, 1, 2});
  REQUIRE(Run1<float>(root, ops::Cumprod(root, v, 0, true, true)) == std::vector<float>{6, 3, 1});
  auto m = ops::Const(root, {{1, 2, 3}, {4, 5, 6}});
  REQUIRE(Run1<int32_t>(root, ops::Cumsum(root, m, 0)) == std::vector<int32_t>{1, 2, 3, 5, 7, 9});
  REQUIRE(Run1<int32_t>(root, ops::Cumsum(root, m, -1)) == std::vector<int32_t>{1, 3, 6, 4, 9, 15});
  REQUIRE(Run1<int32_t>(root, ops::Cumprod(root, m, int64_t{1}, false, true)) ==
          std::vector<int32_t>{6, 6, 3, 120, 30, 6});
  auto p = ops::Placeholder(root.WithOpName("p"), DT_INT32);
  REQUIRE_THAT(ErrorOf(root, ops::Cumsum(root, m, p), {{"p", Tensor::Scalar<int32_t>(2)}}),
               Contains("Expected scan axis in the range [-2, 2), but got 2"));
}

TEST_CASE("Tile repeats along every dimension, for any dtype") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1, 2}, {3, 4}});
  REQUIRE(Run1<int32_t>(root, ops::Tile(root, m, {2, 3})) ==
          std::vector<int32_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  REQUIRE(ShapeOf(root, ops::Tile(root, m, {2, 3})) == std::vector<int64_t>{4, 6});
  REQUIRE(Run1<int32_t>(root, ops::Tile(root, m, {2, 1})) == std::vector<int32_t>{1, 2, 3, 4, 1, 2, 3, 4});
  REQUIRE(ShapeOf(root, ops::Tile(root, m, {0, 2})) == std::vector<int64_t>{0, 4});
  auto s = ops::Const(root, {std::string("a"), std::string("bc")});
  REQUIRE(Run1<std::string>(root, ops::Tile(root, s, {2})) == std::vector<std::string>{"a", "bc", "a", "bc"});
  REQUIRE(Run1<double>(root, ops::Tile(root, ops::Const(root, 1.5), Tensor(DT_INT32, TensorShape{0}))) ==
          std::vector<double>{1.5});
  auto p = ops::Placeholder(root.WithOpName("p"), DT_INT32);
  REQUIRE_THAT(ErrorOf(root, ops::Tile(root, m, p), {{"p", MakeTensor<int32_t>({1, -1}, {2})}}),
               Contains("Expected multiples[1] >= 0, but got -1"));
  REQUIRE_THAT(ErrorOf(root, ops::Tile(root, m, p), {{"p", MakeTensor<int32_t>({1, 2, 3}, {3})}}),
               Contains("vector of length 2"));
}

TEST_CASE("Pad surrounds with zeros (empty strings)") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}});
  REQUIRE(Run1<float>(root, ops::Pad(root, m, {{1, 0}, {0, 2}})) ==
          std::vector<float>{0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0});
  REQUIRE(ShapeOf(root, ops::Pad(root, m, {{1, 0}, {0, 2}})) == std::vector<int64_t>{3, 4});
  auto v = ops::Const(root, {std::string("x")});
  REQUIRE(Run1<std::string>(root, ops::Pad(root, v, {{1, 1}})) == std::vector<std::string>{"", "x", ""});
  auto p = ops::Placeholder(root.WithOpName("p"), DT_INT32);
  REQUIRE_THAT(ErrorOf(root, ops::Pad(root, m, p), {{"p", MakeTensor<int32_t>({0, 1, -1, 0}, {2, 2})}}),
               Contains("Paddings must be non-negative: -1 0"));
  REQUIRE_THAT(ErrorOf(root, ops::Pad(root, m, p), {{"p", MakeTensor<int32_t>({0, 1}, {1, 2})}}),
               Contains("rank of inputs 2"));
}

TEST_CASE("Unpack splits a tensor into its slices along an axis") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1, 2, 3}, {4, 5, 6}});
  auto rows = ops::Unstack(root, m, 2, 0);
  auto cols = ops::Unstack(root, m, 3, -1);
  auto out = RunOk(root, {rows[0], rows[1], cols[0], cols[2]});
  REQUIRE(Values<int32_t>(out[0]) == std::vector<int32_t>{1, 2, 3});
  REQUIRE(Values<int32_t>(out[1]) == std::vector<int32_t>{4, 5, 6});
  REQUIRE(Values<int32_t>(out[2]) == std::vector<int32_t>{1, 4});
  REQUIRE(Values<int32_t>(out[3]) == std::vector<int32_t>{3, 6});
  Scope bad = Scope::NewRootScope();
  ops::Unstack(bad.WithOpName("u"), ops::Const(bad, {1, 2}), 3);
  REQUIRE_THAT(bad.status().message(), Contains("'u'") && Contains("num = 3"));
  auto p = ops::Placeholder(root.WithOpName("p"), DT_INT32);
  REQUIRE_THAT(ErrorOf(root, ops::Unstack(root, p, 3)[0], {{"p", MakeTensor<int32_t>({1, 2}, {2})}}),
               Contains("must equal num = 3"));
}

TEST_CASE("index ops: BroadcastGradientArgs, ReducedShape, InvertPermutation, ConcatOffset, ListDiff") {
  Scope root = Scope::NewRootScope();
  auto bga = ops::BroadcastGradientArgs(root, {2, 3, 4}, {3, 1});
  auto out = RunOk(root, {bga.r0, bga.r1});
  REQUIRE(Values<int32_t>(out[0]).empty());
  REQUIRE(Values<int32_t>(out[1]) == std::vector<int32_t>{0, 2});
  auto scalar = ops::BroadcastGradientArgs(root, Tensor(DT_INT64, TensorShape{0}), ops::Const(root, {int64_t{2}, int64_t{1}}));
  out = RunOk(root, {scalar.r0, scalar.r1});
  REQUIRE(Values<int64_t>(out[0]) == std::vector<int64_t>{0, 1});
  REQUIRE(Values<int64_t>(out[1]) == std::vector<int64_t>{1});  // a dim of 1 in both: reduced for both
  auto p = ops::Placeholder(root.WithOpName("p"), DT_INT32);
  REQUIRE_THAT(ErrorOf(root, ops::BroadcastGradientArgs(root, {2}, p).r0, {{"p", MakeTensor<int32_t>({3}, {1})}}),
               Contains("Incompatible shapes: [2] vs. [3]"));

  REQUIRE(Run1<int32_t>(root, ops::ReducedShape(root, {2, 3, 4}, {1, -1})) == std::vector<int32_t>{2, 1, 1});
  REQUIRE(Run1<int64_t>(root, ops::ReducedShape(root, ops::Const(root, {int64_t{5}, int64_t{6}}), 0)) ==
          std::vector<int64_t>{1, 6});
  REQUIRE_THAT(ErrorOf(root, ops::ReducedShape(root, {2, 3}, p), {{"p", Tensor::Scalar<int32_t>(2)}}),
               Contains("Invalid reduction dimension 2"));

  REQUIRE(Run1<int32_t>(root, ops::InvertPermutation(root, {2, 0, 1})) == std::vector<int32_t>{1, 2, 0});
  REQUIRE_THAT(ErrorOf(root, ops::InvertPermutation(root, p), {{"p", MakeTensor<int32_t>({0, 0}, {2})}}),
               Contains("0 is duplicated"));
  REQUIRE_THAT(ErrorOf(root, ops::InvertPermutation(root, p), {{"p", MakeTensor<int32_t>({0, 2}, {2})}}),
               Contains("x[1] = 2 is out of range [0, 2)"));

  auto offsets = ops::ConcatOffset(root, 1, {ops::Const(root, {2, 3}), ops::Const(root, {2, 5}), ops::Const(root, {2, 1})});
  out = RunOk(root, offsets);
  REQUIRE(Values<int32_t>(out[0]) == std::vector<int32_t>{0, 0});
  REQUIRE(Values<int32_t>(out[1]) == std::vector<int32_t>{0, 3});
  REQUIRE(Values<int32_t>(out[2]) == std::vector<int32_t>{0, 8});
  REQUIRE(Values<int32_t>(RunOk(root, ops::ConcatOffset(root, -2, {ops::Const(root, {1, 3}), ops::Const(root, {4, 3})}))[1]) ==
          std::vector<int32_t>{1, 0});
  REQUIRE_THAT(ErrorOf(root, ops::ConcatOffset(root, 0, {p, ops::Const(root, {2, 3})})[0],
                       {{"p", MakeTensor<int32_t>({2, 4}, {2})}}),
               Contains("input[1,1] mismatch: 3 vs. 4"));

  auto diff = ops::ListDiff(root, {1, 2, 3, 4, 5, 6}, {1, 3, 5, 7});
  out = RunOk(root, {diff.out, diff.idx});
  REQUIRE(Values<int32_t>(out[0]) == std::vector<int32_t>{2, 4, 6});
  REQUIRE(Values<int32_t>(out[1]) == std::vector<int32_t>{1, 3, 5});
  auto diff64 = ops::ListDiff(root, {1.5, 2.5}, {2.5}, DT_INT64);
  out = RunOk(root, {diff64.out, diff64.idx});
  REQUIRE(Values<double>(out[0]) == std::vector<double>{1.5});
  REQUIRE(Values<int64_t>(out[1]) == std::vector<int64_t>{0});
}

TEST_CASE("large inputs: AddN, Cumsum, Tile, Pad and BiasAddGrad sharded over the pool match reference loops") {
  Scope root = Scope::NewRootScope();
  const int rows = 300, cols = 500;
  Tensor a(DT_FLOAT, TensorShape{rows, cols}), b(DT_FLOAT, TensorShape{rows, cols});
  for (int i = 0; i < rows * cols; ++i) {
    a.data<float>()[i] = static_cast<float>(i % 13) - 6;
    b.data<float>()[i] = static_cast<float>(i % 7);
  }
  auto out = RunOk(root, {ops::AddN(root, {a, b, a}), ops::Cumsum(root, a, 0), ops::Cumsum(root, a, 1, true, true),
                          ops::Tile(root, a, {2, 3}), ops::Pad(root, b, {{1, 2}, {3, 4}}), ops::BiasAddGrad(root, a)});
  for (int i : {0, 777, rows * cols - 1}) REQUIRE(out[0].data<float>()[i] == 2 * a.data<float>()[i] + b.data<float>()[i]);
  for (int c : {0, 321, cols - 1}) {
    float sum = 0;
    for (int r = 0; r < rows; ++r) {
      sum += a.data<float>()[r * cols + c];
      REQUIRE(out[1].data<float>()[r * cols + c] == sum);
    }
  }
  for (int r : {0, 150, rows - 1}) {
    float sum = 0;
    for (int c = cols - 1; c >= 0; --c) {
      REQUIRE(out[2].data<float>()[r * cols + c] == sum);
      sum += a.data<float>()[r * cols + c];
    }
  }
  REQUIRE(out[3].shape() == TensorShape({2 * rows, 3 * cols}));
  for (int r : {0, 299, 300, 599})
    for (int c : {0, 499, 500, 1499})
      REQUIRE(out[3].data<float>()[r * 3 * cols + c] == a.data<float>()[(r % rows) * cols + c % cols]);
  REQUIRE(out[4].shape() == TensorShape({rows + 3, cols + 7}));
  const int pc = cols + 7;
  REQUIRE(out[4].data<float>()[0] == 0);
  REQUIRE(out[4].data<float>()[1 * pc + 3] == b.data<float>()[0]);
  REQUIRE(out[4].data<float>()[(rows) * pc + 3 + cols - 1] == b.data<float>()[rows * cols - 1]);
  REQUIRE(out[4].data<float>()[(rows) * pc + 3 + cols] == 0);
  REQUIRE(out[4].data<float>()[(rows + 2) * pc + pc - 1] == 0);
  for (int c : {0, 250, cols - 1}) {
    float sum = 0;
    for (int r = 0; r < rows; ++r) sum += a.data<float>()[r * cols + c];
    REQUIRE(out[5].data<float>()[c] == sum);
  }
}
