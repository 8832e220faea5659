// Stack ops (TensorFlow's V2 stack ops): StackV2 makes a stack and outputs
// its DT_RESOURCE handle; StackPushV2, StackPopV2 and StackCloseV2 work on
// it. A stack is a per-step resource (ops/step_resources.hpp) ordered by
// iteration path (ops/stack/stack.hpp). The kernels are cheap and
// synchronous: they run inline on the device actor's thread, and the placer
// keeps them on the device of the StackV2 whose handle they take
// (graph/placer.cpp). All four are stateful (TensorFlow marks only StackV2):
// two pushes or pops of one stack must never be merged as common
// subexpressions. None has a gradient.
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "actorflow/ops/stack/stack.hpp"
#include "actorflow/ops/step_resources.hpp"

namespace actorflow {
namespace {

Status NoStepResources(const OpKernel& k) {
  return errors::Unavailable("no per-step resources here: ", k.type_string(), " runs only inside a step");
}

// The stack named by input 0 (a handle from a StackV2 of this step).
Status GetStack(OpKernelContext* ctx, std::shared_ptr<Stack>* stack) {
  if (!ctx->step_resources()) return NoStepResources(ctx->op_kernel());
  const Tensor& t = ctx->input(0);
  if (!t.IsInitialized() || t.dtype() != DT_RESOURCE || t.NumElements() != 1)
    return errors::InvalidArgument("input 0 is not a stack handle (a resource scalar), got ",
                                   t.IsInitialized() ? DataTypeString(t.dtype()) : "no value");
  ResourceHandle handle;
  if (!ResourceHandle::Decode(t.data<std::string>()[0], &handle).ok())
    return errors::InvalidArgument("input 0 is not a stack handle: it does not decode");
  return ctx->step_resources()->Lookup(handle, "stack", stack);
}

// ---- StackV2 ---------------------------------------------------------------

AF_REGISTER_OP("StackV2")
    .Input("max_size: int32")
    .Output("handle: resource")
    .Attr("elem_type: type")
    .Attr("stack_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar)
    .Doc("A stack of elem_type tensors, last in first out; max_size < 0: unbounded. Lives as long as the step.");

// Makes a new stack at every run, named "<stack_name or node name>_<n>".
class StackOp : public OpKernel {
 public:
  explicit StackOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("elem_type", &elem_type_));
    c->SetStatus(c->GetAttr("stack_name", &stack_name_));
    if (stack_name_.empty()) stack_name_ = name();
  }

  void Compute(OpKernelContext* ctx) override {
    StepResources* resources = ctx->step_resources();
    AF_REQUIRES(ctx, resources != nullptr, NoStepResources(*this));
    const Tensor& max_size = ctx->input(0);
    AF_REQUIRES(ctx, max_size.dtype() == DT_INT32 && max_size.dims() == 0,
                errors::InvalidArgument("max_size must be an int32 scalar, got ", DataTypeString(max_size.dtype()),
                                        " of shape ", max_size.shape().DebugString()));
    const std::string stack_name = resources->UniqueName(stack_name_);
    auto stack = std::make_shared<Stack>(stack_name, elem_type_, max_size.scalar<int32_t>());
    ResourceHandle handle;
    AF_REQUIRES_OK(ctx, resources->Add(stack_name, elem_type_, std::move(stack), &handle));
    Tensor out(DT_RESOURCE, TensorShape{});
    out.scalar<std::string>() = handle.Encode();
    ctx->set_output(0, std::move(out));
  }

 private:
  DataType elem_type_ = DT_INVALID;
  std::string stack_name_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StackV2").Device(DEVICE_CPU), StackOp);

// ---- StackPushV2 -----------------------------------------------------------

AF_REGISTER_OP("StackPushV2")
    .Input("handle: resource")
    .Input("elem: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("swap_memory: bool = false")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(1));
      return Status::OK();
    })
    .Doc("Pushes elem, ordered by the iteration path it is pushed in, and outputs it. swap_memory is accepted "
         "and ignored (stacks are in host memory).");

class StackPushOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Stack> stack;
    AF_REQUIRES_OK(ctx, GetStack(ctx, &stack));
    const Tensor& elem = ctx->input(1);
    AF_REQUIRES_OK(ctx, stack->Push(ctx->iteration_path(), elem));  // shares the buffer
    ctx->set_output(0, elem);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("StackPushV2").Device(DEVICE_CPU), StackPushOp);

// ---- StackPopV2 ------------------------------------------------------------

AF_REGISTER_OP("StackPopV2")
    .Input("handle: resource")
    .Output("elem: elem_type")
    .Attr("elem_type: type")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Pops the top element: the one pushed in the greatest iteration path, the last pushed of those.");

class StackPopOp : public OpKernel {
 public:
  explicit StackPopOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("elem_type", &elem_type_));
  }

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Stack> stack;
    AF_REQUIRES_OK(ctx, GetStack(ctx, &stack));
    AF_REQUIRES(ctx, stack->elem_type() == elem_type_,
                errors::InvalidArgument("stack '", stack->name(), "' holds ", DataTypeString(stack->elem_type()),
                                        ", but the pop expects ", DataTypeString(elem_type_)));
    Tensor value;
    AF_REQUIRES_OK(ctx, stack->Pop(&value));
    ctx->set_output(0, std::move(value));
  }

 private:
  DataType elem_type_ = DT_INVALID;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StackPopV2").Device(DEVICE_CPU), StackPopOp);

// ---- StackCloseV2 ----------------------------------------------------------

AF_REGISTER_OP("StackCloseV2")
    .Input("handle: resource")
    .SetIsStateful()
    .Doc("Closes the stack and drops its elements; later pushes and pops fail.");

class StackCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Stack> stack;
    AF_REQUIRES_OK(ctx, GetStack(ctx, &stack));
    stack->Close();
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("StackCloseV2").Device(DEVICE_CPU), StackCloseOp);

}  // namespace

AF_REGISTER_NO_GRADIENT("StackV2");
AF_REGISTER_NO_GRADIENT("StackPushV2");
AF_REGISTER_NO_GRADIENT("StackPopV2");
AF_REGISTER_NO_GRADIENT("StackCloseV2");

}  // namespace actorflow
