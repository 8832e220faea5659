// TensorFlow's StagingArea ops (tf.contrib.staging.StagingArea, the
// prefetch-to-device of input pipelines): Stage puts one element (a tuple of
// tensors) into the area named by container/shared_name on the op's device,
// Unstage takes the oldest out, StageSize counts them, StageClear drops them.
// Placed on a GPU, the area holds device tensors: an input pipeline's batch,
// dequeued on the host, reaches the GPU through the Stage's _Recv (the
// host-to-device copy stream for a large tensor, beside the kernels running)
// one step ahead of the Unstage that feeds the model, so the model's step
// never waits for its copy:
//
//   step i:  Unstage -> model -> train      Stage(batch i+1)
//
// The area is a FIFO queue of this device's container (actors/queue_actor.hpp),
// made on first use with the ops' dtypes and capacity (0: unbounded, as in
// TensorFlow; a Stage into a full area waits for room, an Unstage from an
// empty one for an element: asynchronously, holding no thread; a cancelled
// step ends the wait). Tensors are shared into and out of it, never copied,
// so a GPU's stay in device memory. An area is one device's (TensorFlow's
// per-device resource manager): its ops must all be placed on that device
// and give the same `shared_name`, which is required (TensorFlow's
// StagingArea always sets one; the Python front-end names it too). Not supported:
// memory_limit > 0 (Unimplemented, naming the node), StagePeek and the
// MapStage family.
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/queue/queue_access.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_STAGING_ATTRS                       \
  .Attr("capacity: int >= 0 = 0")              \
      .Attr("memory_limit: int >= 0 = 0")      \
      .Attr("container: string = ''")          \
      .Attr("shared_name: string = ''")        \
      .SetIsStateful()

Status UnknownShapes(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape());
  return Status::OK();
}
Status ScalarOutput(InferenceContext* c) {
  c->set_output(0, PartialTensorShape::Scalar());
  return Status::OK();
}
Status NoOutputs(InferenceContext*) { return Status::OK(); }

AF_REGISTER_OP("Stage").Input("values: dtypes").Attr("dtypes: list(type)") AF_STAGING_ATTRS
    .SetShapeFn(NoOutputs)
    .Doc("Puts values into the staging area (a FIFO of tuples); waits while the area holds capacity elements.");
AF_REGISTER_OP("Unstage").Output("values: dtypes").Attr("dtypes: list(type)") AF_STAGING_ATTRS
    .SetShapeFn(UnknownShapes)
    .Doc("Takes the oldest tuple out of the staging area; waits while it is empty.");
AF_REGISTER_OP("StageSize").Output("size: int32").Attr("dtypes: list(type)") AF_STAGING_ATTRS
    .SetShapeFn(ScalarOutput)
    .Doc("The number of tuples in the staging area.");
AF_REGISTER_OP("StageClear").Attr("dtypes: list(type)") AF_STAGING_ATTRS
    .SetShapeFn(NoOutputs)
    .Doc("Drops every tuple of the staging area.");
#undef AF_STAGING_ATTRS

class StagingOp : public AsyncOpKernel {
 public:
  StagingOp(OpKernelConstruction* c, QueueOp op) : AsyncOpKernel(c), op_(op) {
    std::vector<DataType> types;
    std::string container, shared_name;
    int64_t memory_limit = 0;
    c->SetStatus(c->GetAttr("dtypes", &types));
    c->SetStatus(c->GetAttr("capacity", &spec_.capacity));
    c->SetStatus(c->GetAttr("memory_limit", &memory_limit));
    c->SetStatus(c->GetAttr("container", &container));
    c->SetStatus(c->GetAttr("shared_name", &shared_name));
    if (memory_limit > 0)
      c->SetStatus(errors::Unimplemented(name(), ": a staging area's memory_limit (", memory_limit,
                                         " bytes) is not supported; bound it by capacity"));
    if (types.empty())
      c->SetStatus(errors::InvalidArgument(name(), ": a staging area needs at least one dtype"));
    if (shared_name.empty())
      c->SetStatus(errors::InvalidArgument(name(), ": a staging area needs a shared_name (its Stage and Unstage ",
                                           "meet by it)"));
    device_ = c->device() ? c->device()->name() : "";
    if (spec_.capacity == 0) spec_.capacity = -1;  // TensorFlow's 0: unbounded
    spec_.kind = static_cast<int32_t>(QueueKind::kFifo);
    for (DataType t : types) spec_.component_types.push_back(t);
    // One area per device: the device's name is part of the area's.
    encoded_ = DeclaredResourceHandle(device_, container, device_ + "/" + shared_name, name()).Encode();
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->queues() != nullptr, errors::Unavailable(name(), ": no staging areas on this device"),
                      done);
    if (opened_) return Send(ctx, std::move(done));
    ctx->queues()->Open(encoded_, spec_, [this, ctx, done](const Status& s) {
      if (!s.ok()) {
        ctx->SetStatus(s.WithContext("the staging area of " + name()));
        return done();
      }
      opened_ = true;
      Send(ctx, done);
    });
  }

 private:
  void Send(OpKernelContext* ctx, DoneCallback done) {
    QueueRequest req;
    req.op = static_cast<int32_t>(op_);
    req.step_id = ctx->step_id();
    if (op_ == QueueOp::kEnqueue)
      for (int i = 0; i < ctx->num_inputs(); ++i) req.components.push_back(ctx->input(i));
    ctx->queues()->Request(encoded_, std::move(req), [this, ctx, done](QueueResponse& r) {
      try {  // out of memory for an output: this step fails, the kernel still finishes
        Finish(ctx, r);
      } catch (...) {
        ctx->SetStatus(CurrentExceptionStatus(name()));
      }
      done();
    });
  }

  void Finish(OpKernelContext* ctx, QueueResponse& r) {
    if (!r.status.ok()) {
      ctx->SetStatus(r.status.WithContext(name()));
      return;
    }
    if (op_ == QueueOp::kSize) {
      ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(r.value)));
    } else if (op_ == QueueOp::kDequeue) {
      if (static_cast<int>(r.components.size()) != ctx->num_outputs()) {
        ctx->SetStatus(errors::InvalidArgument(name(), " expects ", ctx->num_outputs(), " tensors, the area holds ",
                                               r.components.size()));
        return;
      }
      for (int i = 0; i < ctx->num_outputs(); ++i) ctx->set_output(i, std::move(r.components[static_cast<size_t>(i)]));
    }
  }

  const QueueOp op_;
  std::string device_;
  QueueSpec spec_;
  std::string encoded_;
  bool opened_ = false;  // on the device actor's thread only
};

template <QueueOp kOp>
class StagingKernel : public StagingOp {
 public:
  explicit StagingKernel(OpKernelConstruction* c) : StagingOp(c, kOp) {}
};
// The same kernels on a GPU: the area holds its tensors where they are
// (float32 in device memory, the rest in host memory, the device's convention).
#define AF_REGISTER_STAGING(op, kind)                                                          \
  AF_REGISTER_KERNEL(KernelDefBuilder(op).Device(DEVICE_CPU), StagingKernel<QueueOp::kind>); \
  AF_REGISTER_KERNEL(KernelDefBuilder(op).Device(DEVICE_GPU), StagingKernel<QueueOp::kind>)
AF_REGISTER_STAGING("Stage", kEnqueue);
AF_REGISTER_STAGING("Unstage", kDequeue);
AF_REGISTER_STAGING("StageSize", kSize);
AF_REGISTER_STAGING("StageClear", kClear);
#undef AF_REGISTER_STAGING

AF_REGISTER_NO_GRADIENT("Stage");
AF_REGISTER_NO_GRADIENT("Unstage");
AF_REGISTER_NO_GRADIENT("StageSize");
AF_REGISTER_NO_GRADIENT("StageClear");

}  // namespace
}  // namespace actorflow
