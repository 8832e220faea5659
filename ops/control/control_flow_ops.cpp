// The control-flow primitives of the whitepaper's section 4.4: Switch, Merge,
// Enter, Exit, NextIteration, LoopCond and ControlTrigger (and the Ref
// variants, which pass a variable's handle along).
//
// The kernels only move tensors. What makes them control flow is the executor
// (actors/device/executor.cpp, actors/device/propagation.hpp): an output a kernel leaves
// unset is dead; a node with a dead input is dead and does not run, except
// Merge, which fires on its first live input; Enter moves its input into a
// child frame, Exit back into the parent, NextIteration into the next
// iteration of its frame.
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status BothLikeInput(InferenceContext* c) {
  c->set_output(0, c->input(0));
  c->set_output(1, c->input(0));
  return Status::OK();
}

// Merge: each input's shape where they all agree; a dimension (or the rank)
// they disagree on is unknown.
Status MergeShape(InferenceContext* c) {
  PartialTensorShape out = c->input(0);
  for (int i = 1; i < c->num_inputs() && !out.unknown_rank(); ++i) {
    const PartialTensorShape& in = c->input(i);
    if (in.unknown_rank() || in.dims() != out.dims()) {
      out = PartialTensorShape();
      break;
    }
    std::vector<int64_t> dims = out.dim_sizes();
    for (int d = 0; d < out.dims(); ++d)
      if (in.dim_size(d) != dims[static_cast<size_t>(d)]) dims[static_cast<size_t>(d)] = -1;
    out = PartialTensorShape(dims);
  }
  c->set_output(0, out);
  c->set_output(1, PartialTensorShape::Scalar());
  return Status::OK();
}

Status CheckPredicate(OpKernelContext* ctx, int i) {
  const Tensor& pred = ctx->input(i);
  if (pred.dtype() != DT_BOOL || pred.dims() != 0)
    return errors::InvalidArgument("the predicate must be a bool scalar, got ", DataTypeString(pred.dtype()), " of shape ",
                                   pred.shape().DebugString());
  return Status::OK();
}

// ---- Switch ----------------------------------------------------------------

AF_REGISTER_OP("Switch")
    .Input("data: T")
    .Input("pred: bool")
    .Output("output_false: T")
    .Output("output_true: T")
    .Attr("T: type")
    .SetShapeFn(BothLikeInput)
    .Doc("Forwards data to output_true if pred is true, else to output_false; the other output is dead.");

AF_REGISTER_OP("RefSwitch")
    .Input("data: Ref(T)")
    .Input("pred: bool")
    .Output("output_false: Ref(T)")
    .Output("output_true: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(BothLikeInput)
    .Doc("Switch of a reference (a variable's handle).");

class SwitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES_OK(ctx, CheckPredicate(ctx, 1));
    ctx->set_output(ctx->input(1).scalar<bool>() ? 1 : 0, ctx->input(0));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Switch").Device(DEVICE_CPU), SwitchOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefSwitch").Device(DEVICE_CPU), SwitchOp);

// ---- Merge -----------------------------------------------------------------

AF_REGISTER_OP("Merge")
    .Input("inputs: N * T")
    .Output("output: T")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetShapeFn(MergeShape)
    .Doc("Forwards the first of its inputs to arrive alive, and its index; dead only when all inputs are.");

AF_REGISTER_OP("RefMerge")
    .Input("inputs: Ref(N * T)")
    .Output("output: Ref(T)")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetShapeFn(MergeShape)
    .Doc("Merge of references.");

class MergeOp : public OpKernel {
 public:
  explicit MergeOp(OpKernelConstruction* c) : OpKernel(c) {
    // value_index is one of N scalars, made once: a merge runs every
    // iteration of a loop. They are shared read-only (this kernel keeps a
    // reference, so no consumer takes one over).
    for (size_t i = 0; i < c->input_types().size(); ++i) indices_.push_back(Tensor::Scalar<int32_t>(static_cast<int32_t>(i)));
  }
  void Compute(OpKernelContext* ctx) override {
    // The executor stores only the live input that fired the merge.
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (!ctx->input(i).IsInitialized()) continue;
      ctx->set_output(0, ctx->input(i));
      ctx->set_output(1, indices_[static_cast<size_t>(i)]);
      return;
    }
    ctx->SetStatus(errors::Internal("merge ran without a live input"));
  }

 private:
  std::vector<Tensor> indices_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Merge").Device(DEVICE_CPU), MergeOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefMerge").Device(DEVICE_CPU), MergeOp);

// ---- Enter, Exit, NextIteration, LoopCond ----------------------------------

AF_REGISTER_OP("Enter")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Makes data available in the child frame frame_name: to its first iteration, or to every iteration "
         "when is_constant. At most parallel_iterations iterations of the frame run at once.");

AF_REGISTER_OP("RefEnter")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Enter of a reference.");

AF_REGISTER_OP("Exit")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Makes data available in the parent frame.");

AF_REGISTER_OP("RefExit")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Exit of a reference.");

AF_REGISTER_OP("NextIteration")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Makes data available to the next iteration of its frame.");

AF_REGISTER_OP("RefNextIteration")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("NextIteration of a reference.");

AF_REGISTER_OP("LoopCond")
    .Input("input: bool")
    .Output("output: bool")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Forwards the loop's predicate; marks it as the predicate of a while loop.");

class ForwardOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Enter").Device(DEVICE_CPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefEnter").Device(DEVICE_CPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("Exit").Device(DEVICE_CPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefExit").Device(DEVICE_CPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("NextIteration").Device(DEVICE_CPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefNextIteration").Device(DEVICE_CPU), ForwardOp);

class LoopCondOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES_OK(ctx, CheckPredicate(ctx, 0));
    ctx->set_output(0, ctx->input(0));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("LoopCond").Device(DEVICE_CPU), LoopCondOp);

// ---- ControlTrigger --------------------------------------------------------

AF_REGISTER_OP("ControlTrigger")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Does nothing, and is never dead: a target for control edges that fires even when they come from dead nodes.");

class ControlTriggerOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("ControlTrigger").Device(DEVICE_CPU), ControlTriggerOp);

// ---- On GPUs ---------------------------------------------------------------
// The same kernels: they move tensors without touching their bytes (a float
// tensor stays in device memory), and read only predicates, which are bool
// and so in host memory by the GPU device's convention (devices/cuda). A loop
// whose body runs on a GPU runs its frame's control loop there too.

AF_REGISTER_KERNEL(KernelDefBuilder("Switch").Device(DEVICE_GPU), SwitchOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefSwitch").Device(DEVICE_GPU), SwitchOp);
AF_REGISTER_KERNEL(KernelDefBuilder("Merge").Device(DEVICE_GPU), MergeOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefMerge").Device(DEVICE_GPU), MergeOp);
AF_REGISTER_KERNEL(KernelDefBuilder("Enter").Device(DEVICE_GPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefEnter").Device(DEVICE_GPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("Exit").Device(DEVICE_GPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefExit").Device(DEVICE_GPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("NextIteration").Device(DEVICE_GPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RefNextIteration").Device(DEVICE_GPU), ForwardOp);
AF_REGISTER_KERNEL(KernelDefBuilder("LoopCond").Device(DEVICE_GPU), LoopCondOp);
AF_REGISTER_KERNEL(KernelDefBuilder("ControlTrigger").Device(DEVICE_GPU), ControlTriggerOp);

// LoopCond and ControlTrigger carry no differentiable value; the gradients
// of the other primitives are in client/gradients/control_flow_grad.cpp.
AF_REGISTER_NO_GRADIENT("LoopCond");
AF_REGISTER_NO_GRADIENT("ControlTrigger");

}  // namespace
}  // namespace actorflow
