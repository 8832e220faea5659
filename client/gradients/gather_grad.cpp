// Gradients of the gathering ops and their inverses (GatherV2, Gather,
// GatherNd, ScatterNd, UnsortedSegmentSum, DynamicStitch), with TensorFlow's
// formulas (python/ops/array_grad.py, math_grad.py, data_flow_grad.py) made
// dense: where TensorFlow returns IndexedSlices, the rows are summed into
// place with UnsortedSegmentSum. Index inputs get no gradient.
#include <cstdint>
#include <vector>

#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace {

// The value of a Const node's scalar int32/int64 output; false when not constant.
bool ConstantScalar(const Output& o, int64_t* value) {
  Tensor t;
  if (!grad::ConstantValue(o, &t)) return false;
  if ((t.dtype() != DT_INT32 && t.dtype() != DT_INT64) || t.NumElements() != 1) return false;
  *value = t.dtype() == DT_INT32 ? t.data<int32_t>()[0] : t.data<int64_t>()[0];
  return true;
}

// A constant index vector of `dtype` (int32 or int64).
Output IndexVector(const Scope& scope, const std::vector<int64_t>& v, DataType dtype) {
  Tensor t(dtype, TensorShape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DT_INT64) t.data<int64_t>()[i] = v[i];
    else t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
  }
  return ops::Const(scope, t);
}

// dparams for params gathered along `axis` at `indices`, from dy
// (params.shape[:axis] + indices.shape + params.shape[axis+1:]): dy's rows
// moved to the front, summed into params' rows by index, moved back.
Status GatherGradient(const Scope& scope, const Output& params, const Output& indices, const Output& axis_input,
                      const Output& dy, std::vector<Output>* grad_outputs) {
  int64_t axis = 0;
  if (axis_input.node() && !ConstantScalar(axis_input, &axis))
    return errors::Unimplemented("the gradient of GatherV2 needs a constant axis; node '",
                                 axis_input.node()->name(), "' is not one");
  const DataType index_type = indices.type();
  const Output params_shape = ops::Shape(scope, params, index_type);
  const Output flat_indices = ops::Reshape(scope, indices, IndexVector(scope, {-1}, index_type));
  if (axis == 0) {
    const Output num_scalar = ops::Reshape(scope, ops::Gather(scope, params_shape, IndexVector(scope, {0}, index_type)),
                                           IndexVector(scope, {}, index_type));
    const Output rows = ops::Concat(scope, {IndexVector(scope, {-1}, index_type),
                                            ops::Slice(scope, params_shape, IndexVector(scope, {1}, index_type),
                                                       IndexVector(scope, {-1}, index_type))},
                                    0);
    grad_outputs->push_back(ops::UnsortedSegmentSum(scope, ops::Reshape(scope, dy, rows), flat_indices, num_scalar));
    return scope.status();
  }
  // The permutations move `axis` to the front and back: [axis, 0..axis-1, axis+1..rank-1] and
  // [1..axis, 0, axis+1..rank-1], built at run time (params' rank need not be known here).
  const Output shape32 = ops::Shape(scope, params);
  const Output rank = ops::Size(scope, shape32);
  const Output a = axis < 0 ? ops::Add(scope, rank, static_cast<int32_t>(axis)) : ops::Const(scope, static_cast<int32_t>(axis));
  const Output a1 = ops::Add(scope, a, 1);
  const Output a_vec = ops::Reshape(scope, a, {1});
  const Output to_front = ops::Concat(scope, {a_vec, ops::Range(scope, 0, a, 1), ops::Range(scope, a1, rank, 1)}, 0);
  const Output back = ops::Concat(scope, {ops::Range(scope, 1, a1, 1), ops::Const(scope, {0}), ops::Range(scope, a1, rank, 1)}, 0);
  const Output a_idx = ops::Cast(scope, a_vec, index_type);
  const Output outer = ops::Slice(scope, params_shape, IndexVector(scope, {0}, index_type), a_idx);
  const Output inner = ops::Slice(scope, params_shape, ops::Add(scope, a_idx, grad::ScalarOf(scope, 1, index_type)),
                                  IndexVector(scope, {-1}, index_type));
  const Output values =
      ops::Reshape(scope, dy, ops::Concat(scope, {outer, IndexVector(scope, {-1}, index_type), inner}, 0));
  const Output num_at_axis = ops::Reshape(scope, ops::Gather(scope, params_shape, a_idx), IndexVector(scope, {}, index_type));
  const Output summed = ops::UnsortedSegmentSum(scope, ops::Transpose(scope, values, to_front), flat_indices, num_at_axis);
  grad_outputs->push_back(ops::Transpose(scope, summed, back));
  return scope.status();
}

Status GatherV2Grad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  AF_RETURN_IF_ERROR(GatherGradient(scope, op.input(0), op.input(1), op.input(2), grad_inputs[0], grad_outputs));
  grad_outputs->push_back(Output());  // indices
  grad_outputs->push_back(Output());  // axis
  return scope.status();
}
AF_REGISTER_GRADIENT("GatherV2", GatherV2Grad);

Status GatherGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  AF_RETURN_IF_ERROR(GatherGradient(scope, op.input(0), op.input(1), Output(), grad_inputs[0], grad_outputs));
  grad_outputs->push_back(Output());  // indices
  return scope.status();
}
AF_REGISTER_GRADIENT("Gather", GatherGrad);

// A resource variable's gathered rows: the handle's gradient is the variable's
// (its value read where the gradient is computed).
Status ResourceGatherGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                          std::vector<Output>* grad_outputs) {
  DataType dtype = DT_INVALID;
  AF_RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "dtype", &dtype));
  const Output params = ops::ReadVariableOp(scope, op.input(0), dtype);
  AF_RETURN_IF_ERROR(GatherGradient(scope, params, op.input(1), Output(), grad_inputs[0], grad_outputs));
  grad_outputs->push_back(Output());  // indices
  return scope.status();
}
AF_REGISTER_GRADIENT("ResourceGather", ResourceGatherGrad);

Status GatherNdGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                    std::vector<Output>* grad_outputs) {
  // dparams = dy's slices added back at the rows of indices
  const Output indices = op.input(1);
  grad_outputs->push_back(
      ops::ScatterNd(scope, indices, grad_inputs[0], ops::Shape(scope, op.input(0), indices.type())));
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("GatherNd", GatherNdGrad);

Status ScatterNdGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                     std::vector<Output>* grad_outputs) {
  grad_outputs->push_back(Output());  // indices
  grad_outputs->push_back(ops::GatherNd(scope, grad_inputs[0], op.input(0)));  // dupdates: dz at the rows
  grad_outputs->push_back(Output());  // shape
  return scope.status();
}
AF_REGISTER_GRADIENT("ScatterNd", ScatterNdGrad);

Status UnsortedSegmentSumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                              std::vector<Output>* grad_outputs) {
  // ddata = dz's row of each id; rows of dropped (negative) ids get 0
  const Output ids = op.input(1), dz = grad_inputs[0];
  const Output gathered = ops::GatherV2(scope, dz, ops::Maximum(scope, ids, grad::ScalarOf(scope, 0, ids.type())), 0);
  // The kept mask, shaped ids.shape + [1] * (rank(dz) - 1), to broadcast over each row.
  const Output ones = ops::Fill(scope, ops::Sub(scope, ops::Shape(scope, ops::Shape(scope, dz)), 1), 1);
  const Output mask_shape = ops::Concat(scope, {ops::Shape(scope, ids), ones}, 0);
  const Output kept = ops::Reshape(
      scope, ops::Cast(scope, ops::GreaterEqual(scope, ids, grad::ScalarOf(scope, 0, ids.type())), dz.type()),
      mask_shape);
  grad_outputs->push_back(ops::Mul(scope, gathered, kept));
  grad_outputs->push_back(Output());
  grad_outputs->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("UnsortedSegmentSum", UnsortedSegmentSumGrad);

Status DynamicStitchGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                         std::vector<Output>* grad_outputs) {
  // ddata[m] = dmerged's rows at indices[m]
  const int n = op.num_inputs() / 2;
  for (int m = 0; m < n; ++m) grad_outputs->push_back(Output());
  for (int m = 0; m < n; ++m) grad_outputs->push_back(ops::GatherV2(scope, grad_inputs[0], op.input(m), 0));
  return scope.status();
}
AF_REGISTER_GRADIENT("DynamicStitch", DynamicStitchGrad);

}  // namespace
}  // namespace actorflow
