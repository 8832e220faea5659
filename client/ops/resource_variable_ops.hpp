// Builder functions for resource variables (ops/state/resource_variable_ops.cpp):
//
//   auto w = ops::VarHandleOp(root.WithOpName("w"), DT_FLOAT, TensorShape{2, 2});
//   auto init = ops::AssignVariableOp(root, w, ops::Const(root, {{1.f, 0.f}, {0.f, 1.f}}));
//   auto value = ops::ReadVariableOp(root, w, DT_FLOAT);
//   auto step = ops::ResourceApplyGradientDescent(root, w, 0.1f, grad);
//
// The handle's gradient is the gradient of its reads (AddSymbolicGradients(loss, {w})).
#pragma once

#include <string>

#include "client/builder.hpp"

namespace actorflow {
namespace ops {

/// A handle to the variable (container, shared_name); "" means the default
/// container and the node's own name, so it names the same variable as a
/// VariableV2 of that name.
Output VarHandleOp(const Scope& s, DataType dtype, const PartialTensorShape& shape, const std::string& container = "",
                   const std::string& shared_name = "");
Output ReadVariableOp(const Scope& s, Input resource, DataType dtype);
Output VarIsInitializedOp(const Scope& s, Input resource);
/// Rows of the variable's value at `indices` (axis 0).
Output ResourceGather(const Scope& s, Input resource, Input indices, DataType dtype);
Operation AssignVariableOp(const Scope& s, Input resource, Input value);
Operation AssignAddVariableOp(const Scope& s, Input resource, Input value);
Operation AssignSubVariableOp(const Scope& s, Input resource, Input value);
Operation ResourceApplyGradientDescent(const Scope& s, Input var, Input alpha, Input delta);
Operation ResourceApplyMomentum(const Scope& s, Input var, Input accum, Input lr, Input grad, Input momentum,
                                bool use_nesterov = false);
Operation ResourceApplyAdam(const Scope& s, Input var, Input m, Input v, Input beta1_power, Input beta2_power,
                            Input lr, Input beta1, Input beta2, Input epsilon, Input grad, bool use_nesterov = false);

}  // namespace ops
}  // namespace actorflow
