// ConcatV2, Split, Pack, Unpack: ops that copy blocks of elements (Slice and
// Select: slice_select_ops.cpp).
//
// Every copy is reduced to rows of contiguous elements (an outer/inner
// decomposition around the concatenated, split or sliced dimension) moved with
// memcpy for POD dtypes and by assignment for strings, sharded over the compute
// pool by elements.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// ---------------------------------------------------------------------------
// Helpers.

/// The single int value of a constant index tensor, if there is one.
bool ConstScalarIndex(const Tensor* t, int64_t* v) {
  if (t == nullptr || !IsIndexDtype(t->dtype()) || t->NumElements() != 1) return false;
  *v = TensorToInt64s(*t)[0];
  return true;
}

PartialTensorShape UnknownOfRank(int rank) {
  return rank < 0 ? PartialTensorShape() : PartialTensorShape(std::vector<int64_t>(rank, -1));
}

// ---------------------------------------------------------------------------
// ConcatV2

Status ConcatV2Shape(InferenceContext* c) {
  const int n = c->num_inputs() - 1;
  int rank = -1, rank_from = -1;
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (s.unknown_rank()) continue;
    if (rank < 0) {
      rank = s.dims();
      rank_from = i;
    } else if (s.dims() != rank) {
      return c->Error("ConcatOp : Ranks of all input tensors should match: shape[", rank_from,
                      "] = ", c->input(rank_from).DebugString(), " vs. shape[", i, "] = ", s.DebugString());
    }
  }
  int64_t concat_dim;
  if (rank < 0 || !ConstScalarIndex(c->input_tensor(n), &concat_dim)) {
    c->set_output(0, UnknownOfRank(rank));
    return Status::OK();
  }
  const int64_t axis = concat_dim < 0 ? concat_dim + rank : concat_dim;
  if (axis < 0 || axis >= rank)
    return c->Error("ConcatOp : Expected concatenating dimensions in the range [", -rank, ", ", rank,
                    "), but got ", concat_dim);
  std::vector<int64_t> dims(rank, -1);
  int64_t axis_size = 0;
  std::vector<int> dim_from(rank, -1);
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (s.unknown_rank()) {
      axis_size = -1;
      continue;
    }
    for (int j = 0; j < rank; ++j) {
      const int64_t d = s.dim_size(j);
      if (j == axis) {
        if (axis_size >= 0 && d > std::numeric_limits<int64_t>::max() - axis_size)
          return c->Error("ConcatOp : the sum of dimension ", axis, " of the inputs overflows int64");
        axis_size = (axis_size < 0 || d < 0) ? -1 : axis_size + d;
      } else if (d >= 0) {
        if (dims[j] >= 0 && dims[j] != d)
          return c->Error("ConcatOp : Dimension ", j, " in both shapes must be equal: shape[", dim_from[j],
                          "] = ", c->input(dim_from[j]).DebugString(), " vs. shape[", i, "] = ", s.DebugString());
        if (dims[j] < 0) {
          dims[j] = d;
          dim_from[j] = i;
        }
      }
    }
  }
  dims[axis] = axis_size;
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("ConcatV2")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(ConcatV2Shape)
    .Doc("Concatenates tensors along one dimension.");

class ConcatV2Op : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const Tensor& axis_t = ctx->input(n);
    AF_REQUIRES(ctx, axis_t.dims() == 0,
                errors::InvalidArgument("axis tensor should be a scalar integer, but got shape ",
                                        axis_t.shape().DebugString()));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(axis_t, "axis"));
    const int64_t concat_dim = TensorToInt64s(axis_t)[0];
    const Tensor& first = ctx->input(0);
    const int rank = first.dims();
    const int64_t axis = concat_dim < 0 ? concat_dim + rank : concat_dim;
    AF_REQUIRES(ctx, 0 <= axis && axis < rank,
                errors::InvalidArgument("ConcatOp : Expected concatenating dimensions in the range [", -rank, ", ",
                                        rank, "), but got ", concat_dim));
    AF_REQUIRES_OK(ctx, copier_status_);
    int64_t out_axis = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& in = ctx->input(i);
      AF_REQUIRES(ctx, in.dims() == rank,
                  errors::InvalidArgument("ConcatOp : Ranks of all input tensors should match: shape[0] = ",
                                          first.shape().DebugString(), " vs. shape[", i,
                                          "] = ", in.shape().DebugString()));
      for (int j = 0; j < rank; ++j) {
        if (j == axis) continue;
        AF_REQUIRES(ctx, in.dim_size(j) == first.dim_size(j),
                    errors::InvalidArgument("ConcatOp : Dimension ", j,
                                            " in both shapes must be equal: shape[0] = ", first.shape().DebugString(),
                                            " vs. shape[", i, "] = ", in.shape().DebugString()));
      }
      AF_REQUIRES(ctx, in.dim_size(axis) <= std::numeric_limits<int64_t>::max() - out_axis,
                  errors::InvalidArgument("ConcatOp : the sum of dimension ", axis, " of the inputs overflows int64"));
      out_axis += in.dim_size(axis);
    }
    std::vector<int64_t> dims = first.shape().dim_sizes();
    dims[axis] = out_axis;
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    // The output is not empty, so no product of its dims overflows.
    int64_t outer = 1;
    for (int j = 0; j < axis; ++j) outer *= first.dim_size(j);
    const int64_t out_row = out->NumElements() / outer;
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t len = ctx->input(i).NumElements() / outer;  // elements per outer row of input i
      CopyRows(ctx, cp_, ctx->input(i).raw_data(), len, cp_.At(out->raw_data(), offset), out_row, outer, len);
      offset += len;
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ConcatV2").Device(DEVICE_CPU), ConcatV2Op);

// ---------------------------------------------------------------------------
// Split

Status SplitShape(InferenceContext* c) {
  int64_t num_split = 0;
  AF_RETURN_IF_ERROR(c->GetAttr("num_split", &num_split));
  const PartialTensorShape& in = c->input(1);
  int64_t split_dim;
  if (in.unknown_rank() || !ConstScalarIndex(c->input_tensor(0), &split_dim)) {
    for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, UnknownOfRank(in.dims()));
    return Status::OK();
  }
  const int rank = in.dims();
  const int64_t dim = split_dim < 0 ? split_dim + rank : split_dim;
  if (dim < 0 || dim >= rank)
    return c->Error("-input rank(-", rank, ") <= split_dim < input rank (", rank, "), but got ", split_dim);
  std::vector<int64_t> dims = in.dim_sizes();
  if (dims[dim] >= 0) {
    if (num_split <= 0 || dims[dim] % num_split != 0)
      return c->Error("Number of ways to split should evenly divide the split dimension, but got split_dim ", dim,
                      " (size = ", dims[dim], ") and num_split ", num_split);
    dims[dim] /= num_split;
  }
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("Split")
    .Input("split_dim: int32")
    .Input("value: T")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: type")
    .SetShapeFn(SplitShape)
    .Doc("Splits a tensor into num_split tensors of equal size along one dimension.");

class SplitOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& split_dim_t = ctx->input(0);
    const Tensor& input = ctx->input(1);
    AF_REQUIRES(ctx, split_dim_t.NumElements() == 1,
                errors::InvalidArgument("split_dim must be a scalar but has ", split_dim_t.NumElements(),
                                        " elements"));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(split_dim_t, "split_dim"));
    const int64_t split_dim_orig = TensorToInt64s(split_dim_t)[0];
    const int rank = input.dims();
    const int64_t split_dim = split_dim_orig < 0 ? split_dim_orig + rank : split_dim_orig;
    const int num_split = ctx->num_outputs();
    AF_REQUIRES(ctx, 0 <= split_dim && split_dim < rank,
                errors::InvalidArgument("-input rank(-", rank, ") <= split_dim < input rank (", rank,
                                        "), but got ", split_dim_orig));
    AF_REQUIRES(ctx, num_split > 0,
                errors::InvalidArgument("Number of ways to split should be > 0, but got ", num_split));
    const int64_t dim = input.dim_size(static_cast<int>(split_dim));
    AF_REQUIRES(ctx, dim % num_split == 0,
                errors::InvalidArgument(
                    "Number of ways to split should evenly divide the split dimension, but got split_dim ",
                    split_dim, " (size = ", dim, ") and num_split ", num_split));
    if (num_split == 1) {
      ctx->set_output(0, input);
      return;
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    TensorShape shape = input.shape();
    shape.set_dim(static_cast<int>(split_dim), dim / num_split);
    // An empty input has nothing to copy, and products of its dims may overflow.
    const bool empty = input.NumElements() == 0;
    int64_t outer = 1, inner = 1;
    for (int j = 0; !empty && j < split_dim; ++j) outer *= input.dim_size(j);
    for (int j = static_cast<int>(split_dim) + 1; !empty && j < rank; ++j) inner *= input.dim_size(j);
    const int64_t len = dim / num_split * inner;  // elements per row of each output
    const int64_t in_row = dim * inner;
    for (int i = 0; i < num_split; ++i) {
      Tensor* out;
      AF_REQUIRES_OK(ctx, ctx->allocate_output(i, shape, &out));
      if (out->NumElements() == 0) continue;
      CopyRows(ctx, cp_, cp_.At(input.raw_data(), i * len), in_row, out->raw_data(), len, outer, len);
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Split").Device(DEVICE_CPU), SplitOp);

// ---------------------------------------------------------------------------
// Pack

Status PackShape(InferenceContext* c) {
  int64_t axis = 0;
  AF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  PartialTensorShape merged = c->input(0);
  for (int i = 1; i < c->num_inputs(); ++i) {
    PartialTensorShape next;
    if (!MergeShapes(merged, c->input(i), &next))
      return c->Error("Shapes of all inputs must match: values[0].shape = ", c->input(0).DebugString(),
                      " != values[", i, "].shape = ", c->input(i).DebugString());
    merged = next;
  }
  if (merged.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  const int expanded = merged.dims() + 1;
  const int64_t a = axis < 0 ? axis + expanded : axis;
  if (a < 0 || a >= expanded) return c->Error("axis = ", axis, " not in [", -expanded, ", ", expanded, ")");
  std::vector<int64_t> dims = merged.dim_sizes();
  dims.insert(dims.begin() + a, c->num_inputs());
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("Pack")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(PackShape)
    .Doc("Stacks N tensors of the same shape into one tensor of rank one higher.");

class PackOp : public CopyingKernel {
 public:
  explicit PackOp(OpKernelConstruction* c) : CopyingKernel(c) {
    Status s = c->GetAttr("axis", &axis_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const int num = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    const int expanded = first.dims() + 1;
    const int64_t axis = axis_ < 0 ? axis_ + expanded : axis_;
    AF_REQUIRES(ctx, 0 <= axis && axis < expanded,
                errors::InvalidArgument("axis = ", axis_, " not in [", -expanded, ", ", expanded, ")"));
    TensorShape shape = first.shape();
    shape.InsertDim(static_cast<int>(axis), num);
    if (num == 1) {
      ctx->set_output(0, first.Reshaped(shape));
      return;
    }
    for (int i = 1; i < num; ++i) {
      const Tensor& in = ctx->input(i);
      AF_REQUIRES(ctx, first.shape().IsSameSize(in.shape()),
                  errors::InvalidArgument("Shapes of all inputs must match: values[0].shape = ",
                                          first.shape().DebugString(), " != values[", i,
                                          "].shape = ", in.shape().DebugString()));
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    int64_t outer = 1;
    for (int j = 0; j < axis; ++j) outer *= first.dim_size(j);
    const int64_t len = first.NumElements() / outer;
    for (int i = 0; i < num; ++i)
      CopyRows(ctx, cp_, ctx->input(i).raw_data(), len, cp_.At(out->raw_data(), i * len), len * num, outer, len);
  }

 private:
  int64_t axis_ = 0;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Pack").Device(DEVICE_CPU), PackOp);

// ---------------------------------------------------------------------------
// Unpack

Status UnpackShape(InferenceContext* c) {
  int64_t num = 0, axis = 0;
  AF_RETURN_IF_ERROR(c->GetAttr("num", &num));
  AF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  const PartialTensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape());
    return Status::OK();
  }
  const int rank = in.dims();
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return c->Error("axis = ", axis, " not in [", -rank, ", ", rank, ")");
  const int64_t d = in.dim_size(static_cast<int>(a));
  if (d >= 0 && d != num)
    return c->Error("Dimension ", a, " of the input must be num = ", num, ", got shape ", in.DebugString());
  std::vector<int64_t> dims = in.dim_sizes();
  dims.erase(dims.begin() + a);
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("Unpack")
    .Input("value: T")
    .Output("output: num * T")
    .Attr("num: int >= 0")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(UnpackShape)
    .Doc("Unstacks a tensor of rank R into `num` tensors of rank R-1 along `axis` (the inverse of Pack).");

// Not a CopyingKernel: with num = 0 there is no output to take the dtype from.
class UnpackOp : public OpKernel {
 public:
  explicit UnpackOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("axis", &axis_));
    copier_status_ = ElemCopier::For(input_type(0), type_string(), &cp_);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const int rank = input.dims();
    const int num = ctx->num_outputs();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    AF_REQUIRES(ctx, 0 <= axis && axis < rank,
                errors::InvalidArgument("axis = ", axis_, " not in [", -rank, ", ", rank, ")"));
    AF_REQUIRES(ctx, input.dim_size(static_cast<int>(axis)) == num,
                errors::InvalidArgument("Input shape axis ", axis, " must equal num = ", num, ", got shape ",
                                        input.shape().DebugString()));
    TensorShape shape = input.shape();
    shape.RemoveDim(static_cast<int>(axis));
    if (num == 1) {
      ctx->set_output(0, input.Reshaped(shape));
      return;
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    const bool empty = input.NumElements() == 0;  // then products of dims may overflow
    int64_t outer = 1;
    for (int j = 0; !empty && j < axis; ++j) outer *= input.dim_size(j);
    const int64_t inner = empty ? 0 : shape.num_elements() / outer;  // elements per row of each output
    for (int i = 0; i < num; ++i) {
      Tensor* out;
      AF_REQUIRES_OK(ctx, ctx->allocate_output(i, shape, &out));
      if (empty) continue;
      CopyRows(ctx, cp_, cp_.At(input.raw_data(), i * inner), num * inner, out->raw_data(), inner, outer, inner);
    }
  }

 private:
  int64_t axis_ = 0;
  ElemCopier cp_;
  Status copier_status_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Unpack").Device(DEVICE_CPU), UnpackOp);

}  // namespace
}  // namespace actorflow
