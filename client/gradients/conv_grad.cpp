// Gradients of Conv2D, MaxPool, AvgPool and of their backprop ops, with
// TensorFlow's formulas (python/ops/nn_grad.py): each is the op's own
// backprop with the node's window attributes (strides, padding, ksize).
#include <vector>

#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

struct WindowAttrs {
  std::vector<int64_t> ksize, strides, explicit_paddings;
  std::string padding;
};
WindowAttrs AttrsOf(const Operation& op) {
  WindowAttrs a;  // validated when the node was added
  (void)GetNodeAttr(op.node()->def(), "ksize", &a.ksize);
  (void)GetNodeAttr(op.node()->def(), "strides", &a.strides);
  (void)GetNodeAttr(op.node()->def(), "padding", &a.padding);
  (void)GetNodeAttr(op.node()->def(), "explicit_paddings", &a.explicit_paddings);
  return a;
}

Status Conv2DGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  const WindowAttrs a = AttrsOf(op);
  const Output x = op.input(0), f = op.input(1), dy = grad_inputs[0];
  grad_outputs->push_back(ops::Conv2DBackpropInput(scope, ops::Shape(scope, x), f, dy, a.strides, a.padding,
                                                   a.explicit_paddings));
  grad_outputs->push_back(ops::Conv2DBackpropFilter(scope, x, ops::Shape(scope, f), dy, a.strides, a.padding,
                                                   a.explicit_paddings));
  return scope.status();
}
AF_REGISTER_GRADIENT("Conv2D", Conv2DGrad);

Status Conv2DBackpropInputGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                               std::vector<Output>* grad_outputs) {
  // z = conv^T(f, dy): df from dz and dy, ddy = conv(dz, f)
  const WindowAttrs a = AttrsOf(op);
  const Output f = op.input(1), dy = op.input(2), dz = grad_inputs[0];
  grad_outputs->push_back(Output());
  grad_outputs->push_back(ops::Conv2DBackpropFilter(scope, dz, ops::Shape(scope, f), dy, a.strides, a.padding,
                                                   a.explicit_paddings));
  grad_outputs->push_back(ops::Conv2D(scope, dz, f, a.strides, a.padding,
                                                   a.explicit_paddings));
  return scope.status();
}
AF_REGISTER_GRADIENT("Conv2DBackpropInput", Conv2DBackpropInputGrad);

Status Conv2DBackpropFilterGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                                std::vector<Output>* grad_outputs) {
  // z = corr(x, dy): dx = conv^T(dz, dy), ddy = conv(x, dz)
  const WindowAttrs a = AttrsOf(op);
  const Output x = op.input(0), dy = op.input(2), dz = grad_inputs[0];
  grad_outputs->push_back(ops::Conv2DBackpropInput(scope, ops::Shape(scope, x), dz, dy, a.strides, a.padding,
                                                   a.explicit_paddings));
  grad_outputs->push_back(Output());
  grad_outputs->push_back(ops::Conv2D(scope, x, dz, a.strides, a.padding,
                                                   a.explicit_paddings));
  return scope.status();
}
AF_REGISTER_GRADIENT("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);

Status MaxPoolGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                       std::vector<Output>* grad_outputs) {
  const WindowAttrs a = AttrsOf(op);
  grad_outputs->push_back(
      ops::MaxPoolGrad(scope, op.input(0), op.output(0), grad_inputs[0], a.ksize, a.strides, a.padding));
  return scope.status();
}
AF_REGISTER_GRADIENT("MaxPool", MaxPoolGradient);

Status MaxPoolGradGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                           std::vector<Output>* grad_outputs) {
  // Linear in grad; orig_input and orig_output only pick where: no gradient for them
  const WindowAttrs a = AttrsOf(op);
  grad_outputs->push_back(Output());
  grad_outputs->push_back(Output());
  grad_outputs->push_back(
      ops::MaxPoolGradGrad(scope, op.input(0), op.input(1), grad_inputs[0], a.ksize, a.strides, a.padding));
  return scope.status();
}
AF_REGISTER_GRADIENT("MaxPoolGrad", MaxPoolGradGradient);

Status MaxPoolGradGradGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                               std::vector<Output>* grad_outputs) {
  const WindowAttrs a = AttrsOf(op);
  grad_outputs->push_back(Output());
  grad_outputs->push_back(Output());
  grad_outputs->push_back(
      ops::MaxPoolGrad(scope, op.input(0), op.input(1), grad_inputs[0], a.ksize, a.strides, a.padding));
  return scope.status();
}
AF_REGISTER_GRADIENT("MaxPoolGradGrad", MaxPoolGradGradGradient);

Status AvgPoolGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                       std::vector<Output>* grad_outputs) {
  const WindowAttrs a = AttrsOf(op);
  grad_outputs->push_back(
      ops::AvgPoolGrad(scope, ops::Shape(scope, op.input(0)), grad_inputs[0], a.ksize, a.strides, a.padding));
  return scope.status();
}
AF_REGISTER_GRADIENT("AvgPool", AvgPoolGradient);

Status AvgPoolGradGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                           std::vector<Output>* grad_outputs) {
  const WindowAttrs a = AttrsOf(op);  // linear in grad: its gradient is the pooling itself
  grad_outputs->push_back(Output());
  grad_outputs->push_back(ops::AvgPool(scope, grad_inputs[0], a.ksize, a.strides, a.padding));
  return scope.status();
}
AF_REGISTER_GRADIENT("AvgPoolGrad", AvgPoolGradGradient);

}  // namespace
}  // namespace actorflow
