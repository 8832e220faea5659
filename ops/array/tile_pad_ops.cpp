// Tile and Pad: ops whose output is its input repeated or surrounded by zeros.
//
// Both walk rows of the innermost dimension with an odometer over the outer
// dims (sharded over the compute pool by rows) and move elements with the
// ElemCopier, so they work for every dtype, strings included.
#include <cstring>
#include <limits>

#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

/// Row-major strides (in elements) of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

/// The multi-index of row `r` of a tensor with outer dims `dims` (all but the last).
std::vector<int64_t> RowIndex(int64_t r, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    idx[i] = r % dims[i];
    r /= dims[i];
  }
  return idx;
}

/// Advances `idx` over `dims` like an odometer.
void NextRow(const std::vector<int64_t>& dims, std::vector<int64_t>* idx) {
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    if (++(*idx)[i] < dims[i]) return;
    (*idx)[i] = 0;
  }
}

// ---------------------------------------------------------------------------
// Tile

Status TileShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& m = c->input(1);
  if (!m.unknown_rank() && m.dims() != 1) return c->Error("multiples must be a vector, got ", m.DebugString());
  int rank = in.dims();
  if (rank >= 0 && !m.unknown_rank() && m.dim_size(0) >= 0 && m.dim_size(0) != rank)
    return c->Error("Expected multiples argument to be a vector of length ", rank, " but got length ", m.dim_size(0));
  if (rank < 0 && !m.unknown_rank()) AF_RETURN_IF_ERROR(RankFromDim(c, m.dim_size(0), "multiples", &rank));
  if (rank < 0) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  const Tensor* mt = c->input_tensor(1);
  std::vector<int64_t> dims(rank, -1);
  if (mt != nullptr && IsIndexDtype(mt->dtype()) && mt->NumElements() == rank) {
    const std::vector<int64_t> mv = TensorToInt64s(*mt);
    for (int i = 0; i < rank; ++i) {
      if (mv[i] < 0) return c->Error("Expected multiples[", i, "] >= 0, but got ", mv[i]);
      const int64_t d = in.unknown_rank() ? -1 : in.dim_size(i);
      if (d < 0) dims[i] = mv[i] == 0 ? 0 : -1;
      else if (!MulDims(d, mv[i], &dims[i]))
        return c->Error("Tiled dimension ", i, " overflows int64: ", d, " * ", mv[i]);
    }
  }
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("Tile")
    .Input("input: T")
    .Input("multiples: Tmultiples")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tmultiples: {int32, int64} = DT_INT32")
    .SetShapeFn(TileShape)
    .Doc("Repeats the input multiples[i] times along dimension i.");

class TileOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const int rank = input.dims();
    std::vector<int64_t> out_dims;
    bool identity;
    AF_REQUIRES_OK(ctx, TileOutputDims(input, ctx->input(1), &out_dims, &identity));
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(out_dims, &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    AF_REQUIRES_OK(ctx, copier_status_);
    // Each output row is input row (its outer index modulo the input's dims),
    // repeated m[last] times: one copy, then doubling copies within the row.
    const std::vector<int64_t> in_dims = input.shape().dim_sizes();
    const std::vector<int64_t> in_strides = Strides(in_dims);
    const std::vector<int64_t> out_outer(out_dims.begin(), out_dims.end() - 1);
    const int64_t len = in_dims[rank - 1];
    const int64_t out_row = out_dims[rank - 1];
    const int64_t rows = out->NumElements() / out_row;
    const void* src = input.raw_data();
    void* dst = out->raw_data();
    ctx->device()->compute_pool()->For(rows, out_row * cp_.ElemCost(), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> idx = RowIndex(r0, out_outer);
      for (int64_t r = r0; r < r1; ++r, NextRow(out_outer, &idx)) {
        int64_t in_off = 0;
        for (int i = 0; i + 1 < rank; ++i) in_off += (idx[i] % in_dims[i]) * in_strides[i];
        char* row = cp_.At(dst, r * out_row);
        cp_.Copy(row, cp_.At(src, in_off), len);
        for (int64_t done = len; done < out_row;) {
          const int64_t n = std::min(done, out_row - done);
          cp_.Copy(cp_.At(row, done), row, n);
          done += n;
        }
      }
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Tile").Device(DEVICE_CPU), TileOp);

// ---------------------------------------------------------------------------
// Pad

Status PadShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& p = c->input(1);
  if (!p.unknown_rank() && (p.dims() != 2 || (p.dim_size(1) >= 0 && p.dim_size(1) != 2)))
    return c->Error("paddings must be a matrix with 2 columns, got ", p.DebugString());
  int rank = in.dims();
  if (rank >= 0 && !p.unknown_rank() && p.dim_size(0) >= 0 && p.dim_size(0) != rank)
    return c->Error("The first dimension of paddings must be the rank of inputs ", rank, ", got paddings ",
                    p.DebugString());
  if (rank < 0 && !p.unknown_rank()) AF_RETURN_IF_ERROR(RankFromDim(c, p.dim_size(0), "paddings", &rank));
  if (rank < 0) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  const Tensor* pt = c->input_tensor(1);
  std::vector<int64_t> dims(rank, -1);
  if (pt != nullptr && IsIndexDtype(pt->dtype()) && pt->NumElements() == 2 * rank) {
    const std::vector<int64_t> pv = TensorToInt64s(*pt);
    for (int i = 0; i < rank; ++i) {
      if (pv[2 * i] < 0 || pv[2 * i + 1] < 0)
        return c->Error("Paddings must be non-negative: ", pv[2 * i], " ", pv[2 * i + 1]);
      const int64_t d = in.unknown_rank() ? -1 : in.dim_size(i);
      int64_t padded = -1;
      if (d >= 0 && !(AddDims(d, pv[2 * i], &padded) && AddDims(padded, pv[2 * i + 1], &padded)))
        return c->Error("Padded dimension ", i, " overflows int64: ", d, " + ", pv[2 * i], " + ", pv[2 * i + 1]);
      dims[i] = d < 0 ? -1 : padded;
    }
  }
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("Pad")
    .Input("input: T")
    .Input("paddings: Tpaddings")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .SetShapeFn(PadShape)
    .Doc("Pads the input with zeros: paddings[i] = [before, after] elements along dimension i.");

class PadOp : public CopyingKernel {
 public:
  using CopyingKernel::CopyingKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& paddings_t = ctx->input(1);
    AF_REQUIRES_OK(ctx, CheckIndexDtype(paddings_t, "paddings"));
    const int rank = input.dims();
    AF_REQUIRES(ctx, paddings_t.dims() == 2 && paddings_t.dim_size(1) == 2,
                errors::InvalidArgument("paddings must be a matrix with 2 columns: ",
                                        paddings_t.shape().DebugString()));
    AF_REQUIRES(ctx, paddings_t.dim_size(0) == rank,
                errors::InvalidArgument("The first dimension of paddings must be the rank of inputs ", rank,
                                        ", got paddings ", paddings_t.shape().DebugString()));
    const std::vector<int64_t> p = TensorToInt64s(paddings_t);
    std::vector<int64_t> out_dims(rank), before(rank);
    bool identity = true;
    for (int i = 0; i < rank; ++i) {
      const int64_t b = p[2 * i], a = p[2 * i + 1], d = input.dim_size(i);
      AF_REQUIRES(ctx, b >= 0 && a >= 0, errors::InvalidArgument("Paddings must be non-negative: ", b, " ", a));
      AF_REQUIRES(ctx, b <= std::numeric_limits<int64_t>::max() - d - a,
                  errors::InvalidArgument("Padded dimension ", i, " overflows int64"));
      out_dims[i] = d + b + a;
      before[i] = b;
      identity &= b == 0 && a == 0;
    }
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    AF_REQUIRES_OK(ctx, copier_status_);
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(out_dims, &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t n_out = out->NumElements();
    if (n_out == 0) return;
    if (!cp_.is_string) {  // zeros (a fresh string tensor already holds empty strings)
      char* po = static_cast<char*>(out->raw_data());
      const size_t esize = cp_.stride;
      ctx->device()->compute_pool()->For(n_out, 1, [&](int64_t s, int64_t e) {
        std::memset(po + s * esize, 0, static_cast<size_t>(e - s) * esize);
      });
    }
    if (input.NumElements() == 0) return;
    // Input row r lands at its index shifted by `before` in every dim.
    const std::vector<int64_t> in_dims = input.shape().dim_sizes();
    const std::vector<int64_t> out_strides = Strides(out_dims);
    const std::vector<int64_t> in_outer(in_dims.begin(), in_dims.end() - 1);
    const int64_t len = in_dims[rank - 1];
    const int64_t rows = input.NumElements() / len;
    const void* src = input.raw_data();
    void* dst = out->raw_data();
    ctx->device()->compute_pool()->For(rows, len * cp_.ElemCost(), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> idx = RowIndex(r0, in_outer);
      for (int64_t r = r0; r < r1; ++r, NextRow(in_outer, &idx)) {
        int64_t out_off = before[rank - 1];
        for (int i = 0; i + 1 < rank; ++i) out_off += (idx[i] + before[i]) * out_strides[i];
        cp_.Copy(cp_.At(dst, out_off), cp_.At(src, r * len), len);
      }
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Pad").Device(DEVICE_CPU), PadOp);

}  // namespace
}  // namespace actorflow
