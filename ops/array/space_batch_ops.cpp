// SpaceToBatchND and BatchToSpaceND, TensorFlow's ops: how TensorFlow runs a
// dilated (atrous) convolution on the CPU, and what Keras's dilation_rate
// puts in a graph. SpaceToBatchND zero-pads the M spatial dimensions of
// input [batch] + spatial + rest by `paddings` ([M, 2]) and moves each
// block_shape-sized tile's offsets into the batch: output
// [batch * prod(block_shape)] + padded / block_shape + rest, the batch index
// (offset_0, ..., offset_{M-1}, b) with b fastest. BatchToSpaceND is its
// inverse, cropping by `crops` ([M, 2]) instead of padding. Each is the
// other's gradient. Bad block shapes, paddings or crops are InvalidArgument
// naming the dimension.
#include <cstring>
#include <string>
#include <vector>

#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// The validated geometry of one SpaceToBatchND (to_batch) or BatchToSpaceND.
struct SpaceBatch {
  int m = 0;
  std::vector<int64_t> block, before, after;  // per spatial dimension: pads (to_batch) or crops
  int64_t blocks = 1;
};

Status ReadGeometry(const Tensor& block_t, const Tensor& pads_t, int input_rank, const char* what, SpaceBatch* g) {
  if (block_t.dims() != 1 || !IsIndexDtype(block_t.dtype()))
    return errors::InvalidArgument("block_shape must be an int32 or int64 vector, got ", block_t.shape().DebugString());
  g->m = static_cast<int>(block_t.dim_size(0));
  if (pads_t.dims() != 2 || pads_t.dim_size(0) != g->m || pads_t.dim_size(1) != 2 || !IsIndexDtype(pads_t.dtype()))
    return errors::InvalidArgument(what, " must be an int32 or int64 matrix of shape [", g->m, ", 2], got ",
                                   pads_t.shape().DebugString());
  if (input_rank < 1 + g->m)
    return errors::InvalidArgument("input has rank ", input_rank, ", fewer than 1 + ", g->m, " block dimensions");
  g->block = TensorToInt64s(block_t);
  const std::vector<int64_t> p = TensorToInt64s(pads_t);
  for (int i = 0; i < g->m; ++i) {
    if (g->block[i] < 1) return errors::InvalidArgument("block_shape[", i, "] is ", g->block[i], ", not >= 1");
    if (p[2 * i] < 0 || p[2 * i + 1] < 0)
      return errors::InvalidArgument(what, "[", i, "] is [", p[2 * i], ", ", p[2 * i + 1], "], not >= 0");
    g->before.push_back(p[2 * i]);
    g->after.push_back(p[2 * i + 1]);
    if (g->blocks > (int64_t{1} << 40) / g->block[i]) return errors::InvalidArgument("block_shape is too large");
    g->blocks *= g->block[i];
  }
  return Status::OK();
}

AF_REGISTER_OP("SpaceToBatchND")
    .Input("input: T")
    .Input("block_shape: Tblock_shape")
    .Input("paddings: Tpaddings")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tblock_shape: {int32, int64} = DT_INT32")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Zero-pads the spatial dimensions and moves blocks of them into the batch.");
AF_REGISTER_OP("BatchToSpaceND")
    .Input("input: T")
    .Input("block_shape: Tblock_shape")
    .Input("crops: Tcrops")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tblock_shape: {int32, int64} = DT_INT32")
    .Attr("Tcrops: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Moves blocks of the batch back into the spatial dimensions and crops them.");

class SpaceBatchOp : public OpKernel {
 public:
  explicit SpaceBatchOp(OpKernelConstruction* c) : OpKernel(c), to_batch_(type_string() == "SpaceToBatchND") {
    copier_status_ = ElemCopier::For(output_type(0), type_string(), &cp_);
  }

  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES_OK(ctx, copier_status_);
    const Tensor& in = ctx->input(0);
    SpaceBatch g;
    AF_REQUIRES_OK(ctx, ReadGeometry(ctx->input(1), ctx->input(2), in.dims(), to_batch_ ? "paddings" : "crops", &g));
    // [batch] + spatial + rest of the side with space, and the side with the batch.
    std::vector<int64_t> space = in.shape().dim_sizes(), batch = space;
    if (to_batch_) {
      for (int i = 0; i < g.m; ++i) {
        const int64_t padded = space[1 + i] + g.before[i] + g.after[i];
        AF_REQUIRES(ctx, padded % g.block[i] == 0,
                    errors::InvalidArgument("padded spatial dimension ", i, " (", padded,
                                            ") is not a multiple of block_shape[", i, "] = ", g.block[i]));
        batch[1 + i] = padded / g.block[i];
      }
      batch[0] = space[0] * g.blocks;
    } else {
      AF_REQUIRES(ctx, batch[0] % g.blocks == 0,
                  errors::InvalidArgument("input batch (", batch[0], ") is not a multiple of the block size ", g.blocks));
      space[0] = batch[0] / g.blocks;
      for (int i = 0; i < g.m; ++i) {
        const int64_t full = batch[1 + i] * g.block[i];
        AF_REQUIRES(ctx, g.before[i] + g.after[i] <= full,
                    errors::InvalidArgument("crops[", i, "] remove more than the ", full, " elements of dimension ", i));
        space[1 + i] = full - g.before[i] - g.after[i];
      }
    }
    Tensor* out = nullptr;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(to_batch_ ? batch : space), &out));
    int64_t rest = 1;
    for (size_t d = 1 + g.m; d < space.size(); ++d) rest *= space[d];
    // Walk every row (of `rest` elements) of the batch side; its place on the space side, if any.
    const int64_t batch_rows = rest == 0 ? 0 : (to_batch_ ? out->NumElements() : in.NumElements()) / rest;
    std::vector<int64_t> idx(static_cast<size_t>(g.m));
    const int64_t small_batch = space[0];
    for (int64_t r = 0; r < batch_rows; ++r) {
      // r = ((ob * batch[1] + i_1) * batch[2] + i_2) ... over the batch side's [batch] + spatial.
      int64_t t = r;
      for (int i = g.m - 1; i >= 0; --i) {
        idx[i] = t % batch[1 + i];
        t /= batch[1 + i];
      }
      const int64_t ob = t;
      int64_t offsets = ob / small_batch;
      const int64_t b = ob % small_batch;
      int64_t space_row = b;
      bool inside = true;
      std::vector<int64_t> pos(static_cast<size_t>(g.m));
      for (int i = g.m - 1; i >= 0; --i) {
        const int64_t j = offsets % g.block[i];
        offsets /= g.block[i];
        pos[i] = idx[i] * g.block[i] + j - g.before[i];
        if (pos[i] < 0 || pos[i] >= space[1 + i]) inside = false;
      }
      if (inside)
        for (int i = 0; i < g.m; ++i) space_row = space_row * space[1 + i] + pos[i];
      if (to_batch_) {
        char* dst = cp_.At(out->raw_data(), r * rest);
        if (inside) cp_.Copy(dst, cp_.At(in.raw_data(), space_row * rest), rest);
        else Zero(dst, rest);
      } else if (inside) {
        cp_.Copy(cp_.At(out->raw_data(), space_row * rest), cp_.At(in.raw_data(), r * rest), rest);
      }
    }
  }

 private:
  void Zero(char* dst, int64_t n) const {
    if (cp_.is_string) {
      auto* s = reinterpret_cast<std::string*>(dst);
      for (int64_t i = 0; i < n; ++i) s[i].clear();
    } else {
      std::memset(dst, 0, static_cast<size_t>(n) * cp_.stride);
    }
  }

  bool to_batch_;
  ElemCopier cp_;
  Status copier_status_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("SpaceToBatchND").Device(DEVICE_CPU), SpaceBatchOp);
AF_REGISTER_KERNEL(KernelDefBuilder("BatchToSpaceND").Device(DEVICE_CPU), SpaceBatchOp);

}  // namespace
}  // namespace actorflow
