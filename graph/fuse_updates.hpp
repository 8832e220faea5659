// Optimizer-update fusion: the Apply* nodes of one optimizer on one device
// become one node, so the device runs them as one kernel (a GPU: one
// multi-tensor launch, PyTorch's foreach/fused optimizers; ops/state/fused_apply_ops.cpp).
//
// The pass runs on a placed graph (graph/preparation.hpp). Nodes fuse when
// they have the same op (ApplyGradientDescent, ApplyMomentum, ApplyAdam,
// ApplyAdagrad, ApplyRMSProp), assigned device, attrs (T, use_locking,
// use_nesterov, update_slots) and the same scalar arguments (each learning
// rate, momentum, beta... the same tensor, src:port), and none depends on
// another's output (fusing them would make a cycle). Each group of two or
// more becomes `_FusedApply<Op>` with N = the group's size: its variable
// inputs and gradients are lists in the members' order, its scalars taken
// once, and output i is member i's output (the variable's reference); every
// consumer (data or control) of a member is rewired to it, and the members'
// control inputs become the fused node's.
//
// Not fused: graphs with control flow (a member in an untaken cond branch
// would take its live siblings down with it), and, by default, nodes on CPU
// devices: there an update of one variable starts as soon as its gradient is
// ready, overlapping the rest of the backward pass, which a fused node would
// wait for. FuseUpdates::kEverywhere fuses on every device type (the CPU
// kernel runs the members' updates side by side, results bit for bit equal).
#pragma once

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

enum class FuseUpdates {
  kOff = 0,
  kOnGpus = 1,      // the default: nodes assigned to a GPU device
  kEverywhere = 2,  // any device type
};

/// Fuses the groups of `g` described above; `num_fused`, when given, gets
/// the number of fused nodes made. InvalidArgument when `g` has a cycle.
Status FuseOptimizerUpdates(Graph* g, FuseUpdates mode, int* num_fused = nullptr);

/// The fused op of an Apply* op ("_FusedApplyAdam" for "ApplyAdam"); "" when it has none.
const char* FusedApplyOp(const std::string& op);

}  // namespace actorflow
