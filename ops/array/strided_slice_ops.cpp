// StridedSlice and StridedSliceGrad, TensorFlow's ops of these names: the
// slice is resolved by ResolveStridedSlice (strided_slice_spec.hpp), then
// elements are walked in the processing shape, contiguous runs (stride 1 in
// the last dimension) moved as blocks. A slice that takes everything shares
// the input's buffer. StridedSliceGrad scatters dy into zeros of `shape`.
#include <algorithm>
#include <cstring>
#include <string>

#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/array/strided_slice_spec.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// The masks of a node (validated with its attrs when it was added).
StridedSliceMasks MasksOf(const proto::NodeDef& node) {
  StridedSliceMasks m;
  (void)GetNodeAttr(node, "begin_mask", &m.begin);
  (void)GetNodeAttr(node, "end_mask", &m.end);
  (void)GetNodeAttr(node, "ellipsis_mask", &m.ellipsis);
  (void)GetNodeAttr(node, "new_axis_mask", &m.new_axis);
  (void)GetNodeAttr(node, "shrink_axis_mask", &m.shrink_axis);
  return m;
}

PartialTensorShape OutputShapeOf(const StridedSliceSpec& spec) { return PartialTensorShape(spec.final_shape); }

// The shape of StridedSlice's output from the input's shape (input 0) and
// the constant begin, end and strides (inputs 1..3) when known.
Status StridedSliceShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const Tensor* b = c->input_tensor(1);
  const Tensor* e = c->input_tensor(2);
  const Tensor* s = c->input_tensor(3);
  if (in.unknown_rank() || (b == nullptr && e == nullptr && s == nullptr)) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  std::vector<int64_t> dims(in.dims());
  for (int i = 0; i < in.dims(); ++i) dims[i] = in.dim_size(i);
  StridedSliceSpec spec;
  Status st = ResolveStridedSlice(dims, b, e, s, MasksOf(c->node()), &spec);
  if (!st.ok()) return c->Error(st.message());
  c->set_output(0, OutputShapeOf(spec));
  return Status::OK();
}

// StridedSliceGrad's output has the shape its `shape` input holds.
Status StridedSliceGradShape(InferenceContext* c) {
  const Tensor* shape = c->input_tensor(0);
  if (shape == nullptr || !IsIndexDtype(shape->dtype()) || shape->dims() != 1) {
    const PartialTensorShape& ss = c->input(0);
    c->set_output(0, ss.unknown_rank() || ss.dim_size(0) < 0 ? PartialTensorShape()
                                                             : PartialTensorShape(std::vector<int64_t>(ss.dim_size(0), -1)));
    return Status::OK();
  }
  c->set_output(0, PartialTensorShape(TensorToInt64s(*shape)));
  return Status::OK();
}

#define AF_STRIDED_SLICE_ATTRS            \
  Attr("T: type")                         \
      .Attr("Index: {int32, int64}")      \
      .Attr("begin_mask: int = 0")        \
      .Attr("end_mask: int = 0")          \
      .Attr("ellipsis_mask: int = 0")     \
      .Attr("new_axis_mask: int = 0")     \
      .Attr("shrink_axis_mask: int = 0")

AF_REGISTER_OP("StridedSlice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Output("output: T")
    .AF_STRIDED_SLICE_ATTRS
    .SetShapeFn(StridedSliceShape)
    .Doc("input[begin:end:strides] per dimension, Python's slicing: bit i of begin_mask/end_mask ignores "
         "begin[i]/end[i], of ellipsis_mask makes entry i an ellipsis, of new_axis_mask inserts a dimension of 1, "
         "of shrink_axis_mask takes the one index begin[i] and drops the dimension.");

AF_REGISTER_OP("StridedSliceGrad")
    .Input("shape: Index")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Input("dy: T")
    .Output("output: T")
    .AF_STRIDED_SLICE_ATTRS
    .SetShapeFn(StridedSliceGradShape)
    .Doc("The gradient of StridedSlice: zeros of `shape` with dy where the slice took its elements.");

// Copies between a tensor of `dims` walked by `spec` (begin and stride per
// dim, processing_shape elements) and a dense buffer of the processing
// shape: gather (dense = walked) or scatter (walked = dense).
void StridedCopy(OpKernelContext* ctx, const ElemCopier& cp, const std::vector<int64_t>& dims,
                 const StridedSliceSpec& spec, const void* strided_src, void* strided_dst, const void* dense_src,
                 void* dense_dst) {
  const int rank = static_cast<int>(dims.size());
  if (rank == 0) {  // a scalar slice of a scalar
    if (dense_dst) cp.Copy(cp.At(dense_dst, 0), cp.At(strided_src, 0), 1);
    else cp.Copy(cp.At(strided_dst, 0), cp.At(dense_src, 0), 1);
    return;
  }
  std::vector<int64_t> in_stride(rank, 1);
  for (int i = rank - 2; i >= 0; --i) in_stride[i] = in_stride[i + 1] * dims[i + 1];
  const std::vector<int64_t>& p = spec.processing_shape;
  const int64_t row = p[rank - 1];
  int64_t rows = 1;
  for (int i = 0; i < rank - 1; ++i) rows *= p[i];
  if (rows == 0 || row == 0) return;
  const int64_t last_stride = spec.stride[rank - 1];
  ctx->device()->compute_pool()->For(rows, row * cp.ElemCost(), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(rank - 1, 0);
    int64_t rem = r0;
    for (int i = rank - 2; i >= 0; --i) {
      idx[i] = rem % p[i];
      rem /= p[i];
    }
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off = spec.begin[rank - 1];
      for (int i = 0; i < rank - 1; ++i) off += (spec.begin[i] + idx[i] * spec.stride[i]) * in_stride[i];
      const int64_t dense_off = r * row;
      if (last_stride == 1) {
        if (dense_dst) cp.Copy(cp.At(dense_dst, dense_off), cp.At(strided_src, off), row);
        else cp.Copy(cp.At(strided_dst, off), cp.At(dense_src, dense_off), row);
      } else {
        for (int64_t k = 0; k < row; ++k, off += last_stride) {
          if (dense_dst) cp.Copy(cp.At(dense_dst, dense_off + k), cp.At(strided_src, off), 1);
          else cp.Copy(cp.At(strided_dst, off), cp.At(dense_src, dense_off + k), 1);
        }
      }
      for (int i = rank - 2; i >= 0; --i) {
        if (++idx[i] < p[i]) break;
        idx[i] = 0;
      }
    }
  });
}

Status ResolveForKernel(OpKernelContext* ctx, const std::vector<int64_t>& dims, const StridedSliceMasks& masks,
                        StridedSliceSpec* spec) {
  return ResolveStridedSlice(dims, &ctx->input(1), &ctx->input(2), &ctx->input(3), masks, spec);
}

class StridedSliceOp : public CopyingKernel {
 public:
  explicit StridedSliceOp(OpKernelConstruction* c) : CopyingKernel(c), masks_(MasksOf(c->def())) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const std::vector<int64_t> dims = input.shape().dim_sizes();
    StridedSliceSpec spec;
    AF_REQUIRES_OK(ctx, ResolveForKernel(ctx, dims, masks_, &spec));
    TensorShape out_shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(spec.final_shape, &out_shape));
    if (spec.is_identity) {  // everything, in order: the input's buffer, reshaped
      Tensor out;
      AF_REQUIRES(ctx, out.CopyFrom(input, out_shape), errors::Internal("StridedSlice could not reshape its input"));
      ctx->set_output(0, out);
      return;
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    StridedCopy(ctx, cp_, dims, spec, input.raw_data(), nullptr, nullptr, out->raw_data());
  }

 private:
  const StridedSliceMasks masks_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StridedSlice").Device(DEVICE_CPU), StridedSliceOp);

class StridedSliceGradOp : public CopyingKernel {
 public:
  explicit StridedSliceGradOp(OpKernelConstruction* c) : CopyingKernel(c), masks_(MasksOf(c->def())) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& shape_t = ctx->input(0);
    const Tensor& dy = ctx->input(4);
    AF_REQUIRES(ctx, shape_t.dims() == 1 && IsIndexDtype(shape_t.dtype()),
                errors::InvalidArgument("shape must be an int32 or int64 vector, got ",
                                        shape_t.shape().DebugString()));
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(TensorToInt64s(shape_t), &shape));
    const std::vector<int64_t> dims = shape.dim_sizes();
    StridedSliceSpec spec;
    AF_REQUIRES_OK(ctx, ResolveForKernel(ctx, dims, masks_, &spec));
    int64_t n = 1;
    for (int64_t d : spec.final_shape) n *= d;
    AF_REQUIRES(ctx, dy.NumElements() == n && static_cast<size_t>(dy.dims()) == spec.final_shape.size(),
                errors::InvalidArgument("shape of dy was ", dy.shape().DebugString(), " instead of the slice's ",
                                        PartialTensorShape(spec.final_shape).DebugString()));
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    if (!cp_.is_string) std::memset(out->raw_data(), 0, out->TotalBytes());  // strings start empty
    if (n == 0) return;
    StridedCopy(ctx, cp_, dims, spec, nullptr, out->raw_data(), dy.raw_data(), nullptr);
  }

 private:
  const StridedSliceMasks masks_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StridedSliceGrad").Device(DEVICE_CPU), StridedSliceGradOp);

}  // namespace
}  // namespace actorflow
