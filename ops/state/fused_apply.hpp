// The fused optimizer updates: `_FusedApply<Op>` runs N nodes of one Apply*
// op at once (graph/fuse_updates.hpp makes them). Its inputs are the Apply*
// op's in the same order, each per-variable input (the variables, the
// gradient) a list of N, each scalar (learning rate, momentum, betas,
// epsilon) taken once for all; output i is variable i's reference.
//   _FusedApplyGradientDescent(var: Ref(N*T), alpha: T, delta: N*T) -> out: Ref(N*T)
//   _FusedApplyMomentum(var, accum: Ref(N*T), lr: T, grad: N*T, momentum: T)
//   _FusedApplyAdam(var, m, v: Ref(N*T), beta1_power, beta2_power, lr, beta1, beta2, epsilon: T, grad: N*T)
//   _FusedApplyAdagrad(var, accum: Ref(N*T), lr: T, grad: N*T)
//   _FusedApplyRMSProp(var, ms, mom: Ref(N*T), lr, rho, momentum, epsilon: T, grad: N*T)
// Attrs: the Apply* op's (T, use_locking, use_nesterov, update_slots) and N.
// The CPU kernel (ops/state/fused_apply_ops.cpp) applies the N updates side
// by side, each as the Apply* kernel would; the GPU's
// (ops/state/fused_apply_gpu.cu) checks and picks the buffers of all N
// under all their variables' locks and enqueues one multi-tensor launch.
#pragma once

#include <string>

#include "actorflow/net/variable_service.hpp"

namespace actorflow {

struct FusedApplySpec {
  const char* op;        // "ApplyAdam"
  const char* fused_op;  // "_FusedApplyAdam"
  VarUpdateKind kind;
  int num_vars;   // variable inputs (var and its slots), first
  int num_args;   // the inputs after them, in VarUpdateKind's args order
  int grad_arg;   // which of those args is the per-variable gradient
};

/// The spec of `op`, an Apply* op or its fused op; nullptr for any other op.
const FusedApplySpec* FindFusedApplySpec(const std::string& op);

/// Input index of the fused node for input `input` of the Apply* op's member
/// `member` of `n` (for a scalar argument, the same for every member).
int FusedApplyInput(const FusedApplySpec& spec, int n, int input, int member);

/// Whether input `input` of the Apply* op is per variable (a list in the fused op).
bool FusedApplyPerVariable(const FusedApplySpec& spec, int input);

}  // namespace actorflow
