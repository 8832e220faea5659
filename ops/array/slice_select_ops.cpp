// Slice and Select: ops that copy blocks of elements (ConcatV2, Split, Pack,
// Unpack: concat_split_ops.cpp).
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

PartialTensorShape UnknownOfRank(int rank) {
  return rank < 0 ? PartialTensorShape() : PartialTensorShape(std::vector<int64_t>(rank, -1));
}

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
