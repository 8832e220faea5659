// Gradients of the element-wise functions of ops/math/cwise_special_ops.cpp:
// Log1p, Expm1, Sin, Cos, Erf, SquaredDifference and DivNoNan, with
// TensorFlow's formulas (python/ops/math_grad.py); Floor, Ceil and Round are
// piecewise constant and have none. dy is the gradient arriving for the op's
// output, dx the one sent to input x.
#include <cmath>

#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

using grad::ReduceBroadcastGradients;
using grad::ScalarOf;

Status Log1pGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                 std::vector<Output>* grad_outputs) {
  const Output x = op.input(0);  // dx = dy / (1 + x)
  grad_outputs->push_back(
      ops::Mul(scope, grad_inputs[0], ops::Reciprocal(scope, ops::Add(scope, ScalarOf(scope, 1, x.type()), x))));
  return scope.status();
}
AF_REGISTER_GRADIENT("Log1p", Log1pGrad);

Status Expm1Grad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                 std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Mul(scope, grad_inputs[0], ops::Exp(scope, op.input(0))));  // dx = dy * exp(x)
  return scope.status();
}
AF_REGISTER_GRADIENT("Expm1", Expm1Grad);

Status SinGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Mul(scope, grad_inputs[0], ops::Cos(scope, op.input(0))));  // dx = dy * cos(x)
  return scope.status();
}
AF_REGISTER_GRADIENT("Sin", SinGrad);

Status CosGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Neg(scope, ops::Mul(scope, grad_inputs[0], ops::Sin(scope, op.input(0)))));
  return scope.status();  // dx = -dy * sin(x)
}
AF_REGISTER_GRADIENT("Cos", CosGrad);

Status ErfGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  const Output x = op.input(0);  // dx = dy * 2 / sqrt(pi) * exp(-x^2)
  const Output two_over_sqrt_pi = ScalarOf(scope, 2 / std::sqrt(M_PI), x.type());
  grad_outputs->push_back(ops::Mul(scope, ops::Mul(scope, grad_inputs[0], two_over_sqrt_pi),
                                   ops::Exp(scope, ops::Neg(scope, ops::Square(scope, x)))));
  return scope.status();
}
AF_REGISTER_GRADIENT("Erf", ErfGrad);

AF_REGISTER_NO_GRADIENT("Floor");
AF_REGISTER_NO_GRADIENT("Ceil");
AF_REGISTER_NO_GRADIENT("Round");

Status SquaredDifferenceGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                             std::vector<Output>* grad_outputs) {
  // z = (x - y)^2: dx = 2 (x - y) dz, dy = -dx
  const Output x = op.input(0), y = op.input(1);
  const Output gx =
      ops::Mul(scope, ops::Mul(scope, ScalarOf(scope, 2, x.type()), grad_inputs[0]), ops::Sub(scope, x, y));
  return ReduceBroadcastGradients(scope, op, gx, ops::Neg(scope, gx), grad_outputs);
}
AF_REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);

Status DivNoNanGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // z = x / y (0 where y = 0): dx = dz / y, dy = dz * (-x / y) / y, each 0 where y = 0
  const Output x = op.input(0), y = op.input(1), dz = grad_inputs[0];
  const Output gx = ops::DivNoNan(scope, dz, y);
  const Output gy = ops::Mul(scope, dz, ops::DivNoNan(scope, ops::DivNoNan(scope, ops::Neg(scope, x), y), y));
  return ReduceBroadcastGradients(scope, op, gx, gy, grad_outputs);
}
AF_REGISTER_GRADIENT("DivNoNan", DivNoNanGrad);

}  // namespace
}  // namespace actorflow
