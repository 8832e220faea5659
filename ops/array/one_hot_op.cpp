// OneHot, TensorFlow's op: indices expanded along a new axis of `depth`
// elements, on_value where the index is, off_value elsewhere; an index out
// of [0, depth) gives a row of off_value.
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status OneHotShape(InferenceContext* c) {
  int64_t axis = -1;
  AF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  const PartialTensorShape& in = c->input(0);
  if (axis < -1) return c->Error("axis must be >= -1, got ", axis);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  if (axis > in.dims()) return c->Error("axis must be in [-1, ", in.dims(), "], got ", axis);
  const Tensor* depth = c->input_tensor(1);
  const int64_t d = depth != nullptr && depth->NumElements() == 1 && depth->dtype() == DT_INT32 ? depth->data<int32_t>()[0] : -1;
  std::vector<int64_t> dims;
  for (int i = 0; i < in.dims(); ++i) dims.push_back(in.dim_size(i));
  dims.insert(dims.begin() + (axis == -1 ? in.dims() : axis), d);
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("OneHot")
    .Input("indices: TI")
    .Input("depth: int32")
    .Input("on_value: T")
    .Input("off_value: T")
    .Output("output: T")
    .Attr("axis: int = -1")
    .Attr("T: type")
    .Attr("TI: {uint8, int32, int64} = DT_INT64")
    .SetShapeFn(OneHotShape)
    .Doc("A one-hot encoding of indices along a new axis of depth elements (-1: last).");

class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(OpKernelConstruction* c) : OpKernel(c) { c->SetStatus(c->GetAttr("axis", &axis_)); }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& depth_t = ctx->input(1);
    const Tensor& on = ctx->input(2);
    const Tensor& off = ctx->input(3);
    AF_REQUIRES(ctx, depth_t.NumElements() == 1 && depth_t.dims() == 0,
                errors::InvalidArgument("depth must be a scalar, but got: ", depth_t.shape().DebugString()));
    AF_REQUIRES(ctx, on.dims() == 0 && off.dims() == 0,
                errors::InvalidArgument("on_value and off_value must be scalars"));
    const int64_t depth = depth_t.data<int32_t>()[0];
    AF_REQUIRES(ctx, depth >= 0, errors::InvalidArgument("depth must be non-negative, got: ", depth));
    const int axis = axis_ == -1 ? indices.dims() : static_cast<int>(axis_);
    AF_REQUIRES(ctx, axis_ >= -1 && axis <= indices.dims(),
                errors::InvalidArgument("Expected axis to be -1 or between [0, ", indices.dims(), "), but got ", axis_));
    std::vector<int64_t> dims = indices.shape().dim_sizes();
    dims.insert(dims.begin() + axis, depth);
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    // indices as [prefix, suffix] around the axis; output [prefix, depth, suffix].
    int64_t prefix = 1, suffix = 1;
    for (int i = 0; i < axis; ++i) prefix *= indices.dim_size(i);
    for (int i = axis; i < indices.dims(); ++i) suffix *= indices.dim_size(i);
    std::vector<int64_t> idx(static_cast<size_t>(indices.NumElements()));
    for (int64_t i = 0; i < indices.NumElements(); ++i) {
      switch (indices.dtype()) {
        case DT_UINT8: idx[i] = indices.data<uint8_t>()[i]; break;
        case DT_INT32: idx[i] = indices.data<int32_t>()[i]; break;
        default: idx[i] = indices.data<int64_t>()[i]; break;
      }
    }
    AF_SWITCH_ALL(out->dtype(), ctx->SetStatus(errors::Unimplemented("OneHot of ", DataTypeString(out->dtype()))),
                  Fill<T>(idx, on.scalar<T>(), off.scalar<T>(), prefix, depth, suffix, out->data<T>()));
  }

 private:
  template <class T>
  static void Fill(const std::vector<int64_t>& idx, const T& on, const T& off, int64_t prefix, int64_t depth,
                   int64_t suffix, T* o) {
    for (int64_t p = 0; p < prefix; ++p)
      for (int64_t d = 0; d < depth; ++d)
        for (int64_t s = 0; s < suffix; ++s) o[(p * depth + d) * suffix + s] = idx[p * suffix + s] == d ? on : off;
  }
  int64_t axis_ = -1;
};
AF_REGISTER_KERNEL(KernelDefBuilder("OneHot").Device(DEVICE_CPU), OneHotOp);

}  // namespace
}  // namespace actorflow
