// UnsortedSegmentSum and DynamicStitch, TensorFlow's ops of these names:
// rows of data summed into segments (negative segment ids are dropped, as
// TensorFlow does), and rows of several tensors interleaved by index (a later
// index overwrites an earlier one). Ids are checked before anything is
// written.
#include <algorithm>
#include <cstring>
#include <string>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status UnsortedSegmentSumShape(InferenceContext* c) {
  const PartialTensorShape& data = c->input(0);
  const PartialTensorShape& ids = c->input(1);
  const Tensor* num = c->input_tensor(2);
  if (data.unknown_rank() || ids.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  std::vector<int64_t> dims{num != nullptr && num->NumElements() == 1 && IsIndexDtype(num->dtype())
                                ? TensorToInt64s(*num)[0]
                                : -1};
  for (int i = ids.dims(); i < data.dims(); ++i) dims.push_back(data.dim_size(i));
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("UnsortedSegmentSum")
    .Input("data: T")
    .Input("segment_ids: Tindices")
    .Input("num_segments: Tnumsegments")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("Tnumsegments: {int32, int64} = DT_INT32")
    .SetShapeFn(UnsortedSegmentSumShape)
    .Doc("output[i] = sum of data[j...] over j with segment_ids[j...] == i; negative ids are dropped.");

class UnsortedSegmentSumOp : public OpKernel {
 public:
  explicit UnsortedSegmentSumOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids_t = ctx->input(1);
    const Tensor& num_t = ctx->input(2);
    AF_REQUIRES(ctx, num_t.NumElements() == 1 && IsIndexDtype(num_t.dtype()),
                errors::InvalidArgument("num_segments should be a scalar, not shape ", num_t.shape().DebugString()));
    const int64_t num = TensorToInt64s(num_t)[0];
    AF_REQUIRES(ctx, num >= 0, errors::InvalidArgument("num_segments must be non-negative, got ", num));
    bool prefix = ids_t.dims() <= data.dims();
    for (int i = 0; prefix && i < ids_t.dims(); ++i) prefix = ids_t.dim_size(i) == data.dim_size(i);
    AF_REQUIRES(ctx, prefix,
                errors::InvalidArgument("data.shape = ", data.shape().DebugString(),
                                        " does not start with segment_ids.shape = ", ids_t.shape().DebugString()));
    const std::vector<int64_t> ids = TensorToInt64s(ids_t);
    for (size_t i = 0; i < ids.size(); ++i)
      AF_REQUIRES(ctx, ids[i] < num,
                  errors::InvalidArgument("segment_ids[", i, "] = ", ids[i], " is out of range [0, ", num, ")"));
    std::vector<int64_t> dims{num};
    int64_t inner = 1;
    for (int i = ids_t.dims(); i < data.dims(); ++i) {
      dims.push_back(data.dim_size(i));
      inner *= data.dim_size(i);
    }
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    AF_REQUIRES_OK(ctx, SumRowsInto(data, ids, inner, out));  // negative ids are dropped
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("UnsortedSegmentSum").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()),
                   UnsortedSegmentSumOp);

AF_REGISTER_OP("DynamicStitch")
    .Input("indices: N * int32")
    .Input("data: N * T")
    .Output("merged: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {
      // [max index + 1] + data[0].shape[indices[0].rank:]: the first dim is known only from constant indices.
      const int n = c->num_inputs() / 2;
      const PartialTensorShape& i0 = c->input(0);
      const PartialTensorShape& d0 = c->input(n);
      int64_t first = 0;
      for (int i = 0; i < n && first >= 0; ++i) {
        const Tensor* t = c->input_tensor(i);
        if (t == nullptr) first = -1;
        else for (int64_t v : TensorToInt64s(*t)) first = std::max(first, v + 1);
      }
      if (i0.unknown_rank() || d0.unknown_rank()) {
        c->set_output(0, PartialTensorShape());
        return Status::OK();
      }
      std::vector<int64_t> dims{first};
      for (int i = i0.dims(); i < d0.dims(); ++i) dims.push_back(d0.dim_size(i));
      c->set_output(0, PartialTensorShape(dims));
      return Status::OK();
    })
    .Doc("merged[indices[m][i...], ...] = data[m][i..., ...]; a later index overwrites an earlier one.");

class DynamicStitchOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    int64_t first = 0, inner = -1;
    std::vector<int64_t> slice_dims;
    for (int m = 0; m < n; ++m) {
      const Tensor& idx = ctx->input(m);
      const Tensor& data = ctx->input(n + m);
      bool prefix = idx.dims() <= data.dims();
      for (int i = 0; prefix && i < idx.dims(); ++i) prefix = idx.dim_size(i) == data.dim_size(i);
      AF_REQUIRES(ctx, prefix,
                  errors::InvalidArgument("data[", m, "].shape = ", data.shape().DebugString(),
                                          " does not start with indices[", m, "].shape = ", idx.shape().DebugString()));
      const std::vector<int64_t> data_dims = data.shape().dim_sizes();
      const std::vector<int64_t> rest(data_dims.begin() + idx.dims(), data_dims.end());
      if (m == 0) slice_dims = rest;
      AF_REQUIRES(ctx, rest == slice_dims,
                  errors::InvalidArgument("data[", m, "] has slices of shape ", PartialTensorShape(rest).DebugString(),
                                          ", data[0]'s are ", PartialTensorShape(slice_dims).DebugString()));
      for (int32_t v : std::vector<int32_t>(idx.data<int32_t>(), idx.data<int32_t>() + idx.NumElements())) {
        AF_REQUIRES(ctx, v >= 0, errors::InvalidArgument("indices[", m, "] has the negative index ", v));
        first = std::max<int64_t>(first, int64_t{v} + 1);
      }
    }
    inner = 1;
    for (int64_t d : slice_dims) inner *= d;
    std::vector<int64_t> dims{first};
    dims.insert(dims.end(), slice_dims.begin(), slice_dims.end());
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    if (!cp_.is_string) std::memset(out->raw_data(), 0, out->TotalBytes());  // rows no index names are zeros
    for (int m = 0; m < n; ++m) {
      const Tensor& idx = ctx->input(m);
      const void* src = ctx->input(n + m).raw_data();
      for (int64_t i = 0; i < idx.NumElements(); ++i)
        cp_.Copy(cp_.At(out->raw_data(), idx.data<int32_t>()[i] * inner), cp_.At(src, i * inner), inner);
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("DynamicStitch").Device(DEVICE_CPU), DynamicStitchOp);

}  // namespace
}  // namespace actorflow
