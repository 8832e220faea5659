// Symbolic gradients: every registered gradient function against central
// differences in float64 (tables of cases by op family, gradient_checker.hpp),
// and what AddSymbolicGradients itself promises: summing, pruning to the paths
// from xs to ys, zeros for unconnected xs, StopGradient, integer and ref
// dtypes, control edges, errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <set>

#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "gradient_checker.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::CheckGradients;
using test::Doubles;
using test::GradCheckOptions;
using test::GradFn;
using test::RunOk;
using test::Values;
using Catch::Matchers::Contains;

namespace {

// ---------------------------------------------------------------------------
// Test-only ops: one without a gradient, one producing a ref tensor (as a
// variable does).

AF_REGISTER_OP("TestOpWithoutGradient")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Identity with no gradient registered (gradients_test).");

bool IsTestOp(const std::string& op) { return op.rfind("Test", 0) == 0; }

// ---------------------------------------------------------------------------
// Case tables.

struct GradCase {
  std::string name;
  GradFn f;
  std::vector<Tensor> xs;
  GradCheckOptions options = {};
};

using Outs = std::vector<Output>;
using Xs = std::vector<Output>;

Tensor U(const TensorShape& shape, double lo, double hi, uint32_t seed = 1) {
  return test::Uniform(shape, lo, hi, seed);
}

GradFn Unary(Output (*op)(const Scope&, Input)) {
  return [op](const Scope& s, const Xs& x) { return Outs{op(s, x[0])}; };
}
GradFn Binary(Output (*op)(const Scope&, Input, Input)) {
  return [op](const Scope& s, const Xs& x) { return Outs{op(s, x[0], x[1])}; };
}
GradFn Raw(const std::string& op_type) {
  return [op_type](const Scope& s, const Xs& x) {
    return Outs{s.AddOp(op_type, {{x[0]}, {x[1]}}).output(0)};
  };
}
GradCheckOptions Static() {
  GradCheckOptions o;
  o.static_shapes = true;
  return o;
}

const TensorShape k23{2, 3};
// Values of magnitude in [0.3, 2], away from the kinks of Abs and Relu at 0.
Tensor AwayFromZero(const TensorShape& shape) {
  Tensor t = U(shape, 0.3, 2, 5);
  for (int64_t i = 0; i < t.NumElements(); i += 2) t.data<double>()[i] = -t.data<double>()[i];
  return t;
}

// Each row scaled to sum to 1: cross-entropy labels.
Tensor Distributions(Tensor t) {
  const int64_t cols = t.dim_size(t.dims() - 1);
  for (int64_t r = 0; r < t.NumElements() / cols; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += t.data<double>()[r * cols + c];
    for (int64_t c = 0; c < cols; ++c) t.data<double>()[r * cols + c] /= sum;
  }
  return t;
}

std::vector<GradCase> UnaryMathCases() {
  return {
      {"Neg", Unary(ops::Neg), {U(k23, -2, 2)}},
      {"Abs", Unary(ops::Abs), {AwayFromZero(k23)}},
      {"Square", Unary(ops::Square), {U(k23, -2, 2)}},
      {"Exp", Unary(ops::Exp), {U(k23, -2, 2)}},
      {"Log", Unary(ops::Log), {U(k23, 0.5, 3)}},
      {"Sqrt", Unary(ops::Sqrt), {U(k23, 0.5, 3)}},
      {"Rsqrt", Unary(ops::Rsqrt), {U(k23, 0.5, 3)}},
      {"Reciprocal", Unary(ops::Reciprocal), {AwayFromZero(k23)}},
      {"Tanh", Unary(ops::Tanh), {U(k23, -2, 2)}},
      {"Sigmoid", Unary(ops::Sigmoid), {U(k23, -3, 3)}},
      {"Sigmoid of a scalar", Unary(ops::Sigmoid), {Doubles({0.4}, {})}},
      {"Log1p", Unary(ops::Log1p), {U(k23, -0.5, 3)}},
      {"Expm1", Unary(ops::Expm1), {U(k23, -2, 2)}},
      {"Sin", Unary(ops::Sin), {U(k23, -3, 3)}},
      {"Cos", Unary(ops::Cos), {U(k23, -3, 3)}},
      {"Erf", Unary(ops::Erf), {U(k23, -2, 2)}},
      {"SigmoidGrad", Binary(ops::SigmoidGrad), {U(k23, 0.1, 0.9), U(k23, -1, 1, 2)}},
      {"TanhGrad", Binary(ops::TanhGrad), {U(k23, -0.9, 0.9), U(k23, -1, 1, 2)}},
      {"SqrtGrad", Binary(ops::SqrtGrad), {U(k23, 0.5, 2), U(k23, -1, 1, 2)}},
      {"RsqrtGrad", Binary(ops::RsqrtGrad), {U(k23, 0.5, 2), U(k23, -1, 1, 2)}},
      {"ReciprocalGrad", Binary(ops::ReciprocalGrad), {U(k23, 0.5, 2), U(k23, -1, 1, 2)}},
      {"AddN of three tensors", [](const Scope& s, const Xs& x) { return Outs{ops::AddN(s, {x[0], x[1], x[2]})}; },
       {U(k23, -1, 1, 1), U(k23, -1, 1, 2), U(k23, -1, 1, 3)}},
      {"AddN of one tensor twice", [](const Scope& s, const Xs& x) { return Outs{ops::AddN(s, {x[0], x[0]})}; },
       {U(k23, -1, 1)}},
      {"Cast through float32", [](const Scope& s, const Xs& x) {
         return Outs{ops::Cast(s, ops::Cast(s, ops::Square(s, x[0]), DT_FLOAT), DT_DOUBLE)};
       },
       {U(k23, -2, 2)}, [] {
         GradCheckOptions o;  // float32 rounding: a larger step, a looser tolerance
         o.h = 1e-2;
         o.tolerance = 1e-3;
         return o;
       }()},
      {"Cast through int32 carries no gradient",
       [](const Scope& s, const Xs& x) {
         return Outs{ops::Mul(s, x[0], ops::Cast(s, ops::Cast(s, x[0], DT_INT32), DT_DOUBLE))};
       },
       {Doubles({0.3, 1.4, 2.6, -0.7, -1.2, 3.5}, k23)}},
  };
}

// Every broadcasting binary op, over shape pairs that broadcast differently.
std::vector<GradCase> BinaryMathCases() {
  struct Op {
    const char* name;
    GradFn f;
    double x_lo, x_hi, y_lo, y_hi;
  };
  const std::vector<Op> op_list = {
      {"Add", Binary(ops::Add), -2, 2, -2, 2},
      {"AddV2", Binary(ops::AddV2), -2, 2, -2, 2},
      {"Sub", Binary(ops::Sub), -2, 2, -2, 2},
      {"Mul", Binary(ops::Mul), -2, 2, -2, 2},
      {"RealDiv", Binary(ops::RealDiv), -2, 2, 0.5, 2},
      {"Div", Raw("Div"), -2, 2, 0.5, 2},
      {"Maximum", Binary(ops::Maximum), -2, 2, -2, 2},
      {"Minimum", Binary(ops::Minimum), -2, 2, -2, 2},
      {"Pow", Binary(ops::Pow), 0.5, 2, -1.5, 1.5},
      {"FloorMod", Binary(ops::FloorMod), 0.1, 5, 0.7, 2},
      {"SquaredDifference", Binary(ops::SquaredDifference), -2, 2, -2, 2},
      {"DivNoNan", Binary(ops::DivNoNan), -2, 2, 0.5, 2},
  };
  const std::vector<std::pair<TensorShape, TensorShape>> shape_pairs = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{2, 3, 1}, {4}},
  };
  std::vector<GradCase> cases;
  for (const Op& op : op_list) {
    for (const auto& [xs, ys] : shape_pairs) {
      cases.push_back({std::string(op.name) + " " + xs.DebugString() + " with " + ys.DebugString(), op.f,
                       {U(xs, op.x_lo, op.x_hi, 3), U(ys, op.y_lo, op.y_hi, 4)}});
    }
    cases.push_back({std::string(op.name) + " with static shapes", op.f,
                     {U({2, 3}, op.x_lo, op.x_hi, 5), U({2, 3}, op.y_lo, op.y_hi, 6)}, Static()});
  }
  return cases;
}

GradFn MatMulFn(bool ta, bool tb) {
  return [ta, tb](const Scope& s, const Xs& x) { return Outs{ops::MatMul(s, x[0], x[1], ta, tb)}; };
}

std::vector<GradCase> MatMulCases() {
  return {
      {"MatMul", MatMulFn(false, false), {U({2, 3}, -1, 1, 1), U({3, 4}, -1, 1, 2)}},
      {"MatMul transpose_a", MatMulFn(true, false), {U({3, 2}, -1, 1, 1), U({3, 4}, -1, 1, 2)}},
      {"MatMul transpose_b", MatMulFn(false, true), {U({2, 3}, -1, 1, 1), U({4, 3}, -1, 1, 2)}},
      {"MatMul transpose_a and transpose_b", MatMulFn(true, true), {U({3, 2}, -1, 1, 1), U({4, 3}, -1, 1, 2)}},
      {"MatMul with static shapes", MatMulFn(false, false), {U({2, 3}, -1, 1, 1), U({3, 4}, -1, 1, 2)}, Static()},
  };
}

using ReduceOp = Output (*)(const Scope&, Input, Input, bool);
GradFn Reduce(ReduceOp op, Input axes, bool keep_dims = false) {
  return [op, axes, keep_dims](const Scope& s, const Xs& x) { return Outs{op(s, x[0], axes, keep_dims)}; };
}

std::vector<GradCase> ReductionCases() {
  const TensorShape k234{2, 3, 4};
  const Tensor no_axes(DT_INT32, TensorShape{0});
  Tensor with_zero = U(k234, 0.5, 1.5, 8);
  with_zero.data<double>()[5] = 0;  // one zero in the reduced group of output [0, 1] (axis 1)
  Tensor with_two_zeros = U({2, 3}, 0.5, 1.5, 9);
  with_two_zeros.data<double>()[0] = 0;
  with_two_zeros.data<double>()[2] = 0;
  std::vector<GradCase> cases;
  const std::vector<std::pair<const char*, ReduceOp>> reducers = {
      {"Sum", ops::Sum}, {"Mean", ops::Mean}, {"Max", ops::Max}, {"Min", ops::Min}, {"Prod", ops::Prod}};
  for (const auto& [name, op] : reducers) {
    const std::string n = name;
    const double lo = n == "Prod" ? 0.5 : -2, hi = n == "Prod" ? 1.5 : 2;
    cases.push_back({n + " over axis 1", Reduce(op, 1), {U(k234, lo, hi)}});
    cases.push_back({n + " over axes {0, 2}", Reduce(op, {0, 2}), {U(k234, lo, hi)}});
    cases.push_back({n + " over axis -1 keeping dims", Reduce(op, -1, true), {U(k234, lo, hi)}});
    cases.push_back({n + " over axes {-3, 1} keeping dims", Reduce(op, {-3, 1}, true), {U(k234, lo, hi)}});
    cases.push_back({n + " over all axes", Reduce(op, {0, 1, 2}), {U(k234, lo, hi)}});
    cases.push_back({n + " over int64 axes", Reduce(op, Tensor::Scalar<int64_t>(2)), {U(k234, lo, hi)}});
    cases.push_back({n + " over no axes", Reduce(op, no_axes), {U({2, 2}, lo, hi)}});
    cases.push_back({n + " of a scalar", Reduce(op, no_axes), {Doubles({0.7}, {})}});
    cases.push_back({n + " with static shapes", Reduce(op, 1), {U(k234, lo, hi)}, Static()});
    // Known rank and every axis reduced: Sum's and Mean's gradients take a shorter path.
    cases.push_back({n + " over all axes, static shapes", Reduce(op, {0, 1, 2}), {U(k234, lo, hi)}, Static()});
    cases.push_back({n + " over all axes by negative index, static", Reduce(op, {-1, 0, 1}), {U(k234, lo, hi)}, Static()});
  }
  cases.push_back({"Prod with a zero in a group", Reduce(ops::Prod, 1), {with_zero}});
  cases.push_back({"Prod with two zeros in a group", Reduce(ops::Prod, 1), {with_two_zeros}});
  return cases;
}

GradFn Scan(bool prod, int axis, bool exclusive, bool reverse) {
  return [=](const Scope& s, const Xs& x) {
    return Outs{prod ? ops::Cumprod(s, x[0], axis, exclusive, reverse) : ops::Cumsum(s, x[0], axis, exclusive, reverse)};
  };
}

std::vector<GradCase> ScanCases() {
  std::vector<GradCase> cases;
  for (bool prod : {false, true}) {
    const std::string n = prod ? "Cumprod" : "Cumsum";
    const double lo = prod ? 0.5 : -2, hi = 2;
    cases.push_back({n + " along axis 0", Scan(prod, 0, false, false), {U({3, 4}, lo, hi)}});
    cases.push_back({n + " along axis 1, exclusive", Scan(prod, 1, true, false), {U({3, 4}, lo, hi)}});
    cases.push_back({n + " along axis -1, reversed", Scan(prod, -1, false, true), {U({2, 3, 4}, lo, hi)}});
    cases.push_back({n + " along axis 1, exclusive and reversed", Scan(prod, 1, true, true), {U({2, 3, 4}, lo, hi)}});
  }
  return cases;
}

// y of a batch normalization (float32 inside) of x [2, 2, 3, 2], scale and offset [2]: in training
// by the batch's statistics, in inference by fixed ones.
GradFn BatchNorm(const std::string& op_type, bool training) {
  return [op_type, training](const Scope& s, const Xs& x) {
    const Tensor empty(DT_FLOAT, TensorShape{0});
    const Output mean = training ? ops::Const(s, empty) : ops::Const(s, test::MakeTensor<float>({0.1f, -0.2f}, {2}));
    const Output var = training ? ops::Const(s, empty) : ops::Const(s, test::MakeTensor<float>({0.5f, 2.f}, {2}));
    Operation op = s.AddOp(op_type,
                           {{ops::Cast(s, x[0], DT_FLOAT)}, {ops::Cast(s, x[1], DT_FLOAT)}, {ops::Cast(s, x[2], DT_FLOAT)},
                            {mean}, {var}},
                           {{"is_training", AttrBool(training)}});
    return Outs{ops::Cast(s, op.output(0), DT_DOUBLE)};
  };
}
std::vector<Tensor> BatchNormInputs() { return {U({2, 2, 3, 2}, -1, 1, 1), U({2}, 0.5, 1.5, 2), U({2}, -1, 1, 3)}; }
GradCheckOptions BatchNormOptions() {
  GradCheckOptions o;  // float32 inside: a larger step, a looser tolerance
  o.h = 1e-2;
  o.tolerance = 2e-3;
  return o;
}

std::vector<GradCase> NnCases() {
  const Tensor labels = test::MakeTensor<int64_t>({0, 3, 1}, {3});
  auto xent = [](bool sparse, std::vector<int> outputs, Tensor sparse_labels) -> GradFn {
    return [=](const Scope& s, const Xs& x) {
      const ops::XentOutputs r = sparse ? ops::SparseSoftmaxCrossEntropyWithLogits(s, x[0], sparse_labels)
                                        : ops::SoftmaxCrossEntropyWithLogits(s, x[0], x[1]);
      Outs out;
      for (int i : outputs) out.push_back(i == 0 ? r.loss : r.backprop);
      return out;
    };
  };
  auto bias_add = [](const std::string& fmt) {
    return [fmt](const Scope& s, const Xs& x) { return Outs{ops::BiasAdd(s, x[0], x[1], fmt)}; };
  };
  auto bias_add_grad = [](const std::string& fmt) {
    return [fmt](const Scope& s, const Xs& x) { return Outs{ops::BiasAddGrad(s, x[0], fmt)}; };
  };
  const Tensor logits = U({3, 4}, -2, 2, 11), dist = Distributions(U({3, 4}, 0, 1, 12));
  return {
      {"Relu", Unary(ops::Relu), {AwayFromZero({3, 4})}},
      {"ReluGrad", Binary(ops::ReluGrad), {U({3, 4}, -1, 1), AwayFromZero({3, 4})}},
      {"Conv2D SAME stride 1", [](const Scope& s, const Xs& x) {
         return Outs{ops::Conv2D(s, x[0], x[1], {1, 1, 1, 1}, "SAME")};
       }, {U({2, 4, 3, 2}, -1, 1, 1), U({3, 2, 2, 3}, -1, 1, 2)}},
      {"Conv2D VALID stride 2", [](const Scope& s, const Xs& x) {
         return Outs{ops::Conv2D(s, x[0], x[1], {1, 2, 2, 1}, "VALID")};
       }, {U({1, 5, 5, 2}, -1, 1, 1), U({2, 2, 2, 2}, -1, 1, 2)}},
      {"Conv2D EXPLICIT padding stride 2", [](const Scope& s, const Xs& x) {
         return Outs{ops::Conv2D(s, x[0], x[1], {1, 2, 2, 1}, "EXPLICIT", {0, 0, 2, 0, 1, 1, 0, 0})};
       }, {U({1, 5, 5, 2}, -1, 1, 1), U({2, 2, 2, 2}, -1, 1, 2)}},
      {"Conv2DBackpropInput", [](const Scope& s, const Xs& x) {
         return Outs{ops::Conv2DBackpropInput(s, test::MakeTensor<int32_t>({1, 4, 4, 2}, {4}), x[0], x[1], {1, 2, 2, 1}, "SAME")};
       }, {U({3, 3, 2, 2}, -1, 1, 1), U({1, 2, 2, 2}, -1, 1, 2)}},
      {"Conv2DBackpropFilter", [](const Scope& s, const Xs& x) {
         return Outs{ops::Conv2DBackpropFilter(s, x[0], test::MakeTensor<int32_t>({2, 2, 2, 3}, {4}), x[1], {1, 1, 1, 1}, "VALID")};
       }, {U({1, 3, 3, 2}, -1, 1, 1), U({1, 2, 2, 3}, -1, 1, 2)}},
      {"MaxPool SAME", [](const Scope& s, const Xs& x) {
         return Outs{ops::MaxPool(s, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME")};
       }, {U({2, 3, 3, 2}, -1, 1, 1)}},
      {"MaxPoolGrad", [](const Scope& s, const Xs& x) {
         const Tensor in = test::Uniform({1, 4, 4, 1}, -1, 1, 7);
         auto y = ops::MaxPool(s, in, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
         return Outs{ops::MaxPoolGrad(s, in, y, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID")};
       }, {U({1, 2, 2, 1}, -1, 1, 1)}},
      {"MaxPoolGradGrad", [](const Scope& s, const Xs& x) {
         const Tensor in = test::Uniform({1, 4, 4, 1}, -1, 1, 7);
         auto y = ops::MaxPool(s, in, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
         return Outs{ops::MaxPoolGradGrad(s, in, y, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID")};
       }, {U({1, 4, 4, 1}, -1, 1, 1)}},
      {"AvgPool SAME stride 2", [](const Scope& s, const Xs& x) {
         return Outs{ops::AvgPool(s, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME")};
       }, {U({2, 5, 4, 2}, -1, 1, 1)}},
      {"AvgPoolGrad", [](const Scope& s, const Xs& x) {
         return Outs{ops::AvgPoolGrad(s, test::MakeTensor<int32_t>({1, 4, 4, 1}, {4}), x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID")};
       }, {U({1, 2, 2, 1}, -1, 1, 1)}},
      {"FusedBatchNorm training: y", BatchNorm("FusedBatchNorm", true), BatchNormInputs(), BatchNormOptions()},
      {"FusedBatchNormV2 training: y", BatchNorm("FusedBatchNormV2", true), BatchNormInputs(), BatchNormOptions()},
      {"FusedBatchNormV3 training: y", BatchNorm("FusedBatchNormV3", true), BatchNormInputs(), BatchNormOptions()},
      {"FusedBatchNormV3 inference: y", BatchNorm("FusedBatchNormV3", false), BatchNormInputs(), BatchNormOptions()},
      {"Elu", Unary(ops::Elu), {AwayFromZero({3, 4})}},
      {"EluGrad", Binary(ops::EluGrad), {U({3, 4}, -1, 1), U({3, 4}, -0.9, 2, 2)}},
      {"Selu", Unary(ops::Selu), {AwayFromZero({3, 4})}},
      {"SeluGrad", Binary(ops::SeluGrad), {U({3, 4}, -1, 1), U({3, 4}, -1.5, 2, 2)}},
      {"Softplus", Unary(ops::Softplus), {U({3, 4}, -3, 3)}},
      {"SoftplusGrad", Binary(ops::SoftplusGrad), {U({3, 4}, -1, 1), U({3, 4}, -3, 3, 2)}},
      {"Relu6", Unary(ops::Relu6), {U({3, 4}, -2, 8)}},
      {"Relu6Grad", Binary(ops::Relu6Grad), {U({3, 4}, -1, 1), U({3, 4}, -2, 8, 2)}},
      {"LeakyRelu", [](const Scope& s, const Xs& x) { return Outs{ops::LeakyRelu(s, x[0], 0.3f)}; },
       {AwayFromZero({3, 4})}},
      {"LeakyReluGrad", [](const Scope& s, const Xs& x) { return Outs{ops::LeakyReluGrad(s, x[0], x[1], 0.3f)}; },
       {U({3, 4}, -1, 1), AwayFromZero({3, 4})}},
      {"BiasAdd NHWC", bias_add("NHWC"), {U({4, 3}, -1, 1), U({3}, -1, 1, 2)}},
      {"BiasAdd NHWC of rank 3", bias_add("NHWC"), {U({2, 2, 3}, -1, 1), U({3}, -1, 1, 2)}},
      {"BiasAdd NCHW", bias_add("NCHW"), {U({2, 3, 2, 2}, -1, 1), U({3}, -1, 1, 2)}},
      {"BiasAddGrad NHWC", bias_add_grad("NHWC"), {U({4, 3}, -1, 1)}},
      {"BiasAddGrad NCHW", bias_add_grad("NCHW"), {U({2, 3, 2, 2}, -1, 1)}},
      {"Softmax", Unary(ops::Softmax), {U({3, 4}, -2, 2)}},
      {"Softmax of rank 3", Unary(ops::Softmax), {U({2, 2, 3}, -2, 2)}},
      {"LogSoftmax", Unary(ops::LogSoftmax), {U({3, 4}, -2, 2)}},
      {"LogSoftmax of rank 3", Unary(ops::LogSoftmax), {U({2, 2, 3}, -2, 2)}},
      {"SoftmaxCrossEntropyWithLogits loss (backprop unused)", xent(false, {0}, {}), {logits, dist}},
      {"SoftmaxCrossEntropyWithLogits backprop (loss unused)", xent(false, {1}, {}), {logits, dist}},
      {"SoftmaxCrossEntropyWithLogits loss and backprop", xent(false, {0, 1}, {}), {logits, dist}},
      {"SparseSoftmaxCrossEntropyWithLogits loss", xent(true, {0}, labels), {logits}},
      {"SparseSoftmaxCrossEntropyWithLogits loss and backprop", xent(true, {0, 1}, labels), {logits}},
  };
}

std::vector<GradCase> ArrayCases() {
  auto one = [](std::function<Output(const Scope&, const Output&)> g) -> GradFn {
    return [g](const Scope& s, const Xs& x) { return Outs{g(s, x[0])}; };
  };
  const Tensor x23 = U({2, 3}, -1, 1), x34 = U({3, 4}, -1, 1);
  const Tensor begin64 = test::MakeTensor<int64_t>({1, 0}, {2}), size64 = test::MakeTensor<int64_t>({2, -1}, {2});
  const Tensor perm64 = test::MakeTensor<int64_t>({1, 0}, {2});
  const Tensor multiples64 = test::MakeTensor<int64_t>({1, 2}, {2});
  const Tensor paddings64 = test::MakeTensor<int64_t>({0, 1, 2, 0}, {2, 2});
  const Tensor cond = test::MakeTensor<bool>({true, false, false, true, true, false}, {2, 3});
  auto select = [](Tensor c) {
    return [c](const Scope& s, const Xs& x) { return Outs{ops::Select(s, c, x[0], x[1])}; };
  };
  auto strided = [](std::vector<int64_t> b, std::vector<int64_t> e, std::vector<int64_t> st, ops::StridedSliceAttrs a) {
    return [=](const Scope& s, const Xs& x) {
      const int64_t n = static_cast<int64_t>(b.size());
      return Outs{ops::StridedSlice(s, x[0], test::MakeTensor<int64_t>(b, {n}), test::MakeTensor<int64_t>(e, {n}),
                                    test::MakeTensor<int64_t>(st, {n}), a)};
    };
  };
  ops::StridedSliceAttrs reversed_columns;  // x[1:, ::-2]
  reversed_columns.begin_mask = 2;
  reversed_columns.end_mask = 3;
  ops::StridedSliceAttrs shrink_and_new_axis;  // x[..., tf.newaxis, 1]
  shrink_and_new_axis.ellipsis_mask = 1;
  shrink_and_new_axis.new_axis_mask = 2;
  shrink_and_new_axis.shrink_axis_mask = 4;
  return {
      {"SpaceToBatchND, padded",
       one([](const Scope& s, const Output& x) {
         return ops::SpaceToBatchND(s, x, ops::Const(s, {2, 2}), ops::Const(s, {{0, 0}, {1, 1}}));
       }),
       {U({2, 4, 4, 3}, -1, 1)}},
      {"BatchToSpaceND, cropped",
       one([](const Scope& s, const Output& x) {
         return ops::BatchToSpaceND(s, x, ops::Const(s, {2, 2}), ops::Const(s, {{1, 0}, {0, 1}}));
       }),
       {U({8, 3, 3, 1}, -1, 1)}},
      {"StridedSlice x[1:, ::-2]", strided({1, 0}, {0, 0}, {1, -2}, reversed_columns), {x34}},
      {"StridedSlice x[..., newaxis, 1]", strided({0, 0, 1}, {0, 0, 2}, {1, 1, 1}, shrink_and_new_axis), {x34}},
      {"StridedSlice with static shapes", strided({1, 0}, {0, 0}, {1, -2}, reversed_columns), {x34}, Static()},
      {"GatherV2 along axis 0", [](const Scope& s, const Xs& x) {
         return Outs{ops::GatherV2(s, x[0], test::MakeTensor<int32_t>({2, 0, 2, 2}, {2, 2}), 0)};
       }, {x34}},
      {"GatherV2 along axis 1 (int64 indices)", [](const Scope& s, const Xs& x) {
         return Outs{ops::GatherV2(s, x[0], test::MakeTensor<int64_t>({3, 1, 3}, {3}), int64_t{1})};
       }, {x34}},
      {"Gather", [](const Scope& s, const Xs& x) { return Outs{ops::Gather(s, x[0], test::MakeTensor<int32_t>({1, 1}, {2}))}; },
       {x34}},
      {"GatherNd", [](const Scope& s, const Xs& x) {
         return Outs{ops::GatherNd(s, x[0], test::MakeTensor<int32_t>({2, 1, 0, 3, 2, 1}, {3, 2}))};
       }, {x34}},
      {"ScatterNd", [](const Scope& s, const Xs& x) {
         return Outs{ops::ScatterNd(s, test::MakeTensor<int32_t>({1, 3, 1}, {3, 1}), x[0], test::MakeTensor<int32_t>({4, 3}, {2}))};
       }, {U({3, 3}, -1, 1)}},
      {"UnsortedSegmentSum with a dropped row", [](const Scope& s, const Xs& x) {
         return Outs{ops::UnsortedSegmentSum(s, x[0], test::MakeTensor<int32_t>({1, -1, 1}, {3}), 2)};
       }, {x34}},
      {"DynamicStitch", [](const Scope& s, const Xs& x) {
         return Outs{ops::DynamicStitch(s, {test::MakeTensor<int32_t>({0, 2}, {2}), test::MakeTensor<int32_t>({1}, {1})},
                                        {x[0], x[1]})};
       }, {U({2, 3}, -1, 1, 1), U({1, 3}, -1, 1, 2)}},
      {"IdentityN", [](const Scope& s, const Xs& x) { return ops::IdentityN(s, {x[0], x[1]}); },
       {U({2, 3}, -1, 1, 1), U({3}, -1, 1, 2)}},
      {"L2Loss", one([](const Scope& s, const Output& x) { return ops::L2Loss(s, x); }), {x34}},
      {"TopKV2 values", one([](const Scope& s, const Output& x) { return ops::TopK(s, x, 2).values; }), {x34}},
      {"StridedSliceGrad",
       [](const Scope& s, const Xs& x) {
         return Outs{ops::StridedSliceGrad(s, test::MakeTensor<int32_t>({3, 4}, {2}), test::MakeTensor<int32_t>({0, 3}, {2}),
                                           test::MakeTensor<int32_t>({3, 0}, {2}), test::MakeTensor<int32_t>({2, -1}, {2}),
                                           x[0])};
       },
       {U({2, 3}, -1, 1)}},
      {"Identity", Unary(ops::Identity), {x23}},
      {"PlaceholderWithDefault",
       one([](const Scope& s, const Output& x) { return ops::PlaceholderWithDefault(s, x, PartialTensorShape()); }),
       {x23}},
      {"Reshape", one([](const Scope& s, const Output& x) { return ops::Reshape(s, x, {3, 2}); }), {x23}},
      {"Reshape to -1", one([](const Scope& s, const Output& x) { return ops::Reshape(s, x, {-1}); }), {x23}},
      {"ExpandDims", one([](const Scope& s, const Output& x) { return ops::ExpandDims(s, x, 1); }), {x23}},
      {"ExpandDims at -1", one([](const Scope& s, const Output& x) { return ops::ExpandDims(s, x, -1); }), {x23}},
      {"Squeeze", one([](const Scope& s, const Output& x) { return ops::Squeeze(s, x); }), {U({2, 1, 3}, -1, 1)}},
      {"Squeeze axis 1", one([](const Scope& s, const Output& x) { return ops::Squeeze(s, x, {1}); }),
       {U({2, 1, 3, 1}, -1, 1)}},
      {"ConcatV2 along axis 1",
       [](const Scope& s, const Xs& x) { return Outs{ops::Concat(s, {x[0], x[1], x[2]}, 1)}; },
       {U({2, 3}, -1, 1, 1), U({2, 1}, -1, 1, 2), U({2, 2}, -1, 1, 3)}},
      {"ConcatV2 along int64 axis -2",
       [](const Scope& s, const Xs& x) { return Outs{ops::Concat(s, {x[0], x[1]}, int64_t{-2})}; },
       {U({1, 3}, -1, 1, 1), U({2, 3}, -1, 1, 2)}},
      {"Split, every output used", [](const Scope& s, const Xs& x) { return ops::Split(s, 1, x[0], 3); },
       {U({2, 6}, -1, 1)}},
      {"Split, one output of three used",
       [](const Scope& s, const Xs& x) { return Outs{ops::Split(s, -1, x[0], 3)[1]}; }, {U({2, 6}, -1, 1)}},
      {"Split into one", [](const Scope& s, const Xs& x) { return ops::Split(s, 0, x[0], 1); }, {x23}},
      {"Pack along axis 0", [](const Scope& s, const Xs& x) { return Outs{ops::Stack(s, {x[0], x[1], x[2]}, 0)}; },
       {U(k23, -1, 1, 1), U(k23, -1, 1, 2), U(k23, -1, 1, 3)}},
      {"Pack along axis -1", [](const Scope& s, const Xs& x) { return Outs{ops::Stack(s, {x[0], x[1]}, -1)}; },
       {U(k23, -1, 1, 1), U(k23, -1, 1, 2)}},
      {"Unpack, every output used", [](const Scope& s, const Xs& x) { return ops::Unstack(s, x[0], 3, 0); },
       {U({3, 2, 2}, -1, 1)}},
      {"Unpack along axis 1, two outputs of three used",
       [](const Scope& s, const Xs& x) {
         const Outs parts = ops::Unstack(s, x[0], 3, 1);
         return Outs{parts[0], parts[2]};
       },
       {x23}},
      {"Slice", one([](const Scope& s, const Output& x) { return ops::Slice(s, x, {1, 1}, {2, 2}); }), {x34}},
      {"Slice with int64 begin and a size of -1",
       one([=](const Scope& s, const Output& x) { return ops::Slice(s, x, begin64, size64); }), {x34}},
      {"Transpose", one([](const Scope& s, const Output& x) { return ops::Transpose(s, x, {2, 0, 1}); }),
       {U({2, 3, 4}, -1, 1)}},
      {"Transpose with an int64 perm", one([=](const Scope& s, const Output& x) { return ops::Transpose(s, x, perm64); }),
       {x23}},
      {"Tile", one([](const Scope& s, const Output& x) { return ops::Tile(s, x, {2, 1}); }), {x23}},
      {"Tile of rank 3", one([](const Scope& s, const Output& x) { return ops::Tile(s, x, {1, 3, 2}); }),
       {U({2, 1, 3}, -1, 1)}},
      {"Tile with int64 multiples", one([=](const Scope& s, const Output& x) { return ops::Tile(s, x, multiples64); }),
       {x23}},
      {"Pad", one([](const Scope& s, const Output& x) { return ops::Pad(s, x, {{1, 0}, {2, 1}}); }), {x23}},
      {"Pad with int64 paddings", one([=](const Scope& s, const Output& x) { return ops::Pad(s, x, paddings64); }),
       {x23}},
      {"Select", select(cond), {U(k23, -1, 1, 1), U(k23, -1, 1, 2)}},
      {"Select by row", select(test::MakeTensor<bool>({false, true}, {2})), {U(k23, -1, 1, 1), U(k23, -1, 1, 2)}},
      {"Select by a scalar", select(Tensor::Scalar<bool>(true)), {U(k23, -1, 1, 1), U(k23, -1, 1, 2)}},
      {"Fill", one([](const Scope& s, const Output& x) { return ops::Fill(s, {2, 3}, x); }), {Doubles({0.5}, {})}},
  };
}

// Larger graphs: a layer with a loss, shared subexpressions, second derivatives.
std::vector<GradCase> CompositeCases() {
  auto layer = [](const Scope& s, const Xs& x) {
    const Output h = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, x[0], x[1]), x[2]));
    const Output loss = ops::SoftmaxCrossEntropyWithLogits(s, ops::MatMul(s, h, x[3]), x[4]).loss;
    return Outs{ops::Mean(s, loss, 0)};
  };
  auto second = [](GradFn inner) -> GradFn {
    return [inner](const Scope& s, const Xs& x) {
      const Outs ys = inner(s, x);
      Outs dx;
      s.UpdateStatus(AddSymbolicGradients(s, {grad::SumAll(s, ys[0])}, x, &dx));
      return dx;
    };
  };
  const std::vector<Tensor> layer_xs = {U({3, 4}, -1, 1, 1), U({4, 5}, -1, 1, 2), U({5}, -0.5, 0.5, 3),
                                        U({5, 2}, -1, 1, 4), Distributions(U({3, 2}, 0, 1, 5))};
  return {
      {"a dense layer with a cross-entropy loss", layer, layer_xs},
      {"a dense layer with static shapes", layer, layer_xs, Static()},
      {"x used by two consumers",
       [](const Scope& s, const Xs& x) { return Outs{ops::Add(s, ops::Exp(s, x[0]), ops::Mul(s, x[0], x[1]))}; },
       {U(k23, -1, 1, 1), U({3}, -1, 1, 2)}},
      {"second derivative of tanh(x) * x",
       second([](const Scope& s, const Xs& x) { return Outs{ops::Mul(s, ops::Tanh(s, x[0]), x[0])}; }),
       {U(k23, -1, 1)}},
      {"second derivative of sigmoid, sqrt, rsqrt, reciprocal",
       second([](const Scope& s, const Xs& x) {
         return Outs{ops::AddN(s, {ops::Sigmoid(s, x[0]), ops::Sqrt(s, x[0]), ops::Rsqrt(s, x[0]),
                                   ops::Reciprocal(s, x[0])})};
       }),
       {U(k23, 0.5, 2)}},
      {"second derivative of a softmax cross entropy",
       second([](const Scope& s, const Xs& x) {
         return Outs{ops::SoftmaxCrossEntropyWithLogits(s, ops::Square(s, x[0]), x[1]).loss};
       }),
       {U({2, 3}, -1, 1, 1), Distributions(U({2, 3}, 0, 1, 2))}},
      {"second derivative of a sparse softmax cross entropy",
       second([](const Scope& s, const Xs& x) {
         return Outs{ops::SparseSoftmaxCrossEntropyWithLogits(s, ops::Square(s, x[0]), {2, 0}).loss};
       }),
       {U({2, 3}, -1, 1, 1)}},
      {"second derivative through BiasAdd and Relu",
       second([](const Scope& s, const Xs& x) {
         return Outs{ops::Square(s, ops::Relu(s, ops::BiasAdd(s, x[0], x[1])))};
       }),
       {AwayFromZero({2, 3}), Doubles({0.1, -0.05, 0.02}, {3})}},
  };
}

std::vector<std::pair<std::string, std::vector<GradCase>>> AllCaseTables() {
  return {{"unary math", UnaryMathCases()}, {"binary math", BinaryMathCases()}, {"MatMul", MatMulCases()},
          {"reductions", ReductionCases()}, {"scans", ScanCases()},            {"nn", NnCases()},
          {"array", ArrayCases()},          {"composite", CompositeCases()}};
}

void CheckTable(const std::vector<GradCase>& cases) {
  for (const GradCase& c : cases) {
    INFO("case: " << c.name);
    CheckGradients(c.f, c.xs, c.options);
  }
}

// The op types of the nodes whose gradient functions AddSymbolicGradients
// calls for case c: on a data path from an x to a y.
std::set<std::string> OpsOnPath(const GradCase& c) {
  Scope root = Scope::NewRootScope();
  Xs xs;
  for (size_t i = 0; i < c.xs.size(); ++i) xs.push_back(ops::Placeholder(root, DT_DOUBLE));
  const Outs ys = c.f(root, xs);
  REQUIRE(root.ok());
  const Graph& g = *root.graph();
  std::vector<bool> reaches_y(g.num_node_ids(), false), from_x(g.num_node_ids(), false);
  std::deque<Node*> queue;
  for (const Output& y : ys) queue.push_back(y.node());
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    if (reaches_y[n->id()]) continue;
    reaches_y[n->id()] = true;
    for (const Edge* e : n->in_edges())
      if (!e->IsControlEdge()) queue.push_back(e->src);
  }
  for (const Output& x : xs) queue.push_back(x.node());
  std::set<std::string> out;
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    if (from_x[n->id()] || !reaches_y[n->id()]) continue;
    from_x[n->id()] = true;
    out.insert(n->type_string());
    for (const Edge* e : n->out_edges())
      if (!e->IsControlEdge()) queue.push_back(e->dst);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Helpers for the builder tests.

/// The gradients of `ys` with respect to `xs`; REQUIREs success.
Outs Gradients(const Scope& root, const Outs& ys, const Outs& xs) {
  Outs dx;
  const Status s = AddSymbolicGradients(root, ys, xs, &dx);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(dx.size() == xs.size());
  return dx;
}

}  // namespace

// ---------------------------------------------------------------------------
// Every gradient function against central differences.

TEST_CASE("gradients of unary math, cwise backprop ops, AddN and Cast match central differences") {
  CheckTable(UnaryMathCases());
}
TEST_CASE("gradients of broadcasting binary ops match central differences for every broadcast") {
  CheckTable(BinaryMathCases());
}
TEST_CASE("gradients of MatMul match central differences for every transpose combination") {
  CheckTable(MatMulCases());
}
TEST_CASE("gradients of reductions match central differences (keep_dims, negative and int64 axes, zeros)") {
  CheckTable(ReductionCases());
}
TEST_CASE("gradients of Cumsum and Cumprod match central differences") { CheckTable(ScanCases()); }
TEST_CASE("gradients of nn ops match central differences, unused outputs included") { CheckTable(NnCases()); }
TEST_CASE("gradients of array ops match central differences, multi-output ops included") {
  CheckTable(ArrayCases());
}
TEST_CASE("gradients of composite graphs and second derivatives match central differences") {
  CheckTable(CompositeCases());
}

TEST_CASE("gradient graphs use only TensorFlow's ops, so TensorFlow loads the graphs we write") {
  // Ops of this registry that TensorFlow does not have: kept to load older
  // graphs, never put into a graph here.
  const std::set<std::string> ours_only = {"ReducedShape"};
  std::set<std::string> used;
  for (const auto& [table, cases] : AllCaseTables())
    for (const GradCase& c : cases) {
      Scope root = Scope::NewRootScope();
      Xs xs;
      for (size_t i = 0; i < c.xs.size(); ++i)
        xs.push_back(ops::Placeholder(root.WithOpName("x" + std::to_string(i)), c.xs[i].dtype()));
      Outs ys = c.f(root, xs);
      Outs dx;
      if (!AddSymbolicGradients(root, ys, xs, &dx).ok()) continue;
      proto::GraphDef def;
      REQUIRE(root.ToGraphDef(&def).ok());
      for (const auto& n : def.node()) used.insert(n.op());
    }
  CHECK(used.count("Sum"));  // the tables did build gradient graphs
  for (const std::string& op : ours_only) {
    INFO(op);
    CHECK(!used.count(op));
  }
}

TEST_CASE("every registered op has a gradient registration, and every gradient function is checked") {
  std::set<std::string> registered;
  for (const std::string& op : GradOpRegistry::Global()->ListOps()) registered.insert(op);
  std::vector<std::string> without;
  for (const std::string& op : OpRegistry::Global()->ListOpNames())
    if (!registered.count(op) && !IsTestOp(op)) without.push_back(op);
  INFO("ops with neither AF_REGISTER_GRADIENT nor AF_REGISTER_NO_GRADIENT: " << ::Catch::Detail::stringify(without));
  CHECK(without.empty());

  std::set<std::string> checked;
  for (const auto& [table, cases] : AllCaseTables())
    for (const GradCase& c : cases)
      for (const std::string& op : OpsOnPath(c)) checked.insert(op);
  std::vector<std::string> unchecked;
  for (const std::string& op : registered) {
    GradFunc fn = nullptr;
    REQUIRE(GradOpRegistry::Global()->Lookup(op, &fn).ok());
    REQUIRE(OpRegistry::Global()->Find(op) != nullptr);  // no registration for a misspelt op
    // The control-flow primitives' functions refuse (control_flow_test checks that).
    // Nor do batch normalization's gradient ops (second derivatives): the case below checks that.
    // Nor do graph optimization's fused ops (remapper_test checks _FusedMatMul's refusal).
    const bool refuses = IsControlFlowOp(op) || op.rfind("FusedBatchNormGrad", 0) == 0 || op == "_FusedMatMul" ||
                         op == "_FusedConv2D";
    // Reads of resource variables need a variable assigned first, which these
    // tables (pure functions of their inputs) cannot: resource_variables_test
    // checks those gradients against hand-computed values.
    const bool checked_elsewhere = op == "ReadVariableOp" || op == "ResourceGather";
    if (fn != nullptr && !checked.count(op) && !refuses && !checked_elsewhere) unchecked.push_back(op);
  }
  INFO("gradient functions no case checks: " << ::Catch::Detail::stringify(unchecked));
  CHECK(unchecked.empty());
}

// ---------------------------------------------------------------------------
// What the builder promises.

TEST_CASE("without grad_ys the gradient is that of the sum of every y's elements") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {1.0, -2.0, 3.0});
  auto y1 = ops::Square(root, x);              // d/dx = 2x
  auto y2 = ops::Mul(root, x, 10.0);           // d/dx = 10
  const Outs dx = Gradients(root, {y1, y2}, {x});
  REQUIRE(Values<double>(RunOk(root, dx)[0]) == std::vector<double>{12, 6, 16});
}

TEST_CASE("gradients arriving from two consumers are summed with AddN") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto y = ops::Add(root, ops::Square(root, x), ops::Mul(root, x, 3.0));  // dy/dx = 2x + 3
  const Outs dx = Gradients(root, {y}, {x});
  REQUIRE(dx[0].node()->type_string() == "AddN");
  REQUIRE(dx[0].node()->name().rfind("gradients/", 0) == 0);
  auto out = RunOk(root, dx, {{"x", Doubles({1, -2}, {2})}});
  REQUIRE(Values<double>(out[0]) == std::vector<double>{5, -1});
}

TEST_CASE("Relu's and Relu6's gradients read the activation's output, as TensorFlow's do") {
  // Then the pre-activation's only reader is the activation, which can write
  // its output over it in place, and it need not live until the backward pass.
  for (const std::string type : {"Relu", "Relu6"}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
    auto pre = ops::Mul(root.WithOpName("pre"), x, 2.0);
    Output act = type == "Relu" ? ops::Relu(root.WithOpName("act"), pre) : ops::Relu6(root.WithOpName("act"), pre);
    const Outs dx = Gradients(root, {ops::Square(root, act)}, {x});
    const Node* backprop = root.graph()->FindNode("gradients/act_grad/" + type + "Grad");
    REQUIRE(backprop != nullptr);
    REQUIRE(backprop->input_edge(1)->src == act.node());
    std::vector<std::string> readers;
    for (const Edge* e : pre.node()->out_edges())
      if (!e->IsControlEdge()) readers.push_back(e->dst->name());
    CHECK(readers == std::vector<std::string>{"act"});
    // d/dx act(2x)^2 = 4 act(2x) act'(2x): at x = -1, 0.5, 2, 4 that is 0, 4, 16, 32 (Relu), or 0, 4, 16, 0
    // (Relu6: 2x = 8 is past 6).
    auto out = RunOk(root, dx, {{"x", Doubles({-1, 0.5, 2, 4}, {4})}});
    CHECK(Values<double>(out[0]) ==
          (type == "Relu" ? std::vector<double>{0, 4, 16, 32} : std::vector<double>{0, 4, 16, 0}));
  }
}

TEST_CASE("every gradient node is named under gradients/") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto y = ops::Sum(root, ops::Tanh(root.WithOpName("t"), ops::MatMul(root, x, x)), {0, 1});
  const int before = root.graph()->num_node_ids();
  Gradients(root, {y}, {x});
  for (int id = before; id < root.graph()->num_node_ids(); ++id) {
    const Node* n = root.graph()->node(id);
    if (n) CHECK(n->name().rfind("gradients/", 0) == 0);
  }
  REQUIRE(root.graph()->FindNode("gradients/t_grad/TanhGrad") != nullptr);
}

TEST_CASE("paths that do not connect xs to ys add no gradient nodes") {
  // y = sum(square(x)) in both graphs; the second adds a long chain from x that
  // y does not use, a chain into y from another placeholder, and another y.
  auto build = [](bool with_noise, int* added) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
    Output y = ops::Square(root, x);
    if (with_noise) {
      Output dangling = x;  // consumes x, reaches no y
      for (int i = 0; i < 5; ++i) dangling = ops::Exp(root, dangling);
      Output other = ops::Placeholder(root.WithOpName("other"), DT_DOUBLE);  // reaches y, not from x
      for (int i = 0; i < 5; ++i) other = ops::Tanh(root, other);
      y = ops::Mul(root, y, ops::Sigmoid(root, other));
    }
    const int before = root.graph()->num_nodes();
    const Outs dx = Gradients(root, {y}, {x});
    *added = root.graph()->num_nodes() - before;
    // No gradient node reads the chains' nodes, and none is built for them.
    for (Node* n : root.graph()->nodes()) {
      if (n->name().rfind("gradients/", 0) != 0) continue;
      CHECK(n->name().find("Exp") == std::string::npos);
      CHECK(n->name().find("Tanh") == std::string::npos);
      CHECK(n->name().find("Sigmoid") == std::string::npos);
      for (const Edge* e : n->in_edges()) {
        CHECK(e->src->type_string() != "Exp");
        CHECK(e->src->type_string() != "Tanh");
      }
    }
    const Tensor x_value = Doubles({0.5, -1}, {2});
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", x_value}};
    if (with_noise) feeds.emplace_back("other", Doubles({0.3, 0.1}, {2}));
    auto out = RunOk(root, dx, feeds);
    REQUIRE(out[0].shape() == x_value.shape());
  };
  int plain = 0, noisy = 0;
  build(false, &plain);
  build(true, &noisy);
  // Only the Mul joining the other chain adds its own gradient nodes (Mul by
  // sigmoid(other) and the broadcast reduction for both inputs).
  const int mul_grad_nodes = 2 /*Mul*/ + 3 /*Shape, Shape, BroadcastGradientArgs*/ + 4 /*Sum, Reshape x2*/;
  REQUIRE(noisy - plain == mul_grad_nodes);
}

TEST_CASE("an x that no y depends on gets zeros of its shape") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DT_DOUBLE);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_DOUBLE);
  auto y = ops::Square(root, a);
  const Outs dx = Gradients(root, {y}, {a, b});
  REQUIRE(dx[1].node()->type_string() == "ZerosLike");
  auto out = RunOk(root, dx, {{"a", Doubles({2}, {1})}, {"b", Doubles({1, 2, 3, 4}, {2, 2})}});
  REQUIRE(Values<double>(out[0]) == std::vector<double>{4});
  REQUIRE(out[1].shape() == TensorShape({2, 2}));
  REQUIRE(Values<double>(out[1]) == std::vector<double>{0, 0, 0, 0});
}

TEST_CASE("StopGradient stops backprop: what it computes is a constant to gradients") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  // y = x * stop(x): dy/dx = stop(x) = x, not 2x.
  auto y = ops::Mul(root, x, ops::StopGradient(root, x));
  const Outs dx = Gradients(root, {y}, {x});
  REQUIRE(Values<double>(RunOk(root, dx, {{"x", Doubles({3, -1}, {2})}})[0]) == std::vector<double>{3, -1});
  // Only through StopGradient: zeros.
  auto z = ops::Square(root, ops::StopGradient(root, x));
  const Outs dz = Gradients(root, {z}, {x});
  REQUIRE(Values<double>(RunOk(root, dz, {{"x", Doubles({3, -1}, {2})}})[0]) == std::vector<double>{0, 0});
}

TEST_CASE("control edges carry no gradient") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto side = ops::Square(root, x);
  auto y = ops::Identity(root.WithControlDependencies({side.op()}), ops::Const(root, 2.0));
  const Outs dx = Gradients(root, {y}, {x});
  REQUIRE(dx[0].node()->type_string() == "ZerosLike");
  REQUIRE(Values<double>(RunOk(root, dx, {{"x", Doubles({3}, {1})}})[0]) == std::vector<double>{0});
}

TEST_CASE("integer tensors get no gradient: an integer x gets zeros") {
  Scope root = Scope::NewRootScope();
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto y = ops::Mul(root, x, ops::Cast(root, ops::Square(root, n), DT_DOUBLE));
  const Outs dx = Gradients(root, {y}, {x, n});
  REQUIRE(dx[1].type() == DT_INT32);
  // ys of dtypes without gradients (int32, bool) send none.
  const Outs ds = Gradients(root, {ops::Shape(root, x), ops::Cast(root, x, DT_BOOL)}, {x});
  REQUIRE(Values<double>(RunOk(root, ds, {{"x", Doubles({2}, {1})}})[0]) == std::vector<double>{0});
  auto out = RunOk(root, dx, {{"n", test::MakeTensor<int32_t>({3}, {1})}, {"x", Doubles({2}, {1})}});
  REQUIRE(Values<double>(out[0]) == std::vector<double>{9});
  REQUIRE(Values<int32_t>(out[1]) == std::vector<int32_t>{0});
}

TEST_CASE("a ref-typed x (a variable's output) gets an ordinary gradient") {
  Scope root = Scope::NewRootScope();
  const Output v = ops::Variable(root.WithOpName("gradients_test_ref_var"), PartialTensorShape(TensorShape{3}), DT_FLOAT);
  auto init = ops::Assign(root, v, {1.5f, -2.f, 0.25f});
  REQUIRE(root.ok());
  REQUIRE(v.node()->output_type(0) == DT_FLOAT_REF);
  REQUIRE(v.type() == DT_FLOAT);
  RunOk(root, {init});  // the variable outlives this session: the ones below read it
  auto y = ops::Sum(root, ops::Mul(root, ops::Square(root, v), 3.f), 0);  // dy/dv = 6v
  const Outs dv = Gradients(root, {y}, {v});
  REQUIRE(dv[0].type() == DT_FLOAT);
  REQUIRE(Values<float>(RunOk(root, dv)[0]) == std::vector<float>{9.f, -12.f, 1.5f});
  // Unconnected, it gets float zeros.
  auto other = ops::Square(root, ops::Const(root, 1.f));
  const Outs dz = Gradients(root, {other}, {v});
  REQUIRE(Values<float>(RunOk(root, dz)[0]) == std::vector<float>{0, 0, 0});
}

TEST_CASE("Max and Min share the gradient equally among tied extrema") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {{1.0, 3.0, 3.0}, {-1.0, -1.0, 2.0}});
  const Outs dmax = Gradients(root, {ops::Max(root, x, 1)}, {x});
  const Outs dmin = Gradients(root, {ops::Min(root, x, 1)}, {x});
  auto out = RunOk(root, {dmax[0], dmin[0]});
  REQUIRE(Values<double>(out[0]) == std::vector<double>{0, 0.5, 0.5, 0, 0, 1});
  REQUIRE(Values<double>(out[1]) == std::vector<double>{1, 0, 0, 0.5, 0.5, 0});
}

TEST_CASE("xs may repeat, be ys themselves, or be outputs of the same multi-output node") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto parts = ops::Split(root, 0, ops::Square(root, x), 2);
  auto y = ops::Add(root, ops::Mul(root, parts[0], 2.0), parts[1]);
  Outs dy;
  REQUIRE(AddSymbolicGradients(root, {y}, {x, x, y, parts[0], parts[1]}, {ops::Const(root, {1.0})}, &dy).ok());
  auto out = RunOk(root, dy, {{"x", Doubles({1, 5}, {2})}});
  REQUIRE(Values<double>(out[0]) == std::vector<double>{4, 10});  // d/dx of 2x0^2 + x1^2
  REQUIRE(Values<double>(out[1]) == std::vector<double>{4, 10});
  REQUIRE(Values<double>(out[2]) == std::vector<double>{1});
  REQUIRE(Values<double>(out[3]) == std::vector<double>{2});
  REQUIRE(Values<double>(out[4]) == std::vector<double>{1});
}

TEST_CASE("an op without a gradient on the path is an error naming node and op; off the path it is fine") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto blocked = root.WithOpName("blocked").AddOp("TestOpWithoutGradient", {{ops::Square(root, x)}}).output(0);
  auto y = ops::Sum(root, blocked, 0);
  REQUIRE(root.ok());
  const int nodes = root.graph()->num_nodes();
  Outs dx;
  const Status s = AddSymbolicGradients(root, {y}, {x}, &dx);
  REQUIRE(s.code() == Code::kNotFound);
  REQUIRE_THAT(s.message(), Contains("TestOpWithoutGradient") && Contains("'blocked'"));
  REQUIRE(dx.empty());
  REQUIRE(root.graph()->num_nodes() == nodes);  // nothing left behind
  REQUIRE(root.ok());                           // and the scope still builds
  // Reaching the op from the other side only: no gradient needed from it.
  auto w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE);
  auto z = ops::Add(root, blocked, ops::Square(root, w));
  Outs dw;
  REQUIRE(AddSymbolicGradients(root, {z}, {w}, &dw).ok());
}

TEST_CASE("bad arguments are errors naming the argument") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  auto y = ops::Square(root, x);
  Outs dx;
  Status s = AddSymbolicGradients(root, {y}, {x}, {}, &dx);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Contains("1 ys but 0 grad_ys"));
  s = AddSymbolicGradients(root, {y}, {x}, {ops::Const(root, 1.f)}, &dx);
  REQUIRE_THAT(s.message(), Contains("grad_ys[0]") && Contains("float"));
  s = AddSymbolicGradients(root, {y}, {Output()}, &dx);
  REQUIRE_THAT(s.message(), Contains("xs[0] is not a valid Output"));
  Scope other = Scope::NewRootScope();
  auto foreign = ops::Placeholder(other, DT_DOUBLE);
  s = AddSymbolicGradients(root, {y}, {foreign}, &dx);
  REQUIRE_THAT(s.message(), Contains("not a node of this scope's graph"));
  s = AddSymbolicGradients(root, {Output(y.node(), 3)}, {x}, &dx);
  REQUIRE_THAT(s.message(), Contains("refers to output 3"));
}

TEST_CASE("the gradient of batch normalization's gradient (a second derivative) is refused, naming the node") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::FusedBatchNormOutputs bn = ops::FusedBatchNorm(root, x, test::MakeTensor<float>({1.f}, {1}),
                                                      test::MakeTensor<float>({0.f}, {1}), Tensor(DT_FLOAT, TensorShape{0}),
                                                      Tensor(DT_FLOAT, TensorShape{0}));
  std::vector<Output> dx;
  REQUIRE(AddSymbolicGradients(root, {ops::Sum(root, bn.y, {0, 1, 2, 3})}, {x}, &dx).ok());
  std::vector<Output> ddx;
  const Status s = AddSymbolicGradients(root, {ops::Sum(root, dx[0], {0, 1, 2, 3})}, {x}, &ddx);
  CHECK(s.code() == Code::kUnimplemented);
  CHECK_THAT(s.message(), Contains("second derivatives of batch normalization"));
}
