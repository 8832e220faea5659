#include "actorflow/client/train/sync_replicas_optimizer.hpp"

#include <utility>

#include "actorflow/client/ops/accumulator_ops.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {

namespace {
std::string DeviceOf(const Output& o) { return o.node() ? o.node()->requested_device() : std::string(); }
}  // namespace

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer* opt, int replicas_to_aggregate, int total_num_replicas,
                                             std::string name)
    : opt_(opt),
      replicas_to_aggregate_(replicas_to_aggregate),
      total_num_replicas_(total_num_replicas < 0 ? replicas_to_aggregate : total_num_replicas),
      name_(std::move(name)) {}

Operation SyncReplicasOptimizer::Minimize(const Scope& scope, const Output& loss, const Variable& global_step,
                                          const std::string& worker_device, std::vector<Variable> var_list) {
  auto grads = opt_->ComputeGradients(scope, loss, std::move(var_list));
  if (!scope.ok()) return Operation();
  return ApplyGradients(scope, grads, global_step, worker_device);
}

Operation SyncReplicasOptimizer::ApplyGradients(const Scope& scope,
                                                const std::vector<Optimizer::GradAndVar>& grads_and_vars,
                                                const Variable& global_step, const std::string& worker_device) {
  if (!scope.ok()) return Operation();
  if (replicas_to_aggregate_ < 1 || total_num_replicas_ < 1) {
    scope.UpdateStatus(errors::InvalidArgument(name_, ": replicas_to_aggregate (", replicas_to_aggregate_,
                                               ") and total_num_replicas (", total_num_replicas_,
                                               ") must be positive"));
    return Operation();
  }
  if (!global_step.valid()) {
    scope.UpdateStatus(errors::InvalidArgument(name_, ": a global step is required"));
    return Operation();
  }
  global_step_ = global_step;
  Scope s = scope.NewSubScope(name_);
  // Where the global step lives: the update, the token queue and the sync op go there.
  Scope at_step = s.WithDevice(DeviceOf(global_step.ref));
  // The replica's own step, a local variable on the replica.
  Scope local = worker_device.empty() ? s : s.WithDevice(worker_device);
  Variable local_step = NewLocalVariable(local, "sync_rep_local_step", {}, global_step.dtype, init::Zeros());
  if (!local_step.valid()) return Operation();
  local_step_init_ = ops::Assign(local.WithOpName("local_step_init"), local_step.ref, global_step.value).op();

  // One accumulator per gradient, on its variable's device.
  std::vector<Operation> applies, set_steps;
  std::vector<Optimizer::GradAndVar> aggregated;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!grad.valid()) continue;
    Scope on_var = s.WithDevice(DeviceOf(var.ref));
    ops::AccumulatorOptions o;
    o.shared_name = var.name + "/grad_accum";
    Output acc = ops::ConditionalAccumulator(on_var.NewSubScope(var.name), grad.type(),
                                             PartialTensorShape(var.shape.dim_sizes()), o);
    applies.push_back(ops::AccumulatorApplyGradient(on_var, acc, local_step.value, grad));
    if (!num_dropped_.valid()) num_dropped_ = ops::AccumulatorNumDropped(on_var.WithOpName("num_dropped"), acc);
    aggregated.emplace_back(ops::AccumulatorTakeGradient(on_var, acc, replicas_to_aggregate_, grad.type()), var);
    set_steps.push_back(ops::AccumulatorSetGlobalStep(on_var.WithOpName(var.name + "/SetGlobalStep"), acc,
                                                      global_step.value));
  }
  if (aggregated.empty()) {
    scope.UpdateStatus(errors::InvalidArgument(name_, ": no gradient to aggregate"));
    return Operation();
  }
  // The chief's update: the wrapped optimizer applies the means and increments the global step.
  Operation update = opt_->ApplyGradients(at_step, aggregated, &global_step);

  // The token queue (the barrier) and a queue for the chief's runner (TensorFlow's dummy_queue).
  ops::QueueOptions tq;
  tq.shapes = {PartialTensorShape::Scalar()};
  tq.shared_name = "sync_token_q";
  token_queue_ = ops::FIFOQueue(at_step.WithOpName("sync_token_q"), {global_step.dtype}, tq);
  ops::QueueOptions dq;
  dq.shapes = {PartialTensorShape::Scalar()};
  dq.capacity = 1;
  dq.shared_name = "dummy_queue";
  Output dummy = ops::FIFOQueue(at_step.WithOpName("dummy_queue"), {DT_INT32}, dq);

  // A replica's step: its gradients in, then a token out, which becomes its local step.
  OutputList token = ops::QueueDequeue(at_step.WithControlDependencies(applies), token_queue_, {global_step.dtype});
  if (token.empty()) return Operation();
  Operation train = ops::Assign(local.WithOpName("train_op"), local_step.ref, token[0]).op();

  // The chief's sync op: after the update, one token per replica, valued the new global step.
  Scope after_update = at_step.WithControlDependencies({update});
  const int tokens_per_step = std::max(total_num_replicas_, replicas_to_aggregate_);
  Output tokens = ops::Fill(after_update, {tokens_per_step}, ReadVariableNow(after_update, global_step));
  Operation sync = ops::QueueEnqueueMany(after_update.WithOpName("sync_op"), token_queue_, {tokens});
  Operation close = ops::QueueClose(at_step.WithOpName("dummy_queue_Close"), dummy);
  Operation cancel = ops::QueueClose(at_step.WithOpName("dummy_queue_Close_1"), dummy, true);
  if (!scope.ok()) return Operation();
  chief_queue_runner_ = QueueRunnerDef{dummy.node()->name(), {sync.node()->name()}, close.node()->name(),
                                       cancel.node()->name()};
  set_steps.push_back(local_step_init_);
  chief_init_ = ops::NoOp(s.WithOpName("chief_init").WithControlDependencies(set_steps));
  return train;
}

Operation SyncReplicasOptimizer::GetInitTokensOp(const Scope& scope, int num_tokens) {
  if (!token_queue_.valid()) {
    scope.UpdateStatus(errors::FailedPrecondition(name_, ": GetInitTokensOp before ApplyGradients"));
    return Operation();
  }
  const int needed = replicas_to_aggregate_ - total_num_replicas_;
  if (num_tokens == -1) num_tokens = replicas_to_aggregate_;
  if (num_tokens < needed) {
    scope.UpdateStatus(errors::InvalidArgument(name_, ": too few tokens (", num_tokens, ") to start; at least ",
                                               needed, " (replicas_to_aggregate - total_num_replicas)"));
    return Operation();
  }
  Scope at_step = scope.NewSubScope(name_).WithDevice(DeviceOf(global_step_.ref));
  if (num_tokens <= 0) return ops::NoOp(at_step.WithOpName("no_init_tokens"));
  Output tokens = ops::Fill(at_step, {num_tokens}, global_step_.value);
  return ops::QueueEnqueueMany(at_step.WithOpName("init_tokens"), token_queue_, {tokens});
}

}  // namespace actorflow
