// AddN: the element-wise sum of N tensors of one shape (no broadcasting), as
// symbolic gradients sum the gradients a tensor receives from its consumers.
// Integer sums wrap in two's complement.
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status AddNShape(InferenceContext* c) {
  PartialTensorShape merged = c->input(0);
  for (int i = 1; i < c->num_inputs(); ++i) {
    PartialTensorShape next;
    if (!MergeShapes(merged, c->input(i), &next))
      return c->Error("Inputs must have the same shape: inputs[0] ", c->input(0).DebugString(), " vs. inputs[", i,
                      "] ", c->input(i).DebugString());
    merged = next;
  }
  c->set_output(0, merged);
  return Status::OK();
}

AF_REGISTER_OP("AddN")
    .Input("inputs: N * T")
    .Output("sum: T")
    .Attr("N: int >= 1")
    .Attr("T: {float, double, int32, int64}")
    .SetIsCommutative()
    .SetShapeFn(AddNShape)
    .Doc("Adds all inputs element-wise; they must have the same shape.");

class AddNOp : public OpKernel {
 public:
  explicit AddNOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < n; ++i) {
      AF_REQUIRES(ctx, ctx->input(i).shape() == first.shape(),
                  errors::InvalidArgument("Inputs to AddN must have the same shape: inputs[0] ",
                                          first.shape().DebugString(), " vs. inputs[", i, "] ",
                                          ctx->input(i).shape().DebugString()));
    }
    if (n == 1) {
      ctx->set_output(0, first);
      return;
    }
    Tensor* out;
    // Only input 0 may share the output's buffer: it is read first, in place.
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, first.shape(), &out));
    AF_SWITCH_REAL(first.dtype(), ctx->SetStatus(detail::Unsupported(*this, first.dtype())), Run<T>(ctx, out));
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx, Tensor* out) {
    const int n = ctx->num_inputs();
    using E = WrapT<T>;  // signed integers add in their unsigned type: overflow wraps
    E* po = AsWrapping(out->data<T>());
    using In = Eigen::Map<const ArrayX<E>>;
    auto in = [ctx](int i) { return AsWrapping(ctx->input(i).data<T>()); };
    ctx->device()->compute_pool()->For(out->NumElements(), detail::kCwiseCost * n, [&](int64_t s, int64_t e) {
      Eigen::Map<ArrayX<E>> o(po + s, e - s);
      o = In(in(0) + s, e - s) + In(in(1) + s, e - s);
      for (int i = 2; i < n; ++i) o += In(in(i) + s, e - s);
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("AddN").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), AddNOp);

}  // namespace
}  // namespace actorflow
