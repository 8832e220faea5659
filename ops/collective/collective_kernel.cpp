#include "actorflow/ops/collective/collective_kernel.hpp"

#include <memory>
#include <string>
#include <utility>

#include "actorflow/core/cancellation.hpp"
#include "actorflow/ops/collective/collective_reduction.hpp"

namespace actorflow {

CollectiveKernelBase::CollectiveKernelBase(OpKernelConstruction* c, CollectiveKind kind) : AsyncOpKernel(c) {
  p_.kind = kind;
  p_.node = name();
  float timeout = 0;
  c->SetStatus(c->GetAttr("group_size", &p_.group_size));
  c->SetStatus(c->GetAttr("group_key", &p_.group_key));
  c->SetStatus(c->GetAttr("instance_key", &p_.instance_key));
  c->SetStatus(c->GetAttr("timeout_seconds", &timeout));
  if (timeout > 0) p_.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000.0));
  if (c->HasAttr("_bucket_plan")) {  // read and hashed once, here, not per step
    std::string plan;
    c->SetStatus(c->GetAttr("_bucket_plan", &plan));
    if (!plan.empty()) {
      p_.plan_hash = CollectivePlanHash(plan);
      p_.plan = std::make_shared<const std::string>(std::move(plan));
    }
  }
  if (p_.group_size < 0 ||
      (p_.group_size == 0 && kind != CollectiveKind::kReduce && kind != CollectiveKind::kBroadcastFirst))
    c->SetStatus(errors::InvalidArgument(name(), ": group_size must be at least 1 (0, an elastic group, for ",
                                         "CollectiveReduce), got ", p_.group_size));
  if (kind == CollectiveKind::kBroadcastFirst) {
    // dtype and shape: the input's, at run time
  } else if (kind == CollectiveKind::kReduce) {
    std::string merge, final_op;
    c->SetStatus(c->GetAttr("merge_op", &merge));
    c->SetStatus(c->GetAttr("final_op", &final_op));
    c->SetStatus(NewCollectiveReduction(name(), merge, final_op, &p_.reduction));
  } else {
    PartialTensorShape shape;
    c->SetStatus(c->GetAttr("shape", &shape));
    if (!shape.AsTensorShape(&p_.shape))
      c->SetStatus(errors::InvalidArgument(name(), ": shape must be fully defined, got ", shape.DebugString()));
    p_.dtype = c->output_types().empty() ? DT_FLOAT : c->output_types()[0];
  }
}

Status CollectiveKernelBase::CheckInput(const Tensor& input) const {
  if (p_.kind == CollectiveKind::kBroadcastSend && input.shape() != p_.shape)
    return errors::InvalidArgument(name(), ": input of shape ", input.shape().DebugString(),
                                   " but the shape attr says ", p_.shape.DebugString());
  return Status::OK();
}

void CollectiveKernelBase::StartOnHost(OpKernelContext* ctx, Tensor input, Tensor output,
                                       std::function<void(const Status&, Tensor)> finish) const {
  CollectiveAccess* exec = ctx->collectives();
  if (exec == nullptr) return finish(errors::FailedPrecondition(name(), ": no collective executor here"), Tensor());
  // A cancelled step ends the collective; the callback may run only while
  // it is registered, so the executor's answer deregisters it first.
  CancellationManager* cm = ctx->cancellation_manager();
  const uint64_t id = exec->NewId();
  CancellationManager::Token token = 0;
  if (cm) {
    token = cm->get_token();
    const bool registered = cm->RegisterCallback(
        token, [exec, id, node = name()] { exec->Cancel(id, errors::Cancelled(node, ": the step was cancelled")); });
    if (!registered) return finish(errors::Cancelled(name(), ": the step was cancelled"), Tensor());
  }
  exec->Start(id, p_, std::move(input), std::move(output),
              [cm, token, finish = std::move(finish)](const Status& s, Tensor result) {
                if (cm) cm->DeregisterCallback(token);
                finish(s, std::move(result));
              });
}

}  // namespace actorflow
