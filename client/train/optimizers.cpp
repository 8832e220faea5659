#include "actorflow/client/train/optimizers.hpp"

#include <algorithm>
#include <unordered_set>

#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {

namespace {
// The nodes `y` depends on through data edges (its ancestors and itself).
std::unordered_set<const Node*> Ancestors(const Output& y) {
  std::unordered_set<const Node*> seen{y.node()};
  std::vector<const Node*> stack{y.node()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge* e : n->in_edges())
      if (!e->IsControlEdge() && seen.insert(e->src).second) stack.push_back(e->src);
  }
  return seen;
}

Output Number(const Scope& s, double v, DataType dtype) {
  return dtype == DT_DOUBLE ? ops::Const(s, v) : ops::Const(s, static_cast<float>(v));
}
}  // namespace

std::vector<Operation> Optimizer::Finish(const Scope&, const std::vector<Operation>& updates) { return updates; }

Output Optimizer::Hyper(const Scope& s, const std::string& name, double value, DataType dtype) {
  auto& out = hypers_[{name, dtype}];
  if (out.valid()) return out;
  Scope at = s.GraphRoot().NewSubScope(name_).WithOpName(name);
  if (name == "learning_rate" && lr_tensor_.valid())
    out = lr_tensor_.type() == dtype ? ops::Identity(at, lr_tensor_) : ops::Cast(at, lr_tensor_, dtype);
  else
    out = Number(at, value, dtype);
  return out;
}

Variable Optimizer::Slot(const Scope& s, const Variable& var, const std::string& suffix, double initial) {
  // At the graph's root, beside its variable: "layer/w" gets "layer/w/Adam".
  Scope root = s.GraphRoot().WithDevice(var.ref.node()->requested_device());
  Variable slot = NewVariable(root, var.name + "/" + name_ + suffix, var.shape, var.dtype, init::Constant(initial),
                              /*trainable=*/false);
  // A part's slot is the same part of the whole variable's slot ("w/part_0/Adam"
  // saved as its block of "w/Adam"), as TensorFlow's slot_creator does.
  if (var.save_slice.valid() && slot.valid()) {
    SaveSliceInfo info = var.save_slice;
    info.full_name += "/" + name_ + suffix;
    SetSaveSliceInfo(root, &slot, info);
  }
  return slot;
}

std::vector<Optimizer::GradAndVar> Optimizer::ComputeGradients(const Scope& scope, const Output& loss,
                                                                std::vector<Variable> var_list) {
  if (var_list.empty()) var_list = TrainableVariables(scope);
  std::vector<GradAndVar> out;
  if (var_list.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("no variables to optimize"));
    return out;
  }
  if (!loss.valid()) return out;  // the scope holds the error
  // Variables the loss does not depend on get no gradient (and no update),
  // as in TensorFlow; if none is left that is an error.
  const auto ancestors = Ancestors(loss);
  std::vector<Variable> used;
  for (const Variable& v : var_list)
    if (ancestors.count(v.ref.node())) used.push_back(v);
  if (used.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("No gradients provided for any variable: ", loss.name(),
                                               " does not depend on the variables to optimize"));
    return out;
  }
  OutputList xs, grads;
  for (const Variable& v : used) xs.push_back(v.ref);
  Status s = AddSymbolicGradients(scope, {loss}, xs, &grads);
  if (!s.ok()) {
    scope.UpdateStatus(s);
    return out;
  }
  for (const Variable& v : var_list) {
    auto it = std::find_if(used.begin(), used.end(), [&](const Variable& u) { return u.ref.node() == v.ref.node(); });
    out.emplace_back(it == used.end() ? Output() : grads[static_cast<size_t>(it - used.begin())], v);
  }
  return out;
}

Operation Optimizer::ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
                                    const Variable* global_step) {
  // Cached hyperparameter nodes and Adam's powers belong to one graph: start
  // afresh, so the optimizer can be used again on another graph.
  hypers_.clear();
  ClearState();
  const Scope plain = scope.NewSubScope("");  // the caller's op name is for the train op only
  const Scope s = plain.NewSubScope(name_);
  std::vector<Operation> updates;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!grad.valid()) continue;  // no path from the loss to this variable
    Output u = ApplyDense(s.NewSubScope("update_" + var.name), grad, var);
    if (!u.valid()) return Operation();
    updates.push_back(u.op());
  }
  if (updates.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("no gradients for any variable"));
    return Operation();
  }
  std::vector<Operation> deps = Finish(s, updates);
  const Scope train = (scope.has_op_name() ? scope : plain.WithOpName(name_)).WithControlDependencies(deps);
  if (global_step && global_step->valid())
    return ops::AssignAdd(train, global_step->ref, ops::Const(plain, int64_t{1})).op();
  return ops::NoOp(train);
}

Operation Optimizer::Minimize(const Scope& scope, const Output& loss, const Variable* global_step,
                              std::vector<Variable> var_list) {
  auto grads = ComputeGradients(scope.GraphRoot(), loss, std::move(var_list));
  if (!scope.ok()) return Operation();
  return ApplyGradients(scope, grads, global_step);
}

Output GradientDescentOptimizer::ApplyDense(const Scope& s, const Output& grad, const Variable& var) {
  return ops::ApplyGradientDescent(s, var.ref, Hyper(s, "learning_rate", lr_, var.dtype), grad);
}

Output MomentumOptimizer::ApplyDense(const Scope& s, const Output& grad, const Variable& var) {
  Variable accum = Slot(s, var, "", 0.0);
  if (!accum.valid()) return Output();
  return ops::ApplyMomentum(s, var.ref, accum.ref, Hyper(s, "learning_rate", lr_, var.dtype), grad,
                            Hyper(s, "momentum", momentum_, var.dtype), nesterov_);
}

std::pair<Variable, Variable> AdamOptimizer::Powers(const Scope& s, const Variable& first) {
  const DataType dtype = first.dtype;
  auto it = powers_.find(dtype);
  if (it != powers_.end()) return it->second;
  // With the first variable they serve (TensorFlow colocates them so): on its
  // ps task, shared by every worker, rather than one per worker.
  Scope root = s.GraphRoot().WithDevice(first.ref.node()->requested_device());
  Variable b1 = NewVariable(root, "beta1_power", TensorShape{}, dtype, init::Constant(beta1_), false);
  Variable b2 = NewVariable(root, "beta2_power", TensorShape{}, dtype, init::Constant(beta2_), false);
  return powers_[dtype] = {b1, b2};
}

Output AdamOptimizer::ApplyDense(const Scope& s, const Output& grad, const Variable& var) {
  Variable m = Slot(s, var, "", 0.0);
  Variable v = Slot(s, var, "_1", 0.0);
  auto [b1p, b2p] = Powers(s, var);
  if (!m.valid() || !v.valid() || !b1p.valid() || !b2p.valid()) return Output();
  return ops::ApplyAdam(s, var.ref, m.ref, v.ref, b1p.value, b2p.value, Hyper(s, "learning_rate", lr_, var.dtype),
                        Hyper(s, "beta1", beta1_, var.dtype), Hyper(s, "beta2", beta2_, var.dtype),
                        Hyper(s, "epsilon", epsilon_, var.dtype), grad);
}

// After every update: beta1_power *= beta1, beta2_power *= beta2 (reading the
// powers only once the updates that used them are done).
std::vector<Operation> AdamOptimizer::Finish(const Scope& s, const std::vector<Operation>& updates) {
  std::vector<Operation> out = updates;
  Scope after = s.WithControlDependencies(updates);
  for (auto& [dtype, powers] : powers_) {
    auto& [b1p, b2p] = powers;
    Output n1 = ops::Mul(after, ops::Identity(after, b1p.ref), Hyper(s, "beta1", beta1_, dtype));
    Output n2 = ops::Mul(after, ops::Identity(after, b2p.ref), Hyper(s, "beta2", beta2_, dtype));
    out.push_back(ops::Assign(after.WithOpName("update_beta1_power"), b1p.ref, n1).op());
    out.push_back(ops::Assign(after.WithOpName("update_beta2_power"), b2p.ref, n2).op());
  }
  return out;
}

Output AdagradOptimizer::ApplyDense(const Scope& s, const Output& grad, const Variable& var) {
  Variable accum = Slot(s, var, "", initial_);
  if (!accum.valid()) return Output();
  return ops::ApplyAdagrad(s, var.ref, accum.ref, Hyper(s, "learning_rate", lr_, var.dtype), grad);
}

Output RMSPropOptimizer::ApplyDense(const Scope& s, const Output& grad, const Variable& var) {
  Variable ms = Slot(s, var, "", 1.0);  // TensorFlow starts the mean square at 1
  Variable mom = Slot(s, var, "_1", 0.0);
  if (!ms.valid() || !mom.valid()) return Output();
  return ops::ApplyRMSProp(s, var.ref, ms.ref, mom.ref, Hyper(s, "learning_rate", lr_, var.dtype),
                           Hyper(s, "decay", decay_, var.dtype), Hyper(s, "momentum", momentum_, var.dtype),
                           Hyper(s, "epsilon", epsilon_, var.dtype), grad);
}

Output ExponentialDecay(const Scope& scope, double learning_rate, const Variable& global_step, int64_t decay_steps,
                        double decay_rate, bool staircase) {
  Scope s = scope.NewSubScope("ExponentialDecay");
  if (decay_steps <= 0) {
    scope.UpdateStatus(errors::InvalidArgument("ExponentialDecay: decay_steps must be positive, got ", decay_steps));
    return Output();
  }
  Output p = staircase ? ops::Cast(s, ops::FloorDiv(s, global_step.value, decay_steps), DT_FLOAT)
                       : ops::RealDiv(s, ops::Cast(s, global_step.value, DT_FLOAT), static_cast<float>(decay_steps));
  return ops::Mul(s.WithOpName("learning_rate"), static_cast<float>(learning_rate),
                  ops::Pow(s, static_cast<float>(decay_rate), p));
}

}  // namespace actorflow
