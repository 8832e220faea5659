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
#include "actorflow/ops/collective/collective_kernel.hpp"
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

// On a CPU: the tensors are host tensors already.
class CollectiveOp : public CollectiveKernelBase {
 public:
  CollectiveOp(OpKernelConstruction* c, CollectiveKind kind) : CollectiveKernelBase(c, kind) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->device() == nullptr || ctx->device()->device_type() == DEVICE_CPU,
                      errors::Internal(name(), ": the CPU kernel of a collective runs on a CPU device"), done);
    Tensor input, output;
    if (params().kind != CollectiveKind::kBroadcastRecv) input = ctx->input(0);
    Status s = CheckInput(input);
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    if (NeedsOutputBuffer()) {
      Tensor* out = nullptr;
      s = ctx->allocate_output(0, input.shape(), &out);
      AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
      output = *out;
    }
    StartOnHost(ctx, std::move(input), std::move(output), [ctx, done](const Status& s, Tensor result) {
      if (s.ok()) {
        ctx->set_output(0, std::move(result));
      } else {
        ctx->SetStatus(s);
      }
      done();
    });
  }
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
