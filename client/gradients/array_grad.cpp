// Gradients of the array ops: the ones that move, copy, select or reshape
// elements send each gradient element back to where its element came from.
// TensorFlow's formulas (tensorflow/cc/gradients/array_grad.cc,
// python/ops/array_grad.py). Shape, axis and index inputs get no gradient.
#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

Status IdentityGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(grad_inputs[0]);  // dx = dy
  return scope.status();
}
AF_REGISTER_GRADIENT("Identity", IdentityGrad);

// SpaceToBatchND and BatchToSpaceND: each is the other's gradient, with the
// same block shape and the paddings as crops (or the crops as paddings).
Status SpaceToBatchNDGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                          std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::BatchToSpaceND(scope, grad_inputs[0], op.input(1), op.input(2)));
  grad_outputs->push_back(Output());
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("SpaceToBatchND", SpaceToBatchNDGrad);
Status BatchToSpaceNDGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                          std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::SpaceToBatchND(scope, grad_inputs[0], op.input(1), op.input(2)));
  grad_outputs->push_back(Output());
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("BatchToSpaceND", BatchToSpaceNDGrad);
AF_REGISTER_GRADIENT("PlaceholderWithDefault", IdentityGrad);
// A resource variable's read: the gradient of the value is the handle's (TensorFlow's _ReadGrad).
AF_REGISTER_GRADIENT("ReadVariableOp", IdentityGrad);
AF_REGISTER_NO_GRADIENT("StopGradient");

// dx = dy in x's shape; the other inputs (a shape, an axis) get none.
Status ReshapeToInputGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                          std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(ops::Reshape(scope, grad_inputs[0], ops::Shape(scope, op.input(0))));
  for (int i = 1; i < op.num_inputs(); ++i) grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Reshape", ReshapeToInputGrad);
AF_REGISTER_GRADIENT("ExpandDims", ReshapeToInputGrad);
AF_REGISTER_GRADIENT("Squeeze", ReshapeToInputGrad);

Status TransposeGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                     std::vector<Output>* grad_outputs) {
  // dx = transpose(dy, inverse(perm))
  grad_outputs->push_back(ops::Transpose(scope, grad_inputs[0], ops::InvertPermutation(scope, op.input(1))));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Transpose", TransposeGrad);

Status ConcatV2Grad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // dx_i = the slice of dy that x_i was copied to
  const int n = op.num_inputs() - 1;
  Output axis = op.input(n);
  if (axis.type() != DT_INT32) axis = ops::Cast(scope, axis, DT_INT32);
  std::vector<Input> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back(ops::Shape(scope, op.input(i)));
  const std::vector<Output> offsets = ops::ConcatOffset(scope, axis, shapes);
  for (int i = 0; i < n && scope.ok(); ++i)
    grad_outputs->push_back(ops::Slice(scope, grad_inputs[0], offsets[i], shapes[i]));
  grad_outputs->resize(op.num_inputs());  // the axis: none
  return scope.status();
}
AF_REGISTER_GRADIENT("ConcatV2", ConcatV2Grad);

Status SplitGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                 std::vector<Output>* grad_outputs) {
  // dvalue = the output gradients concatenated along split_dim
  grad_outputs->push_back(Output());
  if (grad_inputs.size() == 1) {
    grad_outputs->push_back(grad_inputs[0]);
  } else {
    grad_outputs->push_back(
        ops::Concat(scope, std::vector<Input>(grad_inputs.begin(), grad_inputs.end()), op.input(0)));
  }
  return scope.status();
}
AF_REGISTER_GRADIENT("Split", SplitGrad);

int64_t IntAttr(const Operation& op, const char* name) {
  int64_t v = 0;
  (void)GetNodeAttr(op.node()->def(), name, &v);  // validated when the node was added
  return v;
}

Status PackGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // dx_i = dy[..., i, ...] along axis
  *grad_outputs = ops::Unstack(scope, grad_inputs[0], op.num_inputs(), IntAttr(op, "axis"));
  return scope.status();
}
AF_REGISTER_GRADIENT("Pack", PackGrad);

Status UnpackGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  // dvalue = the output gradients stacked along axis
  grad_outputs->push_back(
      ops::Stack(scope, std::vector<Input>(grad_inputs.begin(), grad_inputs.end()), IntAttr(op, "axis")));
  return scope.status();
}
AF_REGISTER_GRADIENT("Unpack", UnpackGrad);

Status SliceGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                 std::vector<Output>* grad_outputs) {
  // dx = dy padded with zeros back to x's shape: begin before, the rest after.
  const Output x = op.input(0), begin = op.input(1);
  const DataType index_type = begin.type();
  const Output x_shape = ops::Shape(scope, x, index_type);
  const Output y_shape = ops::Shape(scope, op.output(0), index_type);
  const Output before = ops::Reshape(scope, begin, {-1, 1});
  const Output after = ops::Reshape(scope, ops::Sub(scope, ops::Sub(scope, x_shape, y_shape), begin), {-1, 1});
  grad_outputs->push_back(ops::Pad(scope, grad_inputs[0], ops::Concat(scope, {before, after}, 1)));
  grad_outputs->push_back(Output());
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Slice", SliceGrad);

ops::StridedSliceAttrs MasksOf(const Operation& op) {
  ops::StridedSliceAttrs a;  // validated when the node was added
  (void)GetNodeAttr(op.node()->def(), "begin_mask", &a.begin_mask);
  (void)GetNodeAttr(op.node()->def(), "end_mask", &a.end_mask);
  (void)GetNodeAttr(op.node()->def(), "ellipsis_mask", &a.ellipsis_mask);
  (void)GetNodeAttr(op.node()->def(), "new_axis_mask", &a.new_axis_mask);
  (void)GetNodeAttr(op.node()->def(), "shrink_axis_mask", &a.shrink_axis_mask);
  return a;
}

Status StridedSliceGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                            std::vector<Output>* grad_outputs) {
  // dx = dy scattered back where the slice took its elements, zeros elsewhere
  const Output begin = op.input(1), end = op.input(2), strides = op.input(3);
  const Output x_shape = ops::Shape(scope, op.input(0), begin.type());
  grad_outputs->push_back(ops::StridedSliceGrad(scope, x_shape, begin, end, strides, grad_inputs[0], MasksOf(op)));
  for (int i = 0; i < 3; ++i) grad_outputs->push_back(Output());  // begin, end, strides: indices
  return scope.status();
}
AF_REGISTER_GRADIENT("StridedSlice", StridedSliceGradient);

Status StridedSliceGradGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                                std::vector<Output>* grad_outputs) {
  // z = scatter(dy): ddy = the same slice of dz
  for (int i = 0; i < 4; ++i) grad_outputs->push_back(Output());  // shape, begin, end, strides: indices
  grad_outputs->push_back(
      ops::StridedSlice(scope, grad_inputs[0], op.input(1), op.input(2), op.input(3), MasksOf(op)));
  return scope.status();
}
AF_REGISTER_GRADIENT("StridedSliceGrad", StridedSliceGradGradient);

Status TileGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // x: [a, b], multiples: [m, n] -> dy: [m*a, n*b] seen as [m, a, n, b], summed over axes 0 and 2.
  const Output x = op.input(0), multiples = op.input(1);
  const Output x_shape = ops::Shape(scope, x, multiples.type());
  const Output split_shape =
      ops::Reshape(scope, ops::Transpose(scope, ops::Stack(scope, {multiples, x_shape}), {1, 0}), {-1});
  const Output axes = ops::Range(scope, 0, ops::Size(scope, split_shape), 2);
  grad_outputs->push_back(ops::Sum(scope, ops::Reshape(scope, grad_inputs[0], split_shape), axes));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Tile", TileGrad);

Status PadGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
               std::vector<Output>* grad_outputs) {
  // dx = dy without the padding: the slice at paddings[:, 0] of x's shape.
  const Output x = op.input(0), paddings = op.input(1);
  const Output before =
      ops::Reshape(scope, ops::Slice(scope, paddings, {0, 0}, ops::Stack(scope, {ops::Rank(scope, x), 1})), {-1});
  grad_outputs->push_back(ops::Slice(scope, grad_inputs[0], before, ops::Shape(scope, x, paddings.type())));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Pad", PadGrad);

Status SelectGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  // dt = dy where condition, de = dy elsewhere
  const Output cond = op.input(0), dy = grad_inputs[0], zeros = ops::ZerosLike(scope, dy);
  grad_outputs->push_back(Output());
  grad_outputs->push_back(ops::Select(scope, cond, dy, zeros));
  grad_outputs->push_back(ops::Select(scope, cond, zeros, dy));
  return scope.status();
}
AF_REGISTER_GRADIENT("Select", SelectGrad);

Status FillGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                std::vector<Output>* grad_outputs) {
  // Every element is the value: dvalue = sum(dy)
  grad_outputs->push_back(Output());
  grad_outputs->push_back(grad::SumAll(scope, grad_inputs[0]));
  return scope.status();
}
AF_REGISTER_GRADIENT("Fill", FillGrad);

// Outputs that depend on their inputs' shapes or values only through
// integers, or not at all.
AF_REGISTER_NO_GRADIENT("Const");
AF_REGISTER_NO_GRADIENT("Placeholder");
AF_REGISTER_NO_GRADIENT("Shape");
AF_REGISTER_NO_GRADIENT("Size");
AF_REGISTER_NO_GRADIENT("Rank");
AF_REGISTER_NO_GRADIENT("ZerosLike");
AF_REGISTER_NO_GRADIENT("OnesLike");
AF_REGISTER_NO_GRADIENT("Range");
AF_REGISTER_NO_GRADIENT("BroadcastGradientArgs");
AF_REGISTER_NO_GRADIENT("ReducedShape");
AF_REGISTER_NO_GRADIENT("InvertPermutation");
AF_REGISTER_NO_GRADIENT("ConcatOffset");
AF_REGISTER_NO_GRADIENT("ListDiff");

}  // namespace
}  // namespace actorflow
