// Gradient accumulator ops (TensorFlow's ConditionalAccumulator and the
// Accumulator* ops on its handle): the barrier of synchronous training. The
// declaration outputs a Ref(string) handle, as TensorFlow 1.x's does, so the
// graphs SyncReplicasOptimizer writes import; every op on it takes the handle
// by reference and so runs where the accumulator lives (the placer colocates
// ref edges): only the gradients cross devices and processes. Every kernel is
// asynchronous: one request to the accumulator actor
// (actors/accumulator_actor.hpp) through QueueAccess, finished when answered,
// so a TakeGradient waiting for gradients holds no thread.
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/queue/queue_access.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status ScalarShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape::Scalar());
  return Status::OK();
}

// A take's shape is the accumulator's, which its node does not carry: unknown.
Status UnknownShape(InferenceContext* c) {
  c->set_output(0, PartialTensorShape());
  return Status::OK();
}

AF_REGISTER_OP("ConditionalAccumulator")
    .Output("handle: Ref(string)")
    .Attr("dtype: {float, double}")
    .Attr("shape: shape")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("reduction_type: string = 'MEAN'")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("A gradient accumulator: sums the gradients applied to it and gives their mean (or sum) to a take.");
AF_REGISTER_OP("AccumulatorApplyGradient")
    .Input("handle: Ref(string)")
    .Input("local_step: int64")
    .Input("gradient: dtype")
    .Attr("dtype: {float, double}")
    .SetIsStateful()
    .Doc("Adds a gradient computed at local_step; one older than the accumulator's global step is dropped.");
AF_REGISTER_OP("AccumulatorTakeGradient")
    .Input("handle: Ref(string)")
    .Input("num_required: int32")
    .Output("average: dtype")
    .Attr("dtype: {float, double}")
    .SetIsStateful()
    .SetShapeFn(UnknownShape)
    .Doc("Waits until num_required gradients are in, returns their mean (or sum), resets the accumulator and "
         "increments its global step.");
AF_REGISTER_OP("AccumulatorNumAccumulated")
    .Input("handle: Ref(string)")
    .Output("num_accumulated: int32")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("The number of gradients accumulated since the last take.");
AF_REGISTER_OP("AccumulatorNumDropped")
    .Input("handle: Ref(string)")
    .Output("num_dropped: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("An actorflow op: the number of stale gradients (older than the global step) the accumulator has dropped "
         "since it was made.");
AF_REGISTER_OP("AccumulatorSetGlobalStep")
    .Input("handle: Ref(string)")
    .Input("new_global_step: int64")
    .SetIsStateful()
    .Doc("Sets the accumulator's global step: gradients of older local steps are dropped from then on.");

// Declares an accumulator: opens (creates, or finds and checks) it on the
// first run, then outputs its handle. No shared_name: the kernel's own.
class AccumulatorDeclOp : public AsyncOpKernel {
 public:
  explicit AccumulatorDeclOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    DataType dtype = DT_FLOAT;
    PartialTensorShape shape;
    std::string container, shared_name, reduction;
    c->SetStatus(c->GetAttr("dtype", &dtype));
    c->SetStatus(c->GetAttr("shape", &shape));
    c->SetStatus(c->GetAttr("container", &container));
    c->SetStatus(c->GetAttr("shared_name", &shared_name));
    c->SetStatus(c->GetAttr("reduction_type", &reduction));
    if (reduction != "MEAN" && reduction != "SUM")
      c->SetStatus(errors::InvalidArgument(name(), ": reduction_type must be 'MEAN' or 'SUM', got '", reduction, "'"));
    spec_.kind = static_cast<int32_t>(QueueKind::kAccumulator);
    spec_.component_types = {static_cast<int32_t>(dtype)};
    spec_.shapes = {shape};
    spec_.reduction = reduction == "SUM" ? 1 : 0;
    ResourceHandle h = DeclaredResourceHandle(c->device() ? c->device()->name() : "", container, shared_name, name());
    h.dtype = dtype;
    h.shape = shape;
    encoded_ = h.Encode();
    handle_ = MakeRefTensor(h);  // every run outputs this one (shared, never copied)
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->queues() != nullptr, errors::Unavailable(name(), ": no accumulators on this device"),
                      done);
    if (opened_) {
      ctx->set_output(0, handle_);
      done();
      return;
    }
    ctx->queues()->Open(encoded_, spec_, [this, ctx, done](const Status& s) {
      if (s.ok()) {
        opened_ = true;
        ctx->set_output(0, handle_);
      } else {
        ctx->SetStatus(s);
      }
      done();
    });
  }

 private:
  QueueSpec spec_;
  std::string encoded_;
  Tensor handle_;
  bool opened_ = false;  // on the device actor's thread only
};
AF_REGISTER_KERNEL(KernelDefBuilder("ConditionalAccumulator").Device(DEVICE_CPU), AccumulatorDeclOp);

// One request to the accumulator named by input 0 (a ref handle).
class AccumulatorOpKernel : public AsyncOpKernel {
 public:
  AccumulatorOpKernel(OpKernelConstruction* c, QueueOp op) : AsyncOpKernel(c), op_(op) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->queues() != nullptr, errors::Unavailable(name(), ": no accumulators on this device"),
                      done);
    const std::string* handle = nullptr;
    Status hs = RefTensorHandle(ctx->input(0), &handle);
    AF_REQUIRES_ASYNC(ctx, hs.ok(), errors::InvalidArgument(name(), ": input 0 is not an accumulator handle"), done);
    QueueRequest req;
    req.op = static_cast<int32_t>(op_);
    req.step_id = ctx->step_id();
    if (op_ != QueueOp::kNumAccumulated && op_ != QueueOp::kNumDropped) {
      // Input 1: local_step / num_required / new_global_step, a scalar.
      const Tensor& n = ctx->input(1);
      static const char* kNames[] = {"local_step", "num_required", "", "new_global_step"};
      const char* arg = kNames[static_cast<int>(op_) - static_cast<int>(QueueOp::kApplyGradient)];
      AF_REQUIRES_ASYNC(ctx, n.NumElements() == 1 && n.dims() == 0,
                        errors::InvalidArgument("Argument ", arg, " must be scalar, but had bad shape ",
                                                n.shape().DebugString()),
                        done);
      req.num = n.dtype() == DT_INT32 ? n.scalar<int32_t>() : n.scalar<int64_t>();
    }
    if (op_ == QueueOp::kApplyGradient) req.components.push_back(ctx->input(2));
    ctx->queues()->Request(*handle, std::move(req), [this, ctx, done](QueueResponse& r) {
      try {  // out of memory for an output: this step fails, the kernel still finishes
        Finish(ctx, r);
      } catch (...) {
        ctx->SetStatus(CurrentExceptionStatus(name()));
      }
      done();
    });
  }

 private:
  void Finish(OpKernelContext* ctx, QueueResponse& r) {
    if (!r.status.ok()) return ctx->SetStatus(r.status);
    if (op_ == QueueOp::kTakeGradient) {
      if (r.components.size() != 1 || r.components[0].dtype() != output_type(0))
        return ctx->SetStatus(errors::Internal(name(), ": the accumulator answered a take with something else"));
      ctx->set_output(0, std::move(r.components[0]));
    } else if (op_ == QueueOp::kNumAccumulated) {
      ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(r.value)));
    } else if (op_ == QueueOp::kNumDropped) {
      ctx->set_output(0, Tensor::Scalar<int64_t>(r.value));
    }
  }

  QueueOp op_;
};

template <QueueOp kOp>
class AccumulatorKernel : public AccumulatorOpKernel {
 public:
  explicit AccumulatorKernel(OpKernelConstruction* c) : AccumulatorOpKernel(c, kOp) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("AccumulatorApplyGradient").Device(DEVICE_CPU),
                   AccumulatorKernel<QueueOp::kApplyGradient>);
AF_REGISTER_KERNEL(KernelDefBuilder("AccumulatorTakeGradient").Device(DEVICE_CPU),
                   AccumulatorKernel<QueueOp::kTakeGradient>);
AF_REGISTER_KERNEL(KernelDefBuilder("AccumulatorNumAccumulated").Device(DEVICE_CPU),
                   AccumulatorKernel<QueueOp::kNumAccumulated>);
AF_REGISTER_KERNEL(KernelDefBuilder("AccumulatorNumDropped").Device(DEVICE_CPU),
                   AccumulatorKernel<QueueOp::kNumDropped>);
AF_REGISTER_KERNEL(KernelDefBuilder("AccumulatorSetGlobalStep").Device(DEVICE_CPU),
                   AccumulatorKernel<QueueOp::kSetGlobalStep>);

AF_REGISTER_NO_GRADIENT("ConditionalAccumulator");
AF_REGISTER_NO_GRADIENT("AccumulatorApplyGradient");
AF_REGISTER_NO_GRADIENT("AccumulatorTakeGradient");
AF_REGISTER_NO_GRADIENT("AccumulatorNumAccumulated");
AF_REGISTER_NO_GRADIENT("AccumulatorNumDropped");
AF_REGISTER_NO_GRADIENT("AccumulatorSetGlobalStep");

}  // namespace
}  // namespace actorflow
