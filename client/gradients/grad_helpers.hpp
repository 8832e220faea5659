// Building blocks of gradient functions (ops/*/*_grad.cpp): constants of an
// op's dtype, full reductions, and the reduction of a broadcasting op's
// gradient back to the shapes of its inputs.
#pragma once

#include <vector>

#include "actorflow/client/ops/cc_ops.hpp"

namespace actorflow {
namespace grad {

/// A scalar Const of `dtype` (float, double, int32 or int64) holding `value`;
/// records an error in the scope for other dtypes.
Output ScalarOf(const Scope& scope, double value, DataType dtype);

/// The value of `o` when its node is a Const (false otherwise).
bool ConstantValue(const Output& o, Tensor* value);

/// The sum of all elements of `x`: a scalar.
Output SumAll(const Scope& scope, const Output& x);

/// For a binary op that broadcasts x = op.input(0) and y = op.input(1): sums
/// gx and gy (gradients of the output's shape; invalid: none) over the axes
/// along which x and y were broadcast, reshapes them to x's and y's shapes and
/// appends them to `grad_outputs`. Skips the reduction when both shapes are
/// statically known and equal.
Status ReduceBroadcastGradients(const Scope& scope, const Operation& op, const Output& gx, const Output& gy,
                                std::vector<Output>* grad_outputs);

/// True when `axes` is a constant naming every axis of `x`, whose rank is known.
bool ReducesAllAxes(const Scope& scope, const Output& x, const Output& axes);

/// The shape a reduction over `axes` with keep_dims gives an input of shape
/// `input_shape`: those dims set to 1 (TensorFlow's math_ops.reduced_shape,
/// built from TensorFlow's own ops).
Output ReducedShape(const Scope& scope, const Output& input_shape, const Output& axes);

/// `grad` (the gradient of a reduction over `axes` of `x`, with or without
/// keep_dims) broadcast back to x's shape: every element of x gets the
/// gradient of the output element it was reduced into.
Output BroadcastReducedGradient(const Scope& scope, const Output& grad, const Output& x, const Output& axes);

}  // namespace grad
}  // namespace actorflow
