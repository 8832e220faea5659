// Gradients of IdentityN, L2Loss and TopKV2 (TensorFlow's formulas:
// python/ops/array_grad.py, nn_grad.py), and the ops TensorFlow gives none:
// ShapeN, OneHot, All, Any, Where, Unique, InTopKV2, the summary ops and the
// string ops.
#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

Status IdentityNGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                     std::vector<Output>* grad_outputs) {
  for (const Output& g : grad_inputs) grad_outputs->push_back(g);  // each passes through
  return scope.status();
}
AF_REGISTER_GRADIENT("IdentityN", IdentityNGrad);

Status L2LossGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Mul(scope, op.input(0), grad_inputs[0]));  // dt = t * dy
  return scope.status();
}
AF_REGISTER_GRADIENT("L2Loss", L2LossGrad);

Status TopKGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // dx = dvalues added back at the positions the values came from: the flat
  // position of indices[r..., j] is r * cols + indices[r..., j].
  const Output x = op.input(0), indices = op.output(1);
  const Output x_shape = ops::Shape(scope, x);
  const Output n = ops::Size(scope, x);
  const Output cols = ops::Gather(scope, x_shape, ops::Sub(scope, ops::Size(scope, x_shape), 1));
  const Output index_shape = ops::Shape(scope, indices);
  const Output outer = ops::Slice(scope, index_shape, {0}, ops::Reshape(scope, ops::Sub(scope, ops::Size(scope, index_shape), 1), {1}));
  const Output row_starts = ops::Reshape(scope, ops::Range(scope, 0, n, ops::Maximum(scope, cols, 1)),
                                         ops::Concat(scope, {outer, ops::Const(scope, {1})}, 0));
  const Output positions = ops::Reshape(scope, ops::Add(scope, indices, row_starts), {-1});
  const Output summed = ops::UnsortedSegmentSum(scope, ops::Reshape(scope, grad_inputs[0], {-1}), positions, n);
  grad_outputs->push_back(ops::Reshape(scope, summed, x_shape));
  grad_outputs->push_back(Output());  // k
  return scope.status();
}
AF_REGISTER_GRADIENT("TopKV2", TopKGrad);

AF_REGISTER_NO_GRADIENT("ShapeN");
AF_REGISTER_NO_GRADIENT("OneHot");
AF_REGISTER_NO_GRADIENT("All");
AF_REGISTER_NO_GRADIENT("Any");
AF_REGISTER_NO_GRADIENT("Where");
AF_REGISTER_NO_GRADIENT("Unique");
AF_REGISTER_NO_GRADIENT("InTopKV2");
AF_REGISTER_NO_GRADIENT("ScalarSummary");
AF_REGISTER_NO_GRADIENT("HistogramSummary");
AF_REGISTER_NO_GRADIENT("MergeSummary");
AF_REGISTER_NO_GRADIENT("TensorSummaryV2");
AF_REGISTER_NO_GRADIENT("StringJoin");
AF_REGISTER_NO_GRADIENT("AsString");
AF_REGISTER_NO_GRADIENT("ShardedFilename");
AF_REGISTER_NO_GRADIENT("ShardedFilespec");

}  // namespace
}  // namespace actorflow
