// All and Any: the logical AND and OR of a bool tensor over axes, with
// TensorFlow's op definitions (keep_dims, int32 or int64 axes). Reducing
// nothing gives true for All and false for Any.
#include "actorflow/ops/math/math_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_LOGICAL_REDUCTION_OP_DEF(NAME, DOC)         \
  AF_REGISTER_OP(NAME)                                 \
      .Input("input: bool")                            \
      .Input("reduction_indices: Tidx")                \
      .Output("output: bool")                          \
      .Attr("keep_dims: bool = false")                 \
      .Attr("Tidx: {int32, int64} = DT_INT32")         \
      .SetShapeFn(shape_fns::Reduction)                \
      .Doc(DOC)

AF_LOGICAL_REDUCTION_OP_DEF("All", "The logical AND over the given axes.");
AF_LOGICAL_REDUCTION_OP_DEF("Any", "The logical OR over the given axes.");

template <bool kAll>
class LogicalReductionOp : public OpKernel {
 public:
  explicit LogicalReductionOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<bool> reduced;
    TensorShape out_shape;
    AF_REQUIRES_OK(ctx, ReductionDims(x, ctx->input(1), keep_dims_, &reduced, &out_shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    bool* o = out->data<bool>();
    std::fill(o, o + out->NumElements(), kAll);
    const int rank = x.dims();
    // The output's stride of each input dim (0 for a reduced one).
    std::vector<int64_t> out_stride(rank, 0);
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (reduced[i]) continue;
      out_stride[i] = stride;
      stride *= x.dim_size(i);
    }
    std::vector<int64_t> idx(rank, 0);
    const bool* in = x.data<bool>();
    int64_t off = 0;
    for (int64_t e = 0; e < x.NumElements(); ++e) {
      if (kAll) o[off] = o[off] && in[e];
      else o[off] = o[off] || in[e];
      for (int i = rank - 1; i >= 0; --i) {
        off += out_stride[i];
        if (++idx[i] < x.dim_size(i)) break;
        off -= out_stride[i] * x.dim_size(i);
        idx[i] = 0;
      }
    }
  }

 private:
  bool keep_dims_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("All").Device(DEVICE_CPU), LogicalReductionOp<true>);
AF_REGISTER_KERNEL(KernelDefBuilder("Any").Device(DEVICE_CPU), LogicalReductionOp<false>);

}  // namespace
}  // namespace actorflow
