// Gradients of the math ops: element-wise functions, broadcasting arithmetic,
// MatMul, reductions, scans, Cast, AddN. TensorFlow's formulas
// (tensorflow/cc/gradients/math_grad.cc, python/ops/math_grad.py); each
// function is followed by its registration. In the comments, dy is the
// gradient arriving for the op's output and dx the one sent to input x.
#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

using grad::ReduceBroadcastGradients;
using grad::ScalarOf;

Output Dy(const std::vector<Output>& grad_inputs) { return grad_inputs[0]; }

// ---------------------------------------------------------------------------
// Unary element-wise functions.

Status NegGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Neg(scope, Dy(grad_inputs)));  // dx = -dy
  return scope.status();
}
AF_REGISTER_GRADIENT("Neg", NegGrad);

Status AbsGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Mul(scope, Dy(grad_inputs), ops::Sign(scope, op.input(0))));  // dx = dy * sign(x)
  return scope.status();
}
AF_REGISTER_GRADIENT("Abs", AbsGrad);

Status SquareGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  const Output x = op.input(0);  // dx = dy * 2x
  grad_outputs->push_back(ops::Mul(scope, Dy(grad_inputs), ops::Mul(scope, ScalarOf(scope, 2, x.type()), x)));
  return scope.status();
}
AF_REGISTER_GRADIENT("Square", SquareGrad);

Status ExpGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Mul(scope, Dy(grad_inputs), op.output(0)));  // dx = dy * exp(x) = dy * y
  return scope.status();
}
AF_REGISTER_GRADIENT("Exp", ExpGrad);

Status LogGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Mul(scope, Dy(grad_inputs), ops::Reciprocal(scope, op.input(0))));  // dx = dy / x
  return scope.status();
}
AF_REGISTER_GRADIENT("Log", LogGrad);

Status SqrtGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::SqrtGrad(scope, op.output(0), Dy(grad_inputs)));  // dx = dy * 0.5 / y
  return scope.status();
}
AF_REGISTER_GRADIENT("Sqrt", SqrtGrad);

Status RsqrtGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                 std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::RsqrtGrad(scope, op.output(0), Dy(grad_inputs)));  // dx = dy * -0.5 * y^3
  return scope.status();
}
AF_REGISTER_GRADIENT("Rsqrt", RsqrtGrad);

Status ReciprocalGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                      std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::ReciprocalGrad(scope, op.output(0), Dy(grad_inputs)));  // dx = -dy * y^2
  return scope.status();
}
AF_REGISTER_GRADIENT("Reciprocal", ReciprocalGrad);

Status TanhGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::TanhGrad(scope, op.output(0), Dy(grad_inputs)));  // dx = dy * (1 - y^2)
  return scope.status();
}
AF_REGISTER_GRADIENT("Tanh", TanhGrad);

Status SigmoidGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::SigmoidGrad(scope, op.output(0), Dy(grad_inputs)));  // dx = dy * y * (1 - y)
  return scope.status();
}
AF_REGISTER_GRADIENT("Sigmoid", SigmoidGrad);

AF_REGISTER_NO_GRADIENT("Sign");

// ---------------------------------------------------------------------------
// Second derivatives: the gradients of the backprop ops above, each a
// function z(a, b) of the forward output a and the incoming gradient b.

Status SigmoidGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                       std::vector<Output>* grad_outputs) {
  // z = b * a * (1 - a): da = dz * b * (1 - 2a), db = dz * a * (1 - a)
  const Output a = op.input(0), b = op.input(1), gb = ops::Mul(scope, Dy(grad_inputs), b);
  grad_outputs->push_back(ops::Sub(scope, gb, ops::Mul(scope, ops::Mul(scope, ScalarOf(scope, 2, a.type()), gb), a)));
  grad_outputs->push_back(ops::SigmoidGrad(scope, a, Dy(grad_inputs)));
  return scope.status();
}
AF_REGISTER_GRADIENT("SigmoidGrad", SigmoidGradGrad);

Status TanhGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // z = b * (1 - a^2): da = dz * -2 * b * a, db = dz * (1 - a^2)
  const Output a = op.input(0), b = op.input(1);
  grad_outputs->push_back(
      ops::Mul(scope, ops::Mul(scope, Dy(grad_inputs), ScalarOf(scope, -2, a.type())), ops::Mul(scope, b, a)));
  grad_outputs->push_back(ops::TanhGrad(scope, a, Dy(grad_inputs)));
  return scope.status();
}
AF_REGISTER_GRADIENT("TanhGrad", TanhGradGrad);

Status SqrtGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // z = 0.5 * b / a: da = -dz * z / a, db = 0.5 * dz / a
  const Output a = op.input(0), ga = ops::RealDiv(scope, Dy(grad_inputs), a);
  grad_outputs->push_back(ops::Neg(scope, ops::Mul(scope, ga, op.output(0))));
  grad_outputs->push_back(ops::Mul(scope, ScalarOf(scope, 0.5, a.type()), ga));
  return scope.status();
}
AF_REGISTER_GRADIENT("SqrtGrad", SqrtGradGrad);

Status RsqrtGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                     std::vector<Output>* grad_outputs) {
  // z = -0.5 * b * a^3: da = dz * -1.5 * b * a^2, db = dz * -0.5 * a^3
  const Output a = op.input(0), b = op.input(1);
  grad_outputs->push_back(ops::Mul(scope, ops::Mul(scope, ScalarOf(scope, -1.5, a.type()), Dy(grad_inputs)),
                                   ops::Mul(scope, b, ops::Square(scope, a))));
  grad_outputs->push_back(ops::RsqrtGrad(scope, a, Dy(grad_inputs)));
  return scope.status();
}
AF_REGISTER_GRADIENT("RsqrtGrad", RsqrtGradGrad);

Status ReciprocalGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                          std::vector<Output>* grad_outputs) {
  // z = -b * a^2: da = dz * -2 * b * a, db = -dz * a^2
  const Output a = op.input(0), b = op.input(1);
  grad_outputs->push_back(
      ops::Mul(scope, ops::Mul(scope, Dy(grad_inputs), ScalarOf(scope, -2, a.type())), ops::Mul(scope, b, a)));
  grad_outputs->push_back(ops::ReciprocalGrad(scope, a, Dy(grad_inputs)));
  return scope.status();
}
AF_REGISTER_GRADIENT("ReciprocalGrad", ReciprocalGradGrad);

// ---------------------------------------------------------------------------
// Broadcasting binary arithmetic: the gradients below have the output's shape
// and are summed back to each input's shape by ReduceBroadcastGradients.

Status AddGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  return ReduceBroadcastGradients(scope, op, Dy(grad_inputs), Dy(grad_inputs), grad_outputs);  // dx = dy, dy' = dy
}
AF_REGISTER_GRADIENT("Add", AddGrad);
AF_REGISTER_GRADIENT("AddV2", AddGrad);

Status SubGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  // z = x - y: dx = dz, dy = -dz
  return ReduceBroadcastGradients(scope, op, Dy(grad_inputs), ops::Neg(scope, Dy(grad_inputs)), grad_outputs);
}
AF_REGISTER_GRADIENT("Sub", SubGrad);

Status MulGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  // z = x * y: dx = dz * y, dy = x * dz
  const Output x = op.input(0), y = op.input(1), dz = Dy(grad_inputs);
  return ReduceBroadcastGradients(scope, op, ops::Mul(scope, dz, y), ops::Mul(scope, x, dz), grad_outputs);
}
AF_REGISTER_GRADIENT("Mul", MulGrad);

// Div and RealDiv agree on floating dtypes, the only ones gradients reach.
Status RealDivGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  // z = x / y: dx = dz / y, dy = dz * (-x / y) / y
  const Output x = op.input(0), y = op.input(1), dz = Dy(grad_inputs);
  const Output gx = ops::RealDiv(scope, dz, y);
  const Output gy = ops::Mul(scope, dz, ops::RealDiv(scope, ops::RealDiv(scope, ops::Neg(scope, x), y), y));
  return ReduceBroadcastGradients(scope, op, gx, gy, grad_outputs);
}
AF_REGISTER_GRADIENT("RealDiv", RealDivGrad);
AF_REGISTER_GRADIENT("Div", RealDivGrad);

AF_REGISTER_NO_GRADIENT("FloorDiv");  // piecewise constant

Status FloorModGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // z = x - floor(x / y) * y: dx = dz, dy = -dz * floor(x / y)
  const Output x = op.input(0), y = op.input(1), dz = Dy(grad_inputs);
  const Output gy = ops::Mul(scope, dz, ops::Neg(scope, ops::FloorDiv(scope, x, y)));
  return ReduceBroadcastGradients(scope, op, dz, gy, grad_outputs);
}
AF_REGISTER_GRADIENT("FloorMod", FloorModGrad);

// Maximum and Minimum send the gradient to the input that was selected; ties
// go to x (TensorFlow's convention).
Status MaxMinGrad(const Scope& scope, const Operation& op, const Output& x_selected, const Output& dz,
                  std::vector<Output>* grad_outputs) {
  const Output zeros = ops::ZerosLike(scope, dz);
  return ReduceBroadcastGradients(scope, op, ops::Select(scope, x_selected, dz, zeros),
                                  ops::Select(scope, x_selected, zeros, dz), grad_outputs);
}

Status MaximumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  // dx = dz where x >= y, dy = dz elsewhere
  return MaxMinGrad(scope, op, ops::GreaterEqual(scope, op.input(0), op.input(1)), Dy(grad_inputs), grad_outputs);
}
AF_REGISTER_GRADIENT("Maximum", MaximumGrad);

Status MinimumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  // dx = dz where x <= y, dy = dz elsewhere
  return MaxMinGrad(scope, op, ops::LessEqual(scope, op.input(0), op.input(1)), Dy(grad_inputs), grad_outputs);
}
AF_REGISTER_GRADIENT("Minimum", MinimumGrad);

Status PowGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  // z = x^y: dx = dz * y * x^(y - 1), dy = dz * z * log(x), taken as 0 where x <= 0
  // (no real log there; TensorFlow's choice).
  const Output x = op.input(0), y = op.input(1), z = op.output(0), dz = Dy(grad_inputs);
  const Output one = ScalarOf(scope, 1, y.type());
  const Output gx = ops::Mul(scope, ops::Mul(scope, dz, y), ops::Pow(scope, x, ops::Sub(scope, y, one)));
  const Output log_x = ops::Select(scope, ops::Greater(scope, x, ScalarOf(scope, 0, x.type())), ops::Log(scope, x),
                                   ops::ZerosLike(scope, x));
  const Output gy = ops::Mul(scope, ops::Mul(scope, dz, z), log_x);
  return ReduceBroadcastGradients(scope, op, gx, gy, grad_outputs);
}
AF_REGISTER_GRADIENT("Pow", PowGrad);

AF_REGISTER_NO_GRADIENT("Equal");
AF_REGISTER_NO_GRADIENT("NotEqual");
AF_REGISTER_NO_GRADIENT("Less");
AF_REGISTER_NO_GRADIENT("LessEqual");
AF_REGISTER_NO_GRADIENT("Greater");
AF_REGISTER_NO_GRADIENT("GreaterEqual");
AF_REGISTER_NO_GRADIENT("LogicalAnd");
AF_REGISTER_NO_GRADIENT("LogicalOr");
AF_REGISTER_NO_GRADIENT("LogicalNot");

// ---------------------------------------------------------------------------
// Cast, AddN, MatMul.

Status CastGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // dx = cast(dy) back to x's dtype, between floating dtypes only.
  const DataType src = op.input(0).type(), dst = op.output(0).type();
  const bool differentiable = IsDifferentiableType(src) && IsDifferentiableType(dst);
  grad_outputs->push_back(differentiable ? ops::Cast(scope, Dy(grad_inputs), src) : Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Cast", CastGrad);

Status AddNGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  for (int i = 0; i < op.num_inputs(); ++i) grad_outputs->push_back(Dy(grad_inputs));  // dx_i = dy
  return scope.status();
}
AF_REGISTER_GRADIENT("AddN", AddNGrad);

Status MatMulGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  bool ta = false, tb = false;
  AF_RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "transpose_a", &ta));
  AF_RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "transpose_b", &tb));
  const Output a = op.input(0), b = op.input(1), dc = Dy(grad_inputs);
  // c = op(a) op(b); each case keeps da and db in the layout of a and b.
  if (!ta && !tb) {  // da = dc b^T, db = a^T dc
    grad_outputs->push_back(ops::MatMul(scope, dc, b, false, true));
    grad_outputs->push_back(ops::MatMul(scope, a, dc, true, false));
  } else if (!ta && tb) {  // da = dc b, db = dc^T a
    grad_outputs->push_back(ops::MatMul(scope, dc, b, false, false));
    grad_outputs->push_back(ops::MatMul(scope, dc, a, true, false));
  } else if (ta && !tb) {  // da = b dc^T, db = a dc
    grad_outputs->push_back(ops::MatMul(scope, b, dc, false, true));
    grad_outputs->push_back(ops::MatMul(scope, a, dc, false, false));
  } else {  // da = b^T dc^T, db = dc^T a^T
    grad_outputs->push_back(ops::MatMul(scope, b, dc, true, true));
    grad_outputs->push_back(ops::MatMul(scope, dc, a, true, true));
  }
  return scope.status();
}
AF_REGISTER_GRADIENT("MatMul", MatMulGrad);

// ---------------------------------------------------------------------------
// Reductions: the gradient of each output element goes back to the input
// elements reduced into it. The axes get no gradient.

Status SumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  // dx = dy broadcast over the reduced axes
  grad_outputs->push_back(grad::BroadcastReducedGradient(scope, Dy(grad_inputs), op.input(0), op.input(1)));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Sum", SumGrad);

Status MeanGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // dx = dy broadcast over the reduced axes / the number of elements reduced into each output
  const Output x = op.input(0);
  const Output sum_grad = grad::BroadcastReducedGradient(scope, Dy(grad_inputs), x, op.input(1));
  // Reducing everything, each output averages all of x.
  const Output group_size =
      grad::ReducesAllAxes(scope, x, op.input(1))
          ? ops::Size(scope, x, DT_INT64)
          : ops::FloorDiv(scope, ops::Size(scope, x, DT_INT64),
                          ops::Maximum(scope, ops::Size(scope, op.output(0), DT_INT64), int64_t{1}));
  grad_outputs->push_back(ops::RealDiv(scope, sum_grad, ops::Cast(scope, group_size, x.type())));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Mean", MeanGrad);

// Max and Min: the gradient is shared equally by the elements equal to the
// extremum (ties split it).
Status MinOrMaxGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  const Output x = op.input(0), axes = op.input(1);
  const Output kept = grad::ReducedShape(scope, ops::Shape(scope, x), axes);
  const Output y = ops::Reshape(scope, op.output(0), kept);
  const Output dy = ops::Reshape(scope, Dy(grad_inputs), kept);
  const Output indicators = ops::Cast(scope, ops::Equal(scope, y, x), x.type());
  const Output num_selected = ops::Reshape(scope, ops::Sum(scope, indicators, axes), kept);
  grad_outputs->push_back(ops::Mul(scope, ops::RealDiv(scope, indicators, num_selected), dy));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Max", MinOrMaxGrad);
AF_REGISTER_GRADIENT("Min", MinOrMaxGrad);

Status ProdGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // dx_i = dy * (product of the other elements reduced with x_i), computed
  // without dividing by x_i (zeros are fine): the reduced dims are moved first
  // and flattened, so x is [reduced, other]; the product of the others is the
  // exclusive cumulative product from the left times the one from the right.
  // Axes must not repeat (the transpose below would fail).
  const Output x = op.input(0), dy = Dy(grad_inputs);
  const Output grad = grad::BroadcastReducedGradient(scope, dy, x, op.input(1));
  const Output rank = ops::Rank(scope, x);
  Output axes = ops::Reshape(scope, op.input(1), {-1});
  if (axes.valid() && axes.type() != DT_INT32) axes = ops::Cast(scope, axes, DT_INT32);
  const Output reduced = ops::FloorMod(scope, ops::Add(scope, axes, rank), rank);  // in [0, rank)
  const Output other = ops::ListDiff(scope, ops::Range(scope, 0, rank, 1), reduced).out;
  const Output perm = ops::Concat(scope, {reduced, other}, 0);
  const Output permuted = ops::Transpose(scope, x, perm);
  const Output permuted_shape = ops::Shape(scope, permuted);
  const Output n_reduced = ops::ExpandDims(scope, ops::Size(scope, reduced), 0);
  const Output reduced_num = ops::Prod(scope, ops::Slice(scope, permuted_shape, {0}, n_reduced), 0);
  const Output other_num = ops::Prod(scope, ops::Slice(scope, permuted_shape, n_reduced, {-1}), 0);
  const Output flat = ops::Reshape(scope, permuted, ops::Stack(scope, {reduced_num, other_num}));
  const Output left = ops::Cumprod(scope, flat, 0, /*exclusive=*/true);
  const Output right = ops::Cumprod(scope, flat, 0, /*exclusive=*/true, /*reverse=*/true);
  const Output others = ops::Reshape(scope, ops::Mul(scope, left, right), permuted_shape);
  const Output out = ops::Mul(scope, grad, ops::Transpose(scope, others, ops::InvertPermutation(scope, perm)));
  grad_outputs->push_back(ops::Reshape(scope, out, ops::Shape(scope, x)));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Prod", ProdGrad);

AF_REGISTER_NO_GRADIENT("ArgMax");
AF_REGISTER_NO_GRADIENT("ArgMin");

// ---------------------------------------------------------------------------
// Scans.

bool BoolAttr(const Operation& op, const char* name) {
  bool v = false;
  (void)GetNodeAttr(op.node()->def(), name, &v);  // validated when the node was added
  return v;
}

Status CumsumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  // Each x_i feeds the outputs after it (before it when reversed): dx is the
  // cumulative sum of dy in the other direction.
  const Output axis = op.input(1);
  grad_outputs->push_back(
      ops::Cumsum(scope, Dy(grad_inputs), axis, BoolAttr(op, "exclusive"), !BoolAttr(op, "reverse")));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Cumsum", CumsumGrad);

Status CumprodGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  // dx = reverse-cumsum(y * dy) / x, y the cumulative product (as TensorFlow:
  // undefined where x is 0).
  const Output x = op.input(0), axis = op.input(1);
  const bool exclusive = BoolAttr(op, "exclusive"), reverse = BoolAttr(op, "reverse");
  const Output out = ops::Cumsum(scope, ops::Mul(scope, op.output(0), Dy(grad_inputs)), axis, exclusive, !reverse);
  grad_outputs->push_back(ops::RealDiv(scope, out, x));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Cumprod", CumprodGrad);

}  // namespace
}  // namespace actorflow
