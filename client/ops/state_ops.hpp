// Builder functions for state: ref and resource variables, their updates
// (Assign*, the optimizers' Apply* and ResourceApply* ops) and random values. See client/train/variables.hpp for
// variables with initializers, and client/train/optimizers.hpp for training.
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

/// VariableV2: a reference to the variable (container, shared_name); "" means
/// the default container and the node's own name.
Output Variable(const Scope& s, const PartialTensorShape& shape, DataType dtype, const std::string& container = "",
                const std::string& shared_name = "");
Output Assign(const Scope& s, Input ref, Input value, bool validate_shape = true, bool use_locking = true);
Output AssignAdd(const Scope& s, Input ref, Input value, bool use_locking = false);
Output AssignSub(const Scope& s, Input ref, Input value, bool use_locking = false);
Output IsVariableInitialized(const Scope& s, Input ref);
/// Increments the int32/int64 scalar variable `ref` below `limit`; outputs the
/// value before. OutOfRange once the limit is reached.
Output CountUpTo(const Scope& s, Input ref, int64_t limit);

Output ApplyGradientDescent(const Scope& s, Input var, Input alpha, Input delta, bool use_locking = false);
Output ApplyMomentum(const Scope& s, Input var, Input accum, Input lr, Input grad, Input momentum,
                     bool use_nesterov = false, bool use_locking = false);
Output ApplyAdam(const Scope& s, Input var, Input m, Input v, Input beta1_power, Input beta2_power, Input lr,
                 Input beta1, Input beta2, Input epsilon, Input grad, bool use_nesterov = false,
                 bool use_locking = false);
Output ApplyAdagrad(const Scope& s, Input var, Input accum, Input lr, Input grad, bool use_locking = false);
Output ApplyRMSProp(const Scope& s, Input var, Input ms, Input mom, Input lr, Input rho, Input momentum,
                    Input epsilon, Input grad, bool use_locking = false);

// Resource variables (ops/state/resource_variable_ops.cpp):
//   auto w = ops::VarHandleOp(root.WithOpName("w"), DT_FLOAT, TensorShape{2, 2});
//   ops::AssignVariableOp(root, w, init);  auto value = ops::ReadVariableOp(root, w, DT_FLOAT);
// The handle's gradient is the gradient of its reads (AddSymbolicGradients(loss, {w})).
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

/// Random values of `shape` (an int32/int64 vector). `seed` is the op's seed
/// (-1: none); with the scope's graph seed it gives TensorFlow's (seed, seed2).
Output RandomUniform(const Scope& s, Input shape, DataType dtype, int64_t seed = -1);
Output RandomStandardNormal(const Scope& s, Input shape, DataType dtype, int64_t seed = -1);
Output TruncatedNormal(const Scope& s, Input shape, DataType dtype, int64_t seed = -1);
Output RandomUniformInt(const Scope& s, Input shape, Input minval, Input maxval, int64_t seed = -1);
/// `value` with its rows (dimension 0) in a random order, a new one each run.
Output RandomShuffle(const Scope& s, Input value, int64_t seed = -1);

}  // namespace ops
}  // namespace actorflow
