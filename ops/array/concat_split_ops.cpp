// ConcatV2, Split, Pack, Unpack, Slice, Select: ops that copy blocks of elements.
//
// Every copy is reduced to rows of contiguous elements (an outer/inner
// decomposition around the concatenated, split or sliced dimension) moved with
// memcpy for POD dtypes and by assignment for strings, sharded over the compute
// pool by elements.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "devices/compute_pool.hpp"
#include "ops/array/array_util.hpp"
#include "ops/array/copy_util.hpp"
#include "ops/op_kernel.hpp"
#include "ops/op_registry.hpp"
#include "ops/shape_inference.hpp"

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

// ---------------------------------------------------------------------------
// Slice

Status SliceShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& begin_shape = c->input(1);
  const PartialTensorShape& size_shape = c->input(2);
  for (const auto* s : {&begin_shape, &size_shape})
    if (!s->unknown_rank() && s->dims() != 1)
      return c->Error("Expected begin and size arguments to be 1-D tensors, but got shapes ",
                      begin_shape.DebugString(), " and ", size_shape.DebugString(), " instead.");
  int rank = in.dims();  // -1 when unknown
  for (const auto* s : {&begin_shape, &size_shape}) {
    if (s->unknown_rank() || s->dim_size(0) < 0) continue;
    if (rank >= 0 && s->dim_size(0) != rank)
      return c->Error("Expected begin and size arguments to be 1-D tensors of size ", rank, ", but got shapes ",
                      begin_shape.DebugString(), " and ", size_shape.DebugString(), " instead.");
    AF_RETURN_IF_ERROR(RankFromDim(c, s->dim_size(0), "begin or size", &rank));
  }
  const Tensor* size_t_ = c->input_tensor(2);
  if (rank < 0 || size_t_ == nullptr || !IsIndexDtype(size_t_->dtype()) || size_t_->NumElements() != rank) {
    c->set_output(0, UnknownOfRank(rank));
    return Status::OK();
  }
  std::vector<int64_t> size = TensorToInt64s(*size_t_);
  const Tensor* begin_t = c->input_tensor(1);
  const bool have_begin = begin_t != nullptr && IsIndexDtype(begin_t->dtype()) && begin_t->NumElements() == rank;
  const std::vector<int64_t> begin = have_begin ? TensorToInt64s(*begin_t) : std::vector<int64_t>();
  std::vector<int64_t> dims(rank, -1);
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = in.unknown_rank() ? -1 : in.dim_size(i);
    int64_t s = size[i];
    if (s < -1) return c->Error("Expected size[", i, "] in [0, ", dim, "], but got ", s);
    if (have_begin) {
      const int64_t b = begin[i];
      if (b < 0 || (dim >= 0 && b > dim))
        return c->Error("Expected begin[", i, "] in [0, ", dim, "], but got ", b);
      if (dim >= 0 && s == -1) s = dim - b;
      if (dim >= 0 && s > dim - b) return c->Error("Expected size[", i, "] in [0, ", dim - b, "], but got ", s);
    }
    dims[i] = s;  // -1 when it runs to an unknown end
  }
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("Slice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("size: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}")
    .SetShapeFn(SliceShape)
    .Doc("Extracts input[begin : begin + size]; a size of -1 runs to the end of the dimension.");

class SliceOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& begin_t = ctx->input(1);
    const Tensor& size_t_ = ctx->input(2);
    const int rank = input.dims();
    AF_REQUIRES(ctx,
                begin_t.dims() == 1 && size_t_.dims() == 1 && begin_t.NumElements() == rank &&
                    size_t_.NumElements() == rank,
                errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ", rank,
                                        ", but got shapes ", begin_t.shape().DebugString(), " and ",
                                        size_t_.shape().DebugString(), " instead."));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(begin_t, "begin"));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(size_t_, "size"));
    const std::vector<int64_t> begin = TensorToInt64s(begin_t);
    std::vector<int64_t> size = TensorToInt64s(size_t_);
    TensorShape shape;
    bool is_identity = true;
    for (int i = 0; i < rank; ++i) {
      const int64_t dim = input.dim_size(i);
      const int64_t b = begin[i];
      if (size[i] == -1 && b >= 0 && b <= dim) size[i] = dim - b;
      const int64_t s = size[i];
      if (dim == 0) {
        AF_REQUIRES(ctx, b == 0 && s == 0,
                    errors::InvalidArgument("Expected begin[", i, "] == 0 (got ", b, ") and size[", i,
                                            "] == 0 (got ", s, ") when input.dim_size(", i, ") == 0"));
      } else {
        AF_REQUIRES(ctx, 0 <= b && b <= dim,
                    errors::InvalidArgument("Expected begin[", i, "] in [0, ", dim, "], but got ", b));
        AF_REQUIRES(ctx, 0 <= s && s <= dim - b,
                    errors::InvalidArgument("Expected size[", i, "] in [0, ", dim - b, "], but got ", s));
      }
      shape.AddDim(s);
      is_identity &= (b == 0 && s == dim);
    }
    if (is_identity) {
      ctx->set_output(0, input);
      return;
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;

    // Dims after k are taken whole: each block of the output is contiguous
    // in the input, size[k] * inner elements long.
    int k = rank - 1;
    while (k > 0 && begin[k] == 0 && size[k] == input.dim_size(k)) --k;
    std::vector<int64_t> in_stride(rank, 1);
    for (int i = rank - 2; i >= 0; --i) in_stride[i] = in_stride[i + 1] * input.dim_size(i + 1);
    const int64_t block = size[k] * in_stride[k];
    int64_t base = 0;
    for (int i = 0; i <= k; ++i) base += begin[i] * in_stride[i];
    int64_t nblocks = 1;
    for (int i = 0; i < k; ++i) nblocks *= size[i];
    const void* src = input.raw_data();
    void* dst = out->raw_data();
    ctx->device()->compute_pool()->For(nblocks, block * cp_.ElemCost(), [&](int64_t s, int64_t e) {
      // Odometer over the output's dims 0..k-1, starting at block s.
      std::vector<int64_t> idx(k, 0);
      int64_t off = base;
      int64_t rem = s;
      for (int i = k - 1; i >= 0; --i) {
        idx[i] = rem % size[i];
        rem /= size[i];
        off += idx[i] * in_stride[i];
      }
      for (int64_t o = s; o < e; ++o) {
        cp_.Copy(cp_.At(dst, o * block), cp_.At(src, off), block);
        for (int i = k - 1; i >= 0; --i) {
          off += in_stride[i];
          if (++idx[i] < size[i]) break;
          off -= in_stride[i] * size[i];
          idx[i] = 0;
        }
      }
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Slice").Device(DEVICE_CPU), SliceOp);

// ---------------------------------------------------------------------------
// Select (TensorFlow 1 semantics: no broadcasting beyond a scalar or a
// per-row vector condition).

Status SelectShape(InferenceContext* c) {
  const PartialTensorShape& cond = c->input(0);
  const PartialTensorShape& t = c->input(1);
  const PartialTensorShape& e = c->input(2);
  PartialTensorShape out;
  if (!MergeShapes(t, e, &out))
    return c->Error("'then' and 'else' must have the same size.  but received: ", t.DebugString(), " vs. ",
                    e.DebugString());
  if (!cond.unknown_rank() && !out.unknown_rank() && cond.dims() != 0) {
    if (cond.dims() == 1 && out.dims() != 1) {
      if (out.dims() == 0)
        return c->Error("'then' must be at least a vector, but saw shape: ", out.DebugString());
      if (cond.dim_size(0) >= 0 && out.dim_size(0) >= 0 && cond.dim_size(0) != out.dim_size(0))
        return c->Error("Number of batches of 'then' must match size of 'cond', but saw: ", out.dim_size(0), " vs. ",
                        cond.dim_size(0));
    } else {
      PartialTensorShape merged;
      if (!MergeShapes(cond, out, &merged))
        return c->Error("condition of shape ", cond.DebugString(), " must be a scalar, a vector of length ",
                        "dim 0 of 't', or have the shape of 't' ", out.DebugString());
      out = merged;
    }
  }
  c->set_output(0, out);
  return Status::OK();
}

AF_REGISTER_OP("Select")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(SelectShape)
    .Doc("Selects elements from t or e depending on condition.");

/// out[i] = cond[i] ? t[i] : e[i] for fixed-size elements of N bytes.
template <size_t N>
void SelectPod(OpKernelContext* ctx, const bool* cond, const char* t, const char* e, char* out, int64_t n) {
  ctx->device()->compute_pool()->For(n, 2, [&](int64_t s, int64_t end) {
    for (int64_t i = s; i < end; ++i) std::memcpy(out + i * N, (cond[i] ? t : e) + i * N, N);
  });
}

class SelectOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    if (cond.dims() == 0) {
      AF_REQUIRES(ctx, t.shape().IsSameSize(e.shape()),
                  errors::InvalidArgument("'then' and 'else' must have the same size.  but received: ",
                                          t.shape().DebugString(), " vs. ", e.shape().DebugString()));
      AF_REQUIRES(ctx, cond.raw_data() != nullptr,
                  errors::InvalidArgument("condition is an uninitialized tensor"));
      ctx->set_output(0, *cond.data<bool>() ? t : e);
      return;
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    if (cond.dims() == 1 && t.dims() != 1) {
      ComputeBroadcasting(ctx, cond, t, e);
      return;
    }
    AF_REQUIRES(ctx, cond.shape().IsSameSize(t.shape()) && cond.shape().IsSameSize(e.shape()),
                errors::InvalidArgument("Inputs to operation ", name(), " of type ", type_string(),
                                        " must have the same size and shape.  Input 0: ", cond.shape().DebugString(),
                                        " != input ", cond.shape().IsSameSize(t.shape()) ? 2 : 1, ": ",
                                        (cond.shape().IsSameSize(t.shape()) ? e : t).shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, t.shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    const bool* pc = cond.data<bool>();
    if (cp_.is_string) {
      const auto* pt = t.data<std::string>();
      const auto* pe = e.data<std::string>();
      auto* po = out->data<std::string>();
      ctx->device()->compute_pool()->For(n, 16, [&](int64_t s, int64_t end) {
        for (int64_t i = s; i < end; ++i) po[i] = pc[i] ? pt[i] : pe[i];
      });
      return;
    }
    const char* pt = static_cast<const char*>(t.raw_data());
    const char* pe = static_cast<const char*>(e.raw_data());
    char* po = static_cast<char*>(out->raw_data());
    switch (cp_.stride) {
      case 1: SelectPod<1>(ctx, pc, pt, pe, po, n); break;
      case 2: SelectPod<2>(ctx, pc, pt, pe, po, n); break;
      case 4: SelectPod<4>(ctx, pc, pt, pe, po, n); break;
      case 8: SelectPod<8>(ctx, pc, pt, pe, po, n); break;
      case 16: SelectPod<16>(ctx, pc, pt, pe, po, n); break;
      default: {
        const size_t sz = cp_.stride;
        ctx->device()->compute_pool()->For(n, 2, [&](int64_t s, int64_t end) {
          for (int64_t i = s; i < end; ++i) std::memcpy(po + i * sz, (pc[i] ? pt : pe) + i * sz, sz);
        });
      }
    }
  }

 private:
  // A vector condition picks whole rows (dim 0) of t or e.
  void ComputeBroadcasting(OpKernelContext* ctx, const Tensor& cond, const Tensor& t, const Tensor& e) {
    AF_REQUIRES(ctx, t.dims() >= 1,
                errors::InvalidArgument("'then' must be at least a vector, but saw shape: ",
                                        t.shape().DebugString()));
    AF_REQUIRES(ctx, t.dim_size(0) == cond.NumElements(),
                errors::InvalidArgument("Number of batches of 'then' must match size of 'cond', but saw: ",
                                        t.dim_size(0), " vs. ", cond.NumElements()));
    AF_REQUIRES(ctx, t.shape().IsSameSize(e.shape()),
                errors::InvalidArgument("'then' and 'else' must have the same size.  but received: ",
                                        t.shape().DebugString(), " vs. ", e.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, t.shape(), &out));
    const int64_t rows = t.dim_size(0);
    if (out->NumElements() == 0) return;
    const int64_t len = out->NumElements() / rows;
    const bool* pc = cond.data<bool>();
    const void* pt = t.raw_data();
    const void* pe = e.raw_data();
    void* po = out->raw_data();
    ctx->device()->compute_pool()->For(rows, len * cp_.ElemCost(), [&](int64_t s, int64_t end) {
      for (int64_t r = s; r < end; ++r) cp_.Copy(cp_.At(po, r * len), cp_.At(pc[r] ? pt : pe, r * len), len);
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Select").Device(DEVICE_CPU), SelectOp);

}  // namespace
}  // namespace actorflow
