// The ops TensorFlow graphs use beyond the basic set (issue 18's list),
// against hand-computed values: element-wise functions (Log1p, Expm1, Floor,
// Ceil, Round, Sin, Cos, Erf, SquaredDifference, DivNoNan), activations
// (Elu, Selu, Softplus, Relu6, LeakyRelu) with their backprop ops, and
// StridedSlice with StridedSliceGrad (Python's slicing, as numpy gives it).
// Their gradients are checked against central differences in gradients_test.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Run1;
using test::RunStatus;

namespace {
void CheckNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).margin(tol).epsilon(tol));
  }
}
}  // namespace

TEST_CASE("Log1p, Expm1, Sin, Cos and Erf compute their functions; Log1p and Expm1 keep tiny values") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {0.0, 1e-10, 0.5, -0.25, 2.0});
  CheckNear(Run1<double>(root, ops::Log1p(root, x)), {0, 1e-10 - 5e-21, std::log(1.5), std::log(0.75), std::log(3.0)});
  CheckNear(Run1<double>(root, ops::Expm1(root, x)), {0, 1e-10 + 5e-21, std::exp(0.5) - 1, std::exp(-0.25) - 1,
                                                        std::exp(2.0) - 1});
  CheckNear(Run1<double>(root, ops::Sin(root, x)), {0, 1e-10, std::sin(0.5), std::sin(-0.25), std::sin(2.0)});
  CheckNear(Run1<double>(root, ops::Cos(root, x)), {1, 1, std::cos(0.5), std::cos(-0.25), std::cos(2.0)});
  // erf(0.5) and erf(2) to 16 digits (Abramowitz & Stegun's tables).
  CheckNear(Run1<double>(root, ops::Erf(root, ops::Const(root, {0.0, 0.5, 2.0, -2.0}))),
            {0, 0.5204998778130465, 0.9953222650189527, -0.9953222650189527}, 1e-15);
  const std::vector<float> f = Run1<float>(root, ops::Log1p(root, ops::Const(root, {1e-8f})));
  CHECK(f[0] == Approx(1e-8f).epsilon(1e-6));  // log(1 + 1e-8f) in float would be 0
}

TEST_CASE("Floor and Ceil; Round rounds half to even and leaves integers") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.6f, -2.6f});
  CHECK(Run1<float>(root, ops::Floor(root, x)) == std::vector<float>{-3, -2, -1, 0, 1, 2, 2, -3});
  CHECK(Run1<float>(root, ops::Ceil(root, x)) == std::vector<float>{-2, -1, -0., 1, 2, 3, 3, -2});
  CHECK(Run1<float>(root, ops::Round(root, x)) == std::vector<float>{-2, -2, -0., 0, 2, 2, 3, -3});
  CHECK(Run1<int32_t>(root, ops::Round(root, ops::Const(root, {-3, 0, 7}))) == std::vector<int32_t>{-3, 0, 7});
}

TEST_CASE("SquaredDifference broadcasts and wraps integers; DivNoNan is 0 wherever the divisor is 0") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}});
  CHECK(Run1<float>(root, ops::SquaredDifference(root, m, ops::Const(root, {2.f, 0.f}))) ==
        std::vector<float>{1, 4, 1, 16});
  CHECK(Run1<int32_t>(root, ops::SquaredDifference(root, ops::Const(root, {65536}), ops::Const(root, {0}))) ==
        std::vector<int32_t>{0});  // 2^32 wraps to 0
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  auto num = ops::Const(root, {1.0, 0.0, inf, nan, 6.0});
  auto den = ops::Const(root, {0.0, 0.0, 0.0, 0.0, 3.0});
  CHECK(Run1<double>(root, ops::DivNoNan(root, num, den)) == std::vector<double>{0, 0, 0, 0, 2});
  CHECK(Run1<double>(root, ops::DivNoNan(root, num, 0.0)) == std::vector<double>{0, 0, 0, 0, 0});
  CHECK(Run1<double>(root, ops::DivNoNan(root, 3.0, ops::Const(root, {0.0, 1.5}))) == std::vector<double>{0, 2});
}

TEST_CASE("Elu, Selu, Softplus, Relu6 and LeakyRelu, and their backprop ops") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {-2.0, -0.5, 0.0, 0.5, 7.0});
  CheckNear(Run1<double>(root, ops::Elu(root, x)), {std::expm1(-2.0), std::expm1(-0.5), 0, 0.5, 7});
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  CheckNear(Run1<double>(root, ops::Selu(root, x)),
            {scale * alpha * std::expm1(-2.0), scale * alpha * std::expm1(-0.5), 0, scale * 0.5, scale * 7});
  CheckNear(Run1<double>(root, ops::Softplus(root, x)),
            {std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log(2.0), std::log1p(std::exp(0.5)),
             std::log1p(std::exp(7.0))});
  // Softplus neither overflows nor loses large or very negative values.
  CheckNear(Run1<double>(root, ops::Softplus(root, ops::Const(root, {1000.0, -1000.0}))), {1000, 0});
  CHECK(Run1<float>(root, ops::Softplus(root, ops::Const(root, {100.f})))[0] == 100.f);
  CHECK(Run1<double>(root, ops::Relu6(root, x)) == std::vector<double>{0, 0, 0, 0.5, 6});
  CHECK(Run1<int32_t>(root, ops::Relu6(root, ops::Const(root, {-1, 3, 9}))) == std::vector<int32_t>{0, 3, 6});
  const double a = 0.2f;  // the attr is a float, as in TensorFlow
  CHECK(Run1<double>(root, ops::LeakyRelu(root, x)) == std::vector<double>{-2 * a, -0.5 * a, 0, 0.5, 7});
  CHECK(Run1<double>(root, ops::LeakyRelu(root, x, 0.5f)) == std::vector<double>{-1, -0.25, 0, 0.5, 7});

  auto g = ops::Const(root, {1.0, 2.0, 3.0, 4.0, 5.0});
  auto y = ops::Const(root, {-0.5, -0.25, 0.0, 0.5, 7.0});  // Elu/Selu outputs
  CheckNear(Run1<double>(root, ops::EluGrad(root, g, y)), {0.5, 1.5, 3, 4, 5});
  CheckNear(Run1<double>(root, ops::SeluGrad(root, g, y)),
            {1 * (-0.5 + scale * alpha), 2 * (-0.25 + scale * alpha), 3 * scale, 4 * scale, 5 * scale});
  CheckNear(Run1<double>(root, ops::SoftplusGrad(root, g, x)),
            {1 / (1 + std::exp(2.0)), 2 / (1 + std::exp(0.5)), 1.5, 4 / (1 + std::exp(-0.5)), 5 / (1 + std::exp(-7.0))});
  CHECK(Run1<double>(root, ops::Relu6Grad(root, g, ops::Const(root, {-1.0, 0.0, 3.0, 6.0, 7.0}))) ==
        std::vector<double>{0, 0, 3, 0, 0});
  CHECK(Run1<double>(root, ops::LeakyReluGrad(root, g, x, 0.1f)) ==
        std::vector<double>{double(0.1f), 2 * double(0.1f), 3 * double(0.1f), 4, 5});
  // The backprop ops need one shape.
  const Status s = RunStatus(root, {ops::LeakyReluGrad(root, g, ops::Const(root, {1.0}))}, {});
  CHECK(s.code() == Code::kInvalidArgument);
}

namespace {
Tensor I64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return MakeTensor<int64_t>(v, {n});
}
// x[begin:end:strides] with masks, as a graph node, run.
Tensor Sliced(const Tensor& x, std::vector<int64_t> b, std::vector<int64_t> e, std::vector<int64_t> s,
              ops::StridedSliceAttrs a = {}) {
  Scope root = Scope::NewRootScope();
  return test::RunOk(root, {ops::StridedSlice(root, ops::Const(root, x), I64(b), I64(e), I64(s), a)})[0];
}
Status SliceError(const Tensor& x, std::vector<int64_t> b, std::vector<int64_t> e, std::vector<int64_t> s,
                  ops::StridedSliceAttrs a = {}) {
  Scope root = Scope::NewRootScope();
  return RunStatus(root, {ops::StridedSlice(root, ops::Const(root, x), I64(b), I64(e), I64(s), a)}, {});
}
}  // namespace

TEST_CASE("StridedSlice slices as Python does: masks, negative strides, ellipsis, new axes, shrinking") {
  std::vector<int32_t> values(24);
  for (int i = 0; i < 24; ++i) values[i] = i;
  const Tensor x = MakeTensor<int32_t>(values, {2, 3, 4});
  ops::StridedSliceAttrs a;
  a.begin_mask = 2;  // x[1:, ::2, -1]
  a.end_mask = 3;
  a.shrink_axis_mask = 4;
  Tensor t = Sliced(x, {1, 0, -1}, {0, 0, 0}, {1, 2, 1}, a);
  CHECK(t.shape().dim_sizes() == std::vector<int64_t>{1, 2});
  CHECK(test::Values<int32_t>(t) == std::vector<int32_t>{15, 23});

  ops::StridedSliceAttrs r;  // x[::-1, 0, 1:3]
  r.begin_mask = 1;
  r.end_mask = 1;
  r.shrink_axis_mask = 2;
  t = Sliced(x, {0, 0, 1}, {0, 0, 3}, {-1, 1, 1}, r);
  CHECK(t.shape().dim_sizes() == std::vector<int64_t>{2, 2});
  CHECK(test::Values<int32_t>(t) == std::vector<int32_t>{13, 14, 1, 2});

  ops::StridedSliceAttrs en;  // x[..., tf.newaxis, 1]
  en.ellipsis_mask = 1;
  en.new_axis_mask = 2;
  en.shrink_axis_mask = 4;
  t = Sliced(x, {0, 0, 1}, {0, 0, 2}, {1, 1, 1}, en);
  CHECK(t.shape().dim_sizes() == std::vector<int64_t>{2, 3, 1});
  CHECK(test::Values<int32_t>(t) == std::vector<int32_t>{1, 5, 9, 13, 17, 21});

  ops::StridedSliceAttrs mid;  // x[:, ..., 2]: an ellipsis in the middle, by itself
  mid.begin_mask = 1;
  mid.end_mask = 1;
  mid.ellipsis_mask = 2;
  mid.shrink_axis_mask = 4;
  t = Sliced(x, {0, 0, 2}, {0, 0, 3}, {1, 1, 1}, mid);
  CHECK(t.shape().dim_sizes() == std::vector<int64_t>{2, 3});
  CHECK(test::Values<int32_t>(t) == std::vector<int32_t>{2, 6, 10, 14, 18, 22});

  const Tensor v = MakeTensor<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10});
  ops::StridedSliceAttrs to_end;
  to_end.end_mask = 1;
  CHECK(test::Values<float>(Sliced(v, {-3}, {0}, {1}, to_end)) == std::vector<float>{7, 8, 9});    // v[-3:]
  CHECK(test::Values<float>(Sliced(v, {8}, {2}, {-2})) == std::vector<float>{8, 6, 4});            // v[8:2:-2]
  CHECK(Sliced(v, {20}, {0}, {1}, to_end).NumElements() == 0);                                     // v[20:]
  CHECK(test::Values<float>(Sliced(v, {-100}, {3}, {1})) == std::vector<float>{0, 1, 2});          // v[-100:3]
  CHECK(test::Values<float>(Sliced(v, {5}, {-100}, {-3})) == std::vector<float>{5, 2});            // v[5:-100:-3]
  CHECK(Sliced(v, {2}, {1}, {1}).NumElements() == 0);                                              // v[2:1]
  ops::StridedSliceAttrs all;
  all.begin_mask = all.end_mask = 1;
  CHECK(test::Values<float>(Sliced(v, {0}, {0}, {1}, all)) == test::Values<float>(v));              // v[:]
  ops::StridedSliceAttrs one;
  one.shrink_axis_mask = 1;
  t = Sliced(v, {-1}, {0}, {1}, one);                                                                // v[-1]
  CHECK(t.dims() == 0);
  CHECK(t.scalar<float>() == 9);

  const Tensor words = MakeTensor<std::string>({"a", "b", "c", "d"}, {4});
  CHECK(test::Values<std::string>(Sliced(words, {3}, {0}, {-2})) == std::vector<std::string>{"d", "b"});

  Status s = SliceError(v, {10}, {11}, {1}, one);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("out of bounds"));
  s = SliceError(v, {0}, {5}, {0});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("strides[0] must be non-zero"));
  s = SliceError(v, {0, 0}, {1}, {1});
  CHECK(s.code() == Code::kInvalidArgument);
  s = SliceError(v, {0, 0}, {1, 1}, {1, 1});  // two indices for one dimension
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("Index out of range"));
}

TEST_CASE("StridedSlice's static shape; StridedSliceGrad scatters dy into zeros") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 6}));
  ops::StridedSliceAttrs a;  // x[:, 1::2]
  a.begin_mask = 1;
  a.end_mask = 3;
  auto y = ops::StridedSlice(root, x, I64({0, 1}), I64({0, 0}), I64({1, 2}), a);
  REQUIRE(root.ok());
  const PartialTensorShape shape = root.InferredShape(y);
  CHECK(shape.dims() == 2);
  CHECK(shape.dim_size(0) == -1);
  CHECK(shape.dim_size(1) == 3);

  auto g = ops::StridedSliceGrad(root, I64({5}), I64({1}), I64({5}), I64({2}), ops::Const(root, {7.f, 8.f}));
  CHECK(Run1<float>(root, g) == std::vector<float>{0, 7, 0, 8, 0});
  ops::StridedSliceAttrs shrink;
  shrink.shrink_axis_mask = 1;
  auto g2 = ops::StridedSliceGrad(root, I64({2, 2}), I64({1}), I64({2}), I64({1}), ops::Const(root, {3.0, 4.0}), shrink);
  CHECK(Run1<double>(root, g2) == std::vector<double>{0, 0, 3, 4});
}
