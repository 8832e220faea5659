// Gradients of the activations of ops/nn/activation_variant_ops.cpp (Elu,
// Selu, Softplus, Relu6, LeakyRelu) and of their backprop ops, with
// TensorFlow's formulas (python/ops/nn_grad.py). For a backprop op z(g, v)
// of the incoming gradient g and the forward op's outputs or features v,
// dg and dv are the gradients sent to its two inputs; an empty Output means
// none (zero almost everywhere).
#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

using grad::ScalarOf;

float Alpha(const Operation& op) {
  float alpha = 0.2f;
  (void)GetNodeAttr(op.node()->def(), "alpha", &alpha);  // validated when the node was added
  return alpha;
}

Status EluGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::EluGrad(scope, grad_inputs[0], op.output(0)));
  return scope.status();
}
AF_REGISTER_GRADIENT("Elu", EluGradient);

Status SeluGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::SeluGrad(scope, grad_inputs[0], op.output(0)));
  return scope.status();
}
AF_REGISTER_GRADIENT("Selu", SeluGradient);

// EluGrad and SeluGrad: z = g * (y < 0 ? y + c : k), so dg = dz * (y < 0 ? y + c : k), the op itself on dz,
// and dy = dz * g where y < 0.
Status ExpLinearGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                         std::vector<Output>* grad_outputs) {
  const Output g = op.input(0), y = op.input(1), dz = grad_inputs[0];
  grad_outputs->push_back(op.node()->type_string() == "EluGrad" ? ops::EluGrad(scope, dz, y)
                                                                  : ops::SeluGrad(scope, dz, y));
  const Output negative = ops::Less(scope, y, ScalarOf(scope, 0, y.type()));
  grad_outputs->push_back(ops::Select(scope, negative, ops::Mul(scope, dz, g), ops::ZerosLike(scope, y)));
  return scope.status();
}
AF_REGISTER_GRADIENT("EluGrad", ExpLinearGradGrad);
AF_REGISTER_GRADIENT("SeluGrad", ExpLinearGradGrad);

Status SoftplusGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                        std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::SoftplusGrad(scope, grad_inputs[0], op.input(0)));  // dx = dy * sigmoid(x)
  return scope.status();
}
AF_REGISTER_GRADIENT("Softplus", SoftplusGradient);

Status SoftplusGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                        std::vector<Output>* grad_outputs) {
  // z = g * sigmoid(x): dg = dz * sigmoid(x), dx = dz * g * sigmoid'(x) = dz * g / (exp(-x) + 2 + exp(x))
  const Output g = op.input(0), x = op.input(1), dz = grad_inputs[0];
  grad_outputs->push_back(ops::SoftplusGrad(scope, dz, x));
  const Output denominator = ops::Add(scope, ops::Add(scope, ops::Exp(scope, ops::Neg(scope, x)), ScalarOf(scope, 2, x.type())),
                                      ops::Exp(scope, x));
  grad_outputs->push_back(ops::RealDiv(scope, ops::Mul(scope, dz, g), denominator));
  return scope.status();
}
AF_REGISTER_GRADIENT("SoftplusGrad", SoftplusGradGrad);

Status Relu6Gradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                     std::vector<Output>* grad_outputs) {
  // dx = dy where 0 < x < 6, read from y = relu6(x) (0 < y < 6 exactly there),
  // as TensorFlow's _Relu6Grad does (see Relu's gradient).
  grad_outputs->push_back(ops::Relu6Grad(scope, grad_inputs[0], op.output(0)));
  return scope.status();
}
AF_REGISTER_GRADIENT("Relu6", Relu6Gradient);

Status Relu6GradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                     std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Relu6Grad(scope, grad_inputs[0], op.input(1)));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Relu6Grad", Relu6GradGrad);

Status LeakyReluGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                         std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::LeakyReluGrad(scope, grad_inputs[0], op.input(0), Alpha(op)));
  return scope.status();
}
AF_REGISTER_GRADIENT("LeakyRelu", LeakyReluGradient);

Status LeakyReluGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                         std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::LeakyReluGrad(scope, grad_inputs[0], op.input(1), Alpha(op)));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("LeakyReluGrad", LeakyReluGradGrad);

}  // namespace
}  // namespace actorflow
