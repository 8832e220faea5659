#include "actorflow/client/gradients/grad_helpers.hpp"

#include <set>

#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace grad {

Output ScalarOf(const Scope& scope, double value, DataType dtype) {
  Tensor t(dtype, TensorShape{});
  bool ok = true;
  AF_SWITCH_REAL(dtype, ok = false, t.data<T>()[0] = static_cast<T>(value));
  if (!ok) {
    scope.UpdateStatus(errors::InvalidArgument("no scalar constant of dtype ", DataTypeString(dtype)));
    return Output();
  }
  return ops::Const(scope, t);
}

Output SumAll(const Scope& scope, const Output& x) {
  return ops::Sum(scope, x, ops::Range(scope, 0, ops::Rank(scope, x), 1));
}

Status ReduceBroadcastGradients(const Scope& scope, const Operation& op, const Output& gx, const Output& gy,
                                std::vector<Output>* grad_outputs) {
  const Output x = op.input(0), y = op.input(1);
  const PartialTensorShape x_shape = scope.InferredShape(x), y_shape = scope.InferredShape(y);
  if (x_shape.IsFullyDefined() && y_shape.IsFullyDefined() && x_shape.dim_sizes() == y_shape.dim_sizes()) {
    grad_outputs->push_back(gx);
    grad_outputs->push_back(gy);
    return scope.status();
  }
  const Output sx = ops::Shape(scope, x), sy = ops::Shape(scope, y);
  const auto axes = ops::BroadcastGradientArgs(scope, sx, sy);
  grad_outputs->push_back(gx.valid() ? ops::Reshape(scope, ops::Sum(scope, gx, axes.r0), sx) : Output());
  grad_outputs->push_back(gy.valid() ? ops::Reshape(scope, ops::Sum(scope, gy, axes.r1), sy) : Output());
  return scope.status();
}

bool ConstantValue(const Output& o, Tensor* value) {
  if (!o.node() || o.node()->type_string() != "Const") return false;
  const auto it = o.node()->def().attr().find("value");
  return it != o.node()->def().attr().end() && TensorFromProto(it->second.tensor(), value).ok();
}

bool ReducesAllAxes(const Scope& scope, const Output& x, const Output& axes) {
  const PartialTensorShape shape = scope.InferredShape(x);
  Tensor value;
  if (shape.unknown_rank() || !ConstantValue(axes, &value)) return false;
  if (value.dtype() != DT_INT32 && value.dtype() != DT_INT64) return false;
  std::set<int64_t> reduced;
  const int64_t rank = shape.dims();
  for (int64_t a : TensorToInt64s(value)) {
    if (a < -rank || a >= rank) return false;
    reduced.insert(a < 0 ? a + rank : a);
  }
  return static_cast<int64_t>(reduced.size()) == rank;
}

Output ReducedShape(const Scope& scope, const Output& input_shape, const Output& axes) {
  // TensorFlow's math_ops.reduced_shape, from standard ops (so that graphs we
  // write load in TensorFlow): the reduced axes, made non-negative, stitched
  // to ones over range(rank) -> input_shape.
  const Output rank = ops::Size(scope, input_shape);
  const Output axes32 = axes.type() == DT_INT32 ? axes : ops::Cast(scope, axes, DT_INT32);
  const Output positive = ops::FloorMod(scope, ops::Add(scope, axes32, rank), rank);
  const Output ones = ops::Fill(scope, ops::Shape(scope, positive), ops::Const(scope, 1));
  const Output shape32 = input_shape.type() == DT_INT32 ? input_shape : ops::Cast(scope, input_shape, DT_INT32);
  const Output stitched =
      ops::DynamicStitch(scope, {ops::Range(scope, 0, rank, 1), positive}, {shape32, ones});
  return input_shape.type() == DT_INT32 ? stitched : ops::Cast(scope, stitched, input_shape.type());
}

Output BroadcastReducedGradient(const Scope& scope, const Output& grad, const Output& x, const Output& axes) {
  if (ReducesAllAxes(scope, x, axes)) {
    // Every axis reduced (a loss's mean, say): the gradient is a scalar, tiled
    // over x's shape, with fewer nodes than the general case below.
    const int rank = scope.InferredShape(x).dims();
    Tensor ones_value(DT_INT32, TensorShape{rank});
    for (int i = 0; i < rank; ++i) ones_value.data<int32_t>()[i] = 1;
    return ops::Tile(scope, ops::Reshape(scope, grad, ops::Const(scope, ones_value)), ops::Shape(scope, x));
  }
  // x: [2, 3], axes: [1] -> kept: [2, 1], multiples: [1, 3]
  const Output x_shape = ops::Shape(scope, x);
  const Output kept = ReducedShape(scope, x_shape, axes);
  // An empty dim of x is kept as 0 where it is not reduced: divide by at least 1.
  const Output multiples = ops::FloorDiv(scope, x_shape, ops::Maximum(scope, kept, 1));
  return ops::Tile(scope, ops::Reshape(scope, grad, kept), multiples);
}

}  // namespace grad
}  // namespace actorflow
