// TensorFlow's collective ops, with its op names and attrs so graphs written
// by TensorFlow (CollectiveAllReduceStrategy's V1 ops) import:
//   CollectiveReduce(input) -> data       all-reduce over the group
//   CollectiveBcastSend(input) -> data    this task's input to every member
//   CollectiveBcastRecv() -> data         the source's tensor
// Every kernel is asynchronous: it hands the tensor to the process's
// collective executor (ops/collective_access.hpp, run by comm/collective_executor.hpp) and finishes when the
// collective has, so a waiting collective holds no thread. CollectiveReduce
// gives it the arithmetic of its merge_op and final_op: the Add, Mul, Minimum,
// Maximum and Div kernels' own (collective_reduction.hpp). A cancelled step
// (an error elsewhere, a deadline, a closed session) cancels its collectives.
//
// `subdiv_offsets` and `communication_hint` are accepted and not used (the
// ring has one subdivision; the transport picks the path); `wait_for` orders
// nothing here, since instances need no order between them. `timeout_seconds`
// bounds the wait (0: the executor's default, 60 s). The attr `_bucket_plan`,
// set by the all-reduce helper (client/train/all_reduce.hpp), is checked
// across ranks.
#include "actorflow/core/cancellation.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/collective_access.hpp"
#include "actorflow/ops/collective/collective_reduction.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("CollectiveReduce")
    .Input("input: T")
    .Output("data: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("group_size: int")
    .Attr("group_key: int")
    .Attr("instance_key: int")
    .Attr("merge_op: string")
    .Attr("final_op: string")
    .Attr("subdiv_offsets: list(int)")
    .Attr("wait_for: list(int) = []")
    .Attr("communication_hint: string = 'auto'")
    .Attr("timeout_seconds: float = 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("All-reduces input over the group_size tasks of group group_key: merge_op (Add, Mul, Min, Max) of every "
         "member's tensor, then final_op (Id, or Div by group_size). group_size 0 (an actorflow extension): an "
         "elastic group, every task of the job not known to have failed, Div by how many there are.");
AF_REGISTER_OP("CollectiveBcastSend")
    .Input("input: T")
    .Output("data: T")
    .Attr("T: {bool, float, double, int32, int64}")
    .Attr("group_size: int")
    .Attr("group_key: int")
    .Attr("instance_key: int")
    .Attr("shape: shape")
    .Attr("communication_hint: string = 'auto'")
    .Attr("timeout_seconds: float = 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ShapeAttr)
    .Doc("Broadcasts input to the other members of the group; outputs input.");
AF_REGISTER_OP("CollectiveBcastRecv")
    .Output("data: T")
    .Attr("T: {bool, float, double, int32, int64}")
    .Attr("group_size: int")
    .Attr("group_key: int")
    .Attr("instance_key: int")
    .Attr("shape: shape")
    .Attr("communication_hint: string = 'auto'")
    .Attr("timeout_seconds: float = 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ShapeAttr)
    .Doc("Receives the tensor the group's CollectiveBcastSend of the same instance sends.");

AF_REGISTER_OP("CollectiveBcastFirst")
    .Input("input: T")
    .Output("data: T")
    .Attr("T: {bool, float, double, int32, int64}")
    .Attr("group_size: int")
    .Attr("group_key: int")
    .Attr("instance_key: int")
    .Attr("communication_hint: string = 'auto'")
    .Attr("timeout_seconds: float = 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("An actorflow extension: every member gives a tensor of the same dtype and shape and outputs rank 0's "
         "(the first task of the group as formed): a broadcast whose source need not be known when the graph is "
         "built, as in an elastic group (group_size 0: the job's tasks not known to have failed).");

class CollectiveOp : public AsyncOpKernel {
 public:
  CollectiveOp(OpKernelConstruction* c, CollectiveKind kind) : AsyncOpKernel(c) {
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

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CollectiveAccess* exec = ctx->collectives();
    AF_REQUIRES_ASYNC(ctx, exec != nullptr, errors::FailedPrecondition(name(), ": no collective executor here"), done);
    AF_REQUIRES_ASYNC(ctx, ctx->device() == nullptr || ctx->device()->device_type() == DEVICE_CPU,
                      errors::Unimplemented(name(), ": collectives run on CPU devices"), done);
    Tensor input, output;
    if (p_.kind != CollectiveKind::kBroadcastRecv) input = ctx->input(0);
    if (p_.kind == CollectiveKind::kBroadcastSend && input.shape() != p_.shape) {
      ctx->SetStatus(errors::InvalidArgument(name(), ": input of shape ", input.shape().DebugString(),
                                             " but the shape attr says ", p_.shape.DebugString()));
      return done();
    }
    if (p_.kind == CollectiveKind::kReduce && p_.group_size != 1) {
      Tensor* out = nullptr;
      Status s = ctx->allocate_output(0, input.shape(), &out);
      AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
      output = *out;
    }
    // A cancelled step ends the collective; the callback may run only while
    // it is registered, so the executor's answer deregisters it first.
    CancellationManager* cm = ctx->cancellation_manager();
    const uint64_t id = exec->NewId();
    CancellationManager::Token token = 0;
    if (cm) {
      token = cm->get_token();
      const bool registered = cm->RegisterCallback(
          token, [exec, id, node = name()] { exec->Cancel(id, errors::Cancelled(node, ": the step was cancelled")); });
      AF_REQUIRES_ASYNC(ctx, registered, errors::Cancelled(name(), ": the step was cancelled"), done);
    }
    auto finish = [ctx, done, cm, token](const Status& s, Tensor result) {
      if (cm) cm->DeregisterCallback(token);
      if (s.ok()) {
        ctx->set_output(0, std::move(result));
      } else {
        ctx->SetStatus(s);
      }
      done();
    };
    exec->Start(id, p_, std::move(input), std::move(output), std::move(finish));
  }

 private:
  CollectiveParams p_;
};

template <CollectiveKind kKind>
class CollectiveKernel : public CollectiveOp {
 public:
  explicit CollectiveKernel(OpKernelConstruction* c) : CollectiveOp(c, kKind) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveReduce").Device(DEVICE_CPU), CollectiveKernel<CollectiveKind::kReduce>);
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveBcastSend").Device(DEVICE_CPU),
                   CollectiveKernel<CollectiveKind::kBroadcastSend>);
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveBcastRecv").Device(DEVICE_CPU),
                   CollectiveKernel<CollectiveKind::kBroadcastRecv>);
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveBcastFirst").Device(DEVICE_CPU),
                   CollectiveKernel<CollectiveKind::kBroadcastFirst>);

// Not differentiable, as in TensorFlow 1.x: a collective's gradient would be
// another collective, with an instance key of its own that every rank would
// have to agree on. Gradients are reduced after backpropagation instead
// (client/train/all_reduce.hpp).
AF_REGISTER_NO_GRADIENT("CollectiveReduce");
AF_REGISTER_NO_GRADIENT("CollectiveBcastSend");
AF_REGISTER_NO_GRADIENT("CollectiveBcastRecv");
AF_REGISTER_NO_GRADIENT("CollectiveBcastFirst");

}  // namespace
}  // namespace actorflow
