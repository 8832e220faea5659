// Queue ops (TensorFlow's V2 data-flow ops): the four queue declarations,
// which output a DT_RESOURCE handle, and the operations on a handle. Every
// kernel is asynchronous: it sends one request to the queue actor
// (ops/queue/queue_access.hpp) and finishes when it is answered, so a
// blocked enqueue or dequeue holds no thread.
#include <atomic>

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

#define AF_QUEUE_COMMON_ATTRS                   \
  .Output("handle: resource")                   \
      .Attr("shapes: list(shape) >= 0 = []")    \
      .Attr("capacity: int = -1")               \
      .Attr("container: string = ''")           \
      .Attr("shared_name: string = ''")         \
      .SetIsStateful()                          \
      .SetShapeFn(ScalarShape)

AF_REGISTER_OP("FIFOQueueV2").Attr("component_types: list(type) >= 1") AF_QUEUE_COMMON_ATTRS
    .Doc("A queue that produces elements in first-in first-out order.");
AF_REGISTER_OP("PaddingFIFOQueueV2").Attr("component_types: list(type) >= 1") AF_QUEUE_COMMON_ATTRS
    .Doc("A FIFO queue whose dequeue-many pads components of different shapes with zeros.");
AF_REGISTER_OP("PriorityQueueV2").Attr("component_types: list(type) >= 0 = []") AF_QUEUE_COMMON_ATTRS
    .Doc("A queue that produces elements sorted by the int64 priority in their first component, lowest first.");
AF_REGISTER_OP("RandomShuffleQueueV2")
    .Attr("component_types: list(type) >= 1")
    .Attr("min_after_dequeue: int = 0")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0") AF_QUEUE_COMMON_ATTRS
    .Doc("A queue that randomizes the order of elements.");
#undef AF_QUEUE_COMMON_ATTRS

// Declares a queue: opens (creates or finds and checks) it on first run,
// then outputs its handle. A queue with no shared_name is this kernel's own.
class QueueDeclOp : public AsyncOpKernel {
 public:
  QueueDeclOp(OpKernelConstruction* c, QueueKind kind) : AsyncOpKernel(c) {
    std::vector<DataType> types;
    std::vector<PartialTensorShape> shapes;
    std::string container, shared_name;
    c->SetStatus(c->GetAttr("component_types", &types));
    c->SetStatus(c->GetAttr("shapes", &shapes));
    c->SetStatus(c->GetAttr("capacity", &spec_.capacity));
    c->SetStatus(c->GetAttr("container", &container));
    c->SetStatus(c->GetAttr("shared_name", &shared_name));
    if (kind == QueueKind::kRandomShuffle) {
      c->SetStatus(c->GetAttr("min_after_dequeue", &spec_.min_after_dequeue));
      c->SetStatus(c->GetAttr("seed", &spec_.seed));
      c->SetStatus(c->GetAttr("seed2", &spec_.seed2));
    }
    spec_.kind = static_cast<int32_t>(kind);
    if (kind == QueueKind::kPriority) {  // the priority is component 0
      spec_.component_types.push_back(DT_INT64);
      if (!shapes.empty()) spec_.shapes.push_back(PartialTensorShape::Scalar());
    }
    for (DataType t : types) spec_.component_types.push_back(t);
    for (auto& s : shapes) spec_.shapes.push_back(s);
    if (!shapes.empty() && shapes.size() != types.size())
      c->SetStatus(errors::InvalidArgument(name(), ": ", types.size(), " component types but ", shapes.size(),
                                           " shapes"));
    encoded_ = DeclaredResourceHandle(c->device() ? c->device()->name() : "", container, shared_name, name()).Encode();
    handle_ = Tensor(DT_RESOURCE, TensorShape{});  // every run outputs this one (shared, never copied)
    handle_.scalar<std::string>() = encoded_;
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->queues() != nullptr, errors::Unavailable(name(), ": no queues on this device"), done);
    if (opened_) {
      SetHandle(ctx);
      done();
      return;
    }
    ctx->queues()->Open(encoded_, spec_, [this, ctx, done](const Status& s) {
      if (s.ok()) {
        opened_ = true;
        SetHandle(ctx);
      } else {
        ctx->SetStatus(s);
      }
      done();  // nothing above throws
    });
  }

 private:
  void SetHandle(OpKernelContext* ctx) { ctx->set_output(0, handle_); }

  QueueSpec spec_;
  std::string encoded_;
  Tensor handle_;
  bool opened_ = false;  // on the device actor's thread only
};

template <QueueKind kKind>
class QueueDecl : public QueueDeclOp {
 public:
  explicit QueueDecl(OpKernelConstruction* c) : QueueDeclOp(c, kKind) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("FIFOQueueV2").Device(DEVICE_CPU), QueueDecl<QueueKind::kFifo>);
AF_REGISTER_KERNEL(KernelDefBuilder("PaddingFIFOQueueV2").Device(DEVICE_CPU), QueueDecl<QueueKind::kPaddingFifo>);
AF_REGISTER_KERNEL(KernelDefBuilder("PriorityQueueV2").Device(DEVICE_CPU), QueueDecl<QueueKind::kPriority>);
AF_REGISTER_KERNEL(KernelDefBuilder("RandomShuffleQueueV2").Device(DEVICE_CPU), QueueDecl<QueueKind::kRandomShuffle>);

AF_REGISTER_OP("QueueEnqueueV2")
    .Input("handle: resource")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .Doc("Enqueues one element; waits while the queue is full.");
AF_REGISTER_OP("QueueEnqueueManyV2")
    .Input("handle: resource")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .Doc("Enqueues the elements of a batch (dimension 0), each whole and in order; may wait part-way.");
AF_REGISTER_OP("QueueDequeueV2")
    .Input("handle: resource")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .Doc("Dequeues one element; waits while the queue is empty.");
AF_REGISTER_OP("QueueDequeueManyV2")
    .Input("handle: resource")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .Doc("Dequeues n elements as one batch; OutOfRange if the queue closes with fewer.");
AF_REGISTER_OP("QueueDequeueUpToV2")
    .Input("handle: resource")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .Doc("As QueueDequeueManyV2, but once the queue is closed returns what is left (at least one element).");
AF_REGISTER_OP("QueueCloseV2")
    .Input("handle: resource")
    .Attr("cancel_pending_enqueues: bool = false")
    .SetIsStateful()
    .Doc("Closes the queue: later enqueues fail; dequeues drain what is left.");
AF_REGISTER_OP("QueueSizeV2").Input("handle: resource").Output("size: int32").SetIsStateful().SetShapeFn(ScalarShape)
    .Doc("The number of elements in the queue.");
AF_REGISTER_OP("QueueIsClosedV2")
    .Input("handle: resource")
    .Output("is_closed: bool")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("Whether the queue is closed.");

// One request to the queue named by input 0, its answer turned into outputs.
class QueueOpKernel : public AsyncOpKernel {
 public:
  QueueOpKernel(OpKernelConstruction* c, QueueOp op) : AsyncOpKernel(c), op_(op) {
    if (op == QueueOp::kClose) c->SetStatus(c->GetAttr("cancel_pending_enqueues", &cancel_pending_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->queues() != nullptr, errors::Unavailable(name(), ": no queues on this device"), done);
    const Tensor& handle = ctx->input(0);
    AF_REQUIRES_ASYNC(ctx, handle.dtype() == DT_RESOURCE && handle.NumElements() == 1,
                      errors::InvalidArgument(name(), ": input 0 is not a queue handle"), done);
    QueueRequest req;
    req.op = static_cast<int32_t>(op_);
    req.step_id = ctx->step_id();
    req.flag = cancel_pending_;
    if (op_ == QueueOp::kEnqueue || op_ == QueueOp::kEnqueueMany) {
      for (int i = 1; i < ctx->num_inputs(); ++i) req.components.push_back(ctx->input(i));
    } else if (op_ == QueueOp::kDequeueMany || op_ == QueueOp::kDequeueUpTo) {
      const Tensor& n = ctx->input(1);
      AF_REQUIRES_ASYNC(ctx, n.dtype() == DT_INT32 && n.NumElements() == 1,
                        errors::InvalidArgument(name(), ": n must be an int32 scalar"), done);
      req.num = n.scalar<int32_t>();
    }
    ctx->queues()->Request(handle.scalar<std::string>(), std::move(req), [this, ctx, done](QueueResponse& r) {
      try {  // out of memory for an output or a message: this step fails, the kernel still finishes
        Finish(ctx, r);
      } catch (...) {
        ctx->SetStatus(CurrentExceptionStatus(name()));
      }
      done();
    });
  }

 private:
  void Finish(OpKernelContext* ctx, QueueResponse& r) {
    if (!r.status.ok()) {
      ctx->SetStatus(r.status);
      return;
    }
    switch (op_) {
      case QueueOp::kDequeue:
      case QueueOp::kDequeueMany:
      case QueueOp::kDequeueUpTo:
        if (static_cast<int>(r.components.size()) != ctx->num_outputs()) {
          ctx->SetStatus(errors::InvalidArgument(name(), " expects ", ctx->num_outputs(), " components, the queue has ",
                                                 r.components.size()));
          return;
        }
        for (int i = 0; i < ctx->num_outputs(); ++i) {
          if (r.components[static_cast<size_t>(i)].dtype() != output_type(i)) {
            ctx->SetStatus(errors::InvalidArgument(name(), " component ", i, " is ",
                                                   DataTypeString(output_type(i)), " here, ",
                                                   DataTypeString(r.components[static_cast<size_t>(i)].dtype()),
                                                   " in the queue"));
            return;
          }
          ctx->set_output(i, std::move(r.components[static_cast<size_t>(i)]));
        }
        return;
      case QueueOp::kSize:
        ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(r.value)));
        return;
      case QueueOp::kIsClosed:
        ctx->set_output(0, Tensor::Scalar<bool>(r.value != 0));
        return;
      default:
        return;
    }
  }

  QueueOp op_;
  bool cancel_pending_ = false;
};

template <QueueOp kOp>
class QueueKernel : public QueueOpKernel {
 public:
  explicit QueueKernel(OpKernelConstruction* c) : QueueOpKernel(c, kOp) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("QueueEnqueueV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kEnqueue>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueEnqueueManyV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kEnqueueMany>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueDequeueV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kDequeue>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueDequeueManyV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kDequeueMany>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueDequeueUpToV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kDequeueUpTo>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueCloseV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kClose>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueSizeV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kSize>);
AF_REGISTER_KERNEL(KernelDefBuilder("QueueIsClosedV2").Device(DEVICE_CPU), QueueKernel<QueueOp::kIsClosed>);

AF_REGISTER_NO_GRADIENT("FIFOQueueV2");
AF_REGISTER_NO_GRADIENT("PaddingFIFOQueueV2");
AF_REGISTER_NO_GRADIENT("PriorityQueueV2");
AF_REGISTER_NO_GRADIENT("RandomShuffleQueueV2");
AF_REGISTER_NO_GRADIENT("QueueEnqueueV2");
AF_REGISTER_NO_GRADIENT("QueueEnqueueManyV2");
AF_REGISTER_NO_GRADIENT("QueueDequeueV2");
AF_REGISTER_NO_GRADIENT("QueueDequeueManyV2");
AF_REGISTER_NO_GRADIENT("QueueDequeueUpToV2");
AF_REGISTER_NO_GRADIENT("QueueCloseV2");
AF_REGISTER_NO_GRADIENT("QueueSizeV2");
AF_REGISTER_NO_GRADIENT("QueueIsClosedV2");

}  // namespace
}  // namespace actorflow
