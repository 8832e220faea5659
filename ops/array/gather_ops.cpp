// GatherV2, Gather, GatherNd, ScatterNd, UnsortedSegmentSum and DynamicStitch,
// TensorFlow's ops of these names: gathering slices by index and their
// inverses, summing (ScatterNd, UnsortedSegmentSum) or overwriting
// (DynamicStitch). Every index is checked before anything is written: an
// index out of range is InvalidArgument naming its position and value.
// Slices are moved whole (memcpy, or assignment for strings); the sums run
// on real dtypes.
#include <algorithm>
#include <cstring>
#include <string>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// The indices of an int32 or int64 tensor, widened.
std::vector<int64_t> Indices(const Tensor& t) { return TensorToInt64s(t); }

PartialTensorShape Concatenated(const PartialTensorShape& a, const PartialTensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return PartialTensorShape();
  std::vector<int64_t> d;
  for (int i = 0; i < a.dims(); ++i) d.push_back(a.dim_size(i));
  for (int i = 0; i < b.dims(); ++i) d.push_back(b.dim_size(i));
  return PartialTensorShape(d);
}
PartialTensorShape SubShape(const PartialTensorShape& s, int begin, int end) {
  std::vector<int64_t> d;
  for (int i = begin; i < end; ++i) d.push_back(s.dim_size(i));
  return PartialTensorShape(d);
}

// ---------------------------------------------------------------------------
// GatherV2 and Gather: params[:axis] + indices.shape + params[axis+1:].

Status GatherShape(InferenceContext* c, int axis_input) {
  const PartialTensorShape& params = c->input(0);
  const PartialTensorShape& indices = c->input(1);
  int64_t axis = 0;
  if (axis_input >= 0) {
    const Tensor* a = c->input_tensor(axis_input);
    if (a == nullptr || a->NumElements() != 1 || !IsIndexDtype(a->dtype()) || params.unknown_rank()) {
      c->set_output(0, PartialTensorShape());
      return Status::OK();
    }
    axis = TensorToInt64s(*a)[0];
  }
  if (params.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  if (axis < -params.dims() || axis >= params.dims())
    return c->Error("Expected axis in the range [", -params.dims(), ", ", params.dims(), "), but got ", axis);
  if (axis < 0) axis += params.dims();
  const int ax = static_cast<int>(axis);
  c->set_output(0, Concatenated(Concatenated(SubShape(params, 0, ax), indices), SubShape(params, ax + 1, params.dims())));
  return Status::OK();
}

AF_REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("batch_dims: int = 0")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) { return GatherShape(c, 2); })
    .Doc("Slices of params along axis at indices: params[:axis] + indices.shape + params[axis+1:].");
AF_REGISTER_OP("Gather")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Output("output: Tparams")
    .Attr("validate_indices: bool = true")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) { return GatherShape(c, -1); })
    .Doc("GatherV2 along axis 0.");

class GatherOp : public CopyingKernel {
 public:
  explicit GatherOp(OpKernelConstruction* c) : CopyingKernel(c) {
    if (c->HasAttr("batch_dims")) c->SetStatus(c->GetAttr("batch_dims", &batch_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    AF_REQUIRES(ctx, batch_dims_ == 0,
                errors::Unimplemented("GatherV2 with batch_dims ", batch_dims_, " (node '", name(), "')"));
    int64_t axis = 0;
    if (ctx->num_inputs() > 2) {
      const Tensor& a = ctx->input(2);
      AF_REQUIRES(ctx, a.NumElements() == 1 && IsIndexDtype(a.dtype()),
                  errors::InvalidArgument("axis must be an int32 or int64 scalar, got ", a.shape().DebugString()));
      axis = TensorToInt64s(a)[0];
    }
    AF_REQUIRES(ctx, params.dims() >= 1, errors::InvalidArgument("params must be at least 1 dimensional"));
    AF_REQUIRES(ctx, axis >= -params.dims() && axis < params.dims(),
                errors::InvalidArgument("Expected axis in the range [", -params.dims(), ", ", params.dims(),
                                        "), but got ", axis));
    if (axis < 0) axis += params.dims();
    const int ax = static_cast<int>(axis);
    const int64_t n = params.dim_size(ax);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; ++i) outer *= params.dim_size(i);
    for (int i = ax + 1; i < params.dims(); ++i) inner *= params.dim_size(i);
    const std::vector<int64_t> idx = Indices(indices);
    for (size_t m = 0; m < idx.size(); ++m)
      AF_REQUIRES(ctx, idx[m] >= 0 && idx[m] < n,
                  errors::InvalidArgument("indices[", m, "] = ", idx[m], " is not in [0, ", n, ")"));
    std::vector<int64_t> dims;
    for (int i = 0; i < ax; ++i) dims.push_back(params.dim_size(i));
    for (int i = 0; i < indices.dims(); ++i) dims.push_back(indices.dim_size(i));
    for (int i = ax + 1; i < params.dims(); ++i) dims.push_back(params.dim_size(i));
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t m_count = static_cast<int64_t>(idx.size());
    if (out->NumElements() == 0) return;
    const void* src = params.raw_data();
    void* dst = out->raw_data();
    ctx->device()->compute_pool()->For(outer * m_count, inner * cp_.ElemCost(), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / m_count, m = r % m_count;
        cp_.Copy(cp_.At(dst, r * inner), cp_.At(src, (o * n + idx[m]) * inner), inner);
      }
    });
  }

 private:
  int64_t batch_dims_ = 0;
};
AF_REGISTER_KERNEL(KernelDefBuilder("GatherV2").Device(DEVICE_CPU), GatherOp);
AF_REGISTER_KERNEL(KernelDefBuilder("Gather").Device(DEVICE_CPU), GatherOp);

// ---------------------------------------------------------------------------
// GatherNd and ScatterNd: indices [..., K] address slices params[i0, ..., iK-1].

// The flat offsets (in slices of dims[K:]) of each index row of `indices`
// ([..., K]) into `dims`, each index checked.
Status SliceOffsets(const Tensor& indices, const std::vector<int64_t>& dims, std::vector<int64_t>* offsets) {
  if (indices.dims() < 1) return errors::InvalidArgument("indices must be at least a vector, got a scalar");
  const int64_t k = indices.dim_size(indices.dims() - 1);
  if (k > static_cast<int64_t>(dims.size()))
    return errors::InvalidArgument("index innermost dimension length must be <= params rank; saw: ", k, " vs. ",
                                   dims.size());
  int64_t rows = 1;
  for (int i = 0; i < indices.dims() - 1; ++i) rows *= indices.dim_size(i);
  offsets->assign(static_cast<size_t>(rows), 0);
  if (k == 0) return Status::OK();  // every row addresses the whole of params
  const std::vector<int64_t> idx = Indices(indices);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = idx[r * k + j];
      if (v < 0 || v >= dims[j]) {
        std::string row;
        for (int64_t t = 0; t < k; ++t) row += (t ? ", " : "") + std::to_string(idx[r * k + t]);
        return errors::InvalidArgument("indices[", r, "] = [", row, "] does not index into param shape ",
                                       PartialTensorShape(dims).DebugString());
      }
      off = off * dims[j] + v;
    }
    (*offsets)[r] = off;
  }
  return Status::OK();
}

Status GatherNdShape(InferenceContext* c) {
  const PartialTensorShape& params = c->input(0);
  const PartialTensorShape& indices = c->input(1);
  if (params.unknown_rank() || indices.unknown_rank() || indices.dims() < 1 ||
      indices.dim_size(indices.dims() - 1) < 0) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  const int64_t k = indices.dim_size(indices.dims() - 1);
  if (k > params.dims())
    return c->Error("index innermost dimension length must be <= params rank; saw: ", k, " vs. ", params.dims());
  c->set_output(0, Concatenated(SubShape(indices, 0, indices.dims() - 1),
                                SubShape(params, static_cast<int>(k), params.dims())));
  return Status::OK();
}

AF_REGISTER_OP("GatherNd")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Output("output: Tparams")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(GatherNdShape)
    .Doc("Slices of params addressed by the rows of indices: indices.shape[:-1] + params.shape[K:].");

class GatherNdOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const std::vector<int64_t> pdims = params.shape().dim_sizes();
    std::vector<int64_t> offsets;
    AF_REQUIRES_OK(ctx, SliceOffsets(indices, pdims, &offsets));
    const int64_t k = indices.dim_size(indices.dims() - 1);
    int64_t slice = 1;
    std::vector<int64_t> dims;
    for (int i = 0; i < indices.dims() - 1; ++i) dims.push_back(indices.dim_size(i));
    for (size_t i = static_cast<size_t>(k); i < pdims.size(); ++i) {
      dims.push_back(pdims[i]);
      slice *= pdims[i];
    }
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    const void* src = params.raw_data();
    void* dst = out->raw_data();
    ctx->device()->compute_pool()->For(static_cast<int64_t>(offsets.size()), slice * cp_.ElemCost(),
                                       [&](int64_t b, int64_t e) {
                                         for (int64_t r = b; r < e; ++r)
                                           cp_.Copy(cp_.At(dst, r * slice), cp_.At(src, offsets[r] * slice), slice);
                                       });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("GatherNd").Device(DEVICE_CPU), GatherNdOp);

Status ScatterNdShape(InferenceContext* c) {
  const Tensor* shape = c->input_tensor(2);
  if (shape == nullptr || !IsIndexDtype(shape->dtype()) || shape->dims() != 1) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  c->set_output(0, PartialTensorShape(TensorToInt64s(*shape)));
  return Status::OK();
}

AF_REGISTER_OP("ScatterNd")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Input("shape: Tindices")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(ScatterNdShape)
    .Doc("Zeros of `shape` with the slices of updates added at the rows of indices (repeated rows add up).");

class ScatterNdOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& updates = ctx->input(1);
    const Tensor& shape_t = ctx->input(2);
    AF_REQUIRES(ctx, shape_t.dims() == 1, errors::InvalidArgument("shape must be a vector"));
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(TensorToInt64s(shape_t), &shape));
    const std::vector<int64_t> dims = shape.dim_sizes();
    std::vector<int64_t> offsets;
    AF_REQUIRES_OK(ctx, SliceOffsets(indices, dims, &offsets));
    const int64_t k = indices.dim_size(indices.dims() - 1);
    int64_t slice = 1;
    for (size_t i = static_cast<size_t>(k); i < dims.size(); ++i) slice *= dims[i];
    AF_REQUIRES(ctx, updates.NumElements() == static_cast<int64_t>(offsets.size()) * slice,
                errors::InvalidArgument("updates has shape ", updates.shape().DebugString(), ", expected ",
                                        offsets.size(), " slices of ", slice, " elements"));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    AF_REQUIRES_OK(ctx, SumRowsInto(updates, offsets, slice, out));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ScatterNd").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), ScatterNdOp);

}  // namespace
}  // namespace actorflow
