// Gradients of the neural-network ops: Relu, BiasAdd, Softmax, LogSoftmax and
// the softmax cross entropies, and of their backprop ops (ReluGrad,
// BiasAddGrad). TensorFlow's formulas (tensorflow/cc/gradients/nn_grad.cc,
// python/ops/nn_grad.py). The softmax ops work on the last dimension. The
// fused ops of graph optimization refuse (below).
#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

Status ReluGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // dx = dy * (x > 0), read from y = relu(x) (y > 0 exactly where x > 0), as
  // TensorFlow's _ReluGrad does: x's only reader is then the Relu, which
  // writes y over it in place, and x need not live until the backward pass.
  grad_outputs->push_back(ops::ReluGrad(scope, grad_inputs[0], op.output(0)));
  return scope.status();
}
AF_REGISTER_GRADIENT("Relu", ReluGrad);

Status ReluGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // z = g * (x > 0): dg = dz * (x > 0); dx = 0 almost everywhere
  grad_outputs->push_back(ops::ReluGrad(scope, grad_inputs[0], op.input(1)));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("ReluGrad", ReluGradGrad);

std::string DataFormat(const Operation& op) {
  std::string fmt = "NHWC";
  (void)GetNodeAttr(op.node()->def(), "data_format", &fmt);  // validated when the node was added
  return fmt;
}

Status BiasAddGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  // dvalue = dy; dbias = dy summed over all but the channel dimension
  grad_outputs->push_back(grad_inputs[0]);
  grad_outputs->push_back(ops::BiasAddGrad(scope, grad_inputs[0], DataFormat(op)));
  return scope.status();
}
AF_REGISTER_GRADIENT("BiasAdd", BiasAddGrad);

Status BiasAddGradGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                       std::vector<Output>* grad_outputs) {
  // z = sum of g over the non-channel dims: dg = dz broadcast along the
  // channel dimension to g's shape, which is what BiasAdd onto zeros computes.
  grad_outputs->push_back(
      ops::BiasAdd(scope, ops::ZerosLike(scope, op.input(0)), grad_inputs[0], DataFormat(op)));
  return scope.status();
}
AF_REGISTER_GRADIENT("BiasAddGrad", BiasAddGradGrad);

Status SoftmaxGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                   std::vector<Output>* grad_outputs) {
  // y = softmax(x): dx = (dy - sum(dy * y, -1)) * y
  const Output y = op.output(0), dy = grad_inputs[0];
  const Output sum = ops::Sum(scope, ops::Mul(scope, dy, y), -1, /*keep_dims=*/true);
  grad_outputs->push_back(ops::Mul(scope, ops::Sub(scope, dy, sum), y));
  return scope.status();
}
AF_REGISTER_GRADIENT("Softmax", SoftmaxGrad);

Status LogSoftmaxGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                      std::vector<Output>* grad_outputs) {
  // y = log_softmax(x): dx = dy - sum(dy, -1) * exp(y)
  const Output dy = grad_inputs[0];
  const Output sum = ops::Sum(scope, dy, -1, /*keep_dims=*/true);
  grad_outputs->push_back(ops::Sub(scope, dy, ops::Mul(scope, sum, ops::Exp(scope, op.output(0)))));
  return scope.status();
}
AF_REGISTER_GRADIENT("LogSoftmax", LogSoftmaxGrad);

// A gradient that the builder filled with zeros: an output nothing used.
bool IsZeros(const Output& grad) { return grad.node()->type_string() == "ZerosLike"; }

// loss[i] (a vector) times each row of m: ExpandDims(loss, -1) * m.
Output BroadcastRows(const Scope& scope, const Output& loss, const Output& m) {
  return ops::Mul(scope, ops::ExpandDims(scope, loss, -1), m);
}

// The logits' gradient shared by both cross entropies, whose outputs are
// loss = logsumexp(x) - <labels, x> per row and backprop = softmax(x) - labels
// (the loss's gradient when each row of labels sums to 1, as it must).
// dx = dloss * backprop, plus, when backprop itself was used (a second
// derivative), the softmax Jacobian applied to dbackprop:
// (dbackprop - sum(dbackprop * softmax, -1)) * softmax.
Output XentLogitsGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs) {
  const Output dloss = grad_inputs[0], dbackprop = grad_inputs[1];
  Output dx = BroadcastRows(scope, dloss, op.output(1));
  if (!IsZeros(dbackprop)) {
    const Output softmax = ops::Softmax(scope, op.input(0));
    const Output sum = ops::Sum(scope, ops::Mul(scope, dbackprop, softmax), -1, /*keep_dims=*/true);
    dx = ops::Add(scope, dx, ops::Mul(scope, ops::Sub(scope, dbackprop, sum), softmax));
  }
  return dx;
}

Status SoftmaxCrossEntropyWithLogitsGrad(const Scope& scope, const Operation& op,
                                         const std::vector<Output>& grad_inputs, std::vector<Output>* grad_outputs) {
  // dlabels = dloss * -log_softmax(x) - dbackprop (TensorFlow leaves out the
  // second term, which only a second derivative has).
  grad_outputs->push_back(XentLogitsGrad(scope, op, grad_inputs));
  Output dlabels = BroadcastRows(scope, grad_inputs[0], ops::Neg(scope, ops::LogSoftmax(scope, op.input(0))));
  if (!IsZeros(grad_inputs[1])) dlabels = ops::Sub(scope, dlabels, grad_inputs[1]);
  grad_outputs->push_back(dlabels);
  return scope.status();
}
AF_REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyWithLogitsGrad);

Status SparseSoftmaxCrossEntropyWithLogitsGrad(const Scope& scope, const Operation& op,
                                               const std::vector<Output>& grad_inputs,
                                               std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(XentLogitsGrad(scope, op, grad_inputs));
  grad_outputs->push_back(Output());  // class indices: none
  return scope.status();
}
AF_REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyWithLogitsGrad);

// _FusedMatMul and _FusedConv2D are made by graph optimization
// (graph/remapper.hpp) from graphs whose gradients are built already; a
// GraphDef that carries them (TensorFlow's grappler output) is not
// differentiated through them, as TensorFlow's are not: they refuse, saying so.
Status FusedOpGrad(const Scope&, const Operation& op, const std::vector<Output>&, std::vector<Output>*) {
  return errors::Unimplemented("no gradient for '", op.node()->name(), "' (op '", op.node()->type_string(),
                               "'): fused ops are made by graph optimization; differentiate the graph with its "
                               "MatMul or Conv2D, BiasAdd and activation");
}
AF_REGISTER_GRADIENT("_FusedMatMul", FusedOpGrad);
AF_REGISTER_GRADIENT("_FusedConv2D", FusedOpGrad);

}  // namespace
}  // namespace actorflow
