// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter in NHWC with an HWIO
// filter, TensorFlow's ops: each output pixel's patch (kh * kw * C values,
// zeros where the window overhangs SAME padding) times the filter viewed as a
// [kh * kw * C, O] matrix. The patches of a block of output rows are gathered
// into a buffer (im2col) of about L2's size and multiplied by the MatMul's
// GEMM (ops/math/cpu_gemm.hpp: Eigen's, or oneDNN's sgemm where it measured
// faster for that block's shape), blocks sharded over the compute pool; the
// backprops run the same products transposed and add patches back (col2im).
// Dilations and NCHW are refused as Unimplemented.
//
// _FusedConv2D, TensorFlow's Conv2D + BiasAdd [+ activation] (what
// graph/remapper.hpp fuses on CPUs), adds the bias and applies the
// activation to each block of output rows right after its product, while
// the block is in cache (ops/math/fused_epilogue.hpp): the output is written
// once instead of three times.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/math/cpu_gemm.hpp"
#include "actorflow/ops/math/fused_epilogue.hpp"
#include "actorflow/ops/nn/conv_geometry.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_CONV_ATTRS                                  \
  Attr("T: {float, double}")                           \
      .Attr("strides: list(int)")                      \
      .Attr("use_cudnn_on_gpu: bool = true")           \
      .Attr("padding: string")                         \
      .Attr("explicit_paddings: list(int) = []")       \
      .Attr("data_format: string = 'NHWC'")            \
      .Attr("dilations: list(int) = [1, 1, 1, 1]")

// The geometry of one convolution: input [n, h, w, c], filter [kh, kw, c, o], output [n, oh, ow, o].
struct ConvGeometry {
  int64_t n = 0, c = 0, o = 0;
  Window1D h, w;
  int64_t patch() const { return h.k * w.k * c; }
  int64_t pixels() const { return h.out * w.out; }
};

Status Geometry(const Window2DAttrs& a, const std::vector<int64_t>& input, const std::vector<int64_t>& filter,
                ConvGeometry* g) {
  if (input.size() != 4) return errors::InvalidArgument("input must be 4-dimensional (NHWC), got rank ", input.size());
  if (filter.size() != 4) return errors::InvalidArgument("filter must be 4-dimensional (HWIO), got rank ", filter.size());
  if (input[3] != filter[2])
    return errors::InvalidArgument("input depth (", input[3], ") must equal the filter's in_depth (", filter[2], ")");
  g->n = input[0];
  g->c = input[3];
  g->o = filter[3];
  g->h = {input[1], filter[0], a.sh, 0, a.top, a.bottom};
  g->w = {input[2], filter[1], a.sw, 0, a.left, a.right};
  AF_RETURN_IF_ERROR(ResolveWindow(a.padding, "Conv2D rows", &g->h));
  return ResolveWindow(a.padding, "Conv2D columns", &g->w);
}

// Patch rows [r0, r1) of image-major output pixels (r = (b * oh + y) * ow + x) into `cols`.
template <class T>
void Im2Col(const ConvGeometry& g, const T* in, int64_t r0, int64_t r1, T* cols) {
  const int64_t patch = g.patch();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / g.pixels(), y = (r / g.w.out) % g.h.out, x = r % g.w.out;
    T* dst = cols + (r - r0) * patch;
    for (int64_t i = 0; i < g.h.k; ++i) {
      const int64_t iy = y * g.h.stride - g.h.pad_before + i;
      for (int64_t j = 0; j < g.w.k; ++j, dst += g.c) {
        const int64_t ix = x * g.w.stride - g.w.pad_before + j;
        if (iy < 0 || iy >= g.h.in || ix < 0 || ix >= g.w.in) {
          std::fill(dst, dst + g.c, T(0));
        } else if (g.c < 8) {  // a few channels (a first layer): a call to memcpy costs more than the copy
          const T* src = in + ((b * g.h.in + iy) * g.w.in + ix) * g.c;
          for (int64_t k = 0; k < g.c; ++k) dst[k] = src[k];
        } else {
          std::memcpy(dst, in + ((b * g.h.in + iy) * g.w.in + ix) * g.c, sizeof(T) * g.c);
        }
      }
    }
  }
}

// The inverse: patch rows [r0, r1) added back into `in` (rows of one image at a time: no two shards share one).
template <class T>
void Col2Im(const ConvGeometry& g, const T* cols, int64_t r0, int64_t r1, T* in) {
  const int64_t patch = g.patch();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / g.pixels(), y = (r / g.w.out) % g.h.out, x = r % g.w.out;
    const T* src = cols + (r - r0) * patch;
    for (int64_t i = 0; i < g.h.k; ++i) {
      const int64_t iy = y * g.h.stride - g.h.pad_before + i;
      for (int64_t j = 0; j < g.w.k; ++j, src += g.c) {
        const int64_t ix = x * g.w.stride - g.w.pad_before + j;
        if (iy < 0 || iy >= g.h.in || ix < 0 || ix >= g.w.in) continue;
        T* dst = in + ((b * g.h.in + iy) * g.w.in + ix) * g.c;
        for (int64_t k = 0; k < g.c; ++k) dst[k] += src[k];
      }
    }
  }
}

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Output pixels per block: patch buffers of ~256 KiB, which stay in L2 from
// their gathering to their product, and give the pool blocks to share
// (measured here on a 32x14x14x32 -> 64 layer: 4 MiB blocks left one of two
// threads idle and ran 1.5x slower on one).
int64_t BlockRows(const ConvGeometry& g, size_t elem) {
  return std::max<int64_t>(16, (int64_t{256} << 10) / std::max<int64_t>(1, g.patch() * static_cast<int64_t>(elem)));
}

// C = op(A) * op(B), row-major and contiguous: op(A) m x k, op(B) k x n, C
// m x n (C is overwritten). float32 by the implementation cpu_gemm chose
// for the shape; the rest by Eigen.
template <class T>
void EigenGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  Eigen::Map<Mat<T>> C(c, m, n);
  Eigen::Map<const Mat<T>> A(a, ta ? k : m, ta ? m : k), B(b, tb ? n : k, tb ? k : n);
  if (!ta && !tb) C.noalias() = A * B;
  else if (!ta) C.noalias() = A * B.transpose();
  else if (!tb) C.noalias() = A.transpose() * B;
  else C.noalias() = A.transpose() * B.transpose();
}

template <class T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    cpu_gemm::Impl impl = cpu_gemm::Impl::kEigen;
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    if (flops >= cpu_gemm::kMinFlops && !cpu_gemm::Chosen(ta, tb, m, n, k, &impl))
      impl = cpu_gemm::Choose(ta, tb, m, n, k, [&](cpu_gemm::Impl i, const float* pa, const float* pb, float* pc) {
        if (i != cpu_gemm::Impl::kOneDnn || !cpu_gemm::OneDnnSgemm(ta, tb, m, n, k, pa, ta ? m : k, pb, tb ? k : n, pc, n))
          EigenGemm(ta, tb, m, n, k, pa, pb, pc);
      });
    if (impl == cpu_gemm::Impl::kOneDnn && cpu_gemm::OneDnnSgemm(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n))
      return;
  }
  EigenGemm(ta, tb, m, n, k, a, b, c);
}

// The forward convolution; with `epilogue`, each block of output rows then
// gets the bias and activation of a _FusedConv2D.
template <class T>
void Forward(OpKernelContext* ctx, const ConvGeometry& g, const T* in, const T* filter, T* out,
             const FusedEpilogue* epilogue = nullptr, const T* bias = nullptr) {
  const int64_t rows = g.n * g.pixels(), block = BlockRows(g, sizeof(T));
  const int64_t blocks = (rows + block - 1) / block;
  ctx->device()->compute_pool()->For(blocks, block * g.patch() * g.o * 2, [&](int64_t b0, int64_t b1) {
    std::vector<T> cols;
    for (int64_t bi = b0; bi < b1; ++bi) {
      const int64_t r0 = bi * block, r1 = std::min(rows, r0 + block);
      cols.resize(static_cast<size_t>((r1 - r0) * g.patch()));
      Im2Col(g, in, r0, r1, cols.data());
      Gemm<T>(false, false, r1 - r0, g.o, g.patch(), cols.data(), filter, out + r0 * g.o);
      if (epilogue) epilogue->Apply(bias, out, g.o, r0, r1, 0, g.o);
    }
  });
}

// dInput: each image's patch gradients (dy * W^T) added back where the patches came from.
template <class T>
void BackpropInput(OpKernelContext* ctx, const ConvGeometry& g, const T* filter, const T* dy, T* din) {
  std::fill(din, din + g.n * g.h.in * g.w.in * g.c, T(0));
  ctx->device()->compute_pool()->For(g.n, g.pixels() * g.patch() * g.o * 2, [&](int64_t n0, int64_t n1) {
    std::vector<T> cols;
    const int64_t block = BlockRows(g, sizeof(T));
    for (int64_t b = n0; b < n1; ++b) {
      for (int64_t r0 = b * g.pixels(); r0 < (b + 1) * g.pixels(); r0 += block) {
        const int64_t r1 = std::min((b + 1) * g.pixels(), r0 + block);
        cols.resize(static_cast<size_t>((r1 - r0) * g.patch()));
        Gemm<T>(false, true, r1 - r0, g.patch(), g.o, dy + r0 * g.o, filter, cols.data());
        Col2Im(g, cols.data(), r0, r1, din);
      }
    }
  });
}

// Patches this short (a 3x3 window over up to 3 channels) take rank-one
// updates instead of a GEMM: measured here on 25088 patches of 9 into 32
// outputs, 0.13 ms against Eigen's 0.29 (a GEMM this thin is mostly packing).
constexpr int64_t kSmallPatch = 32;

// w[p, :] += cols[r, p] * dy[r, :] over the rows: dW of a block, small patches.
template <class T>
void RankOneUpdates(const T* __restrict cols, const T* __restrict dy, T* __restrict w, int64_t rows, int64_t patch,
                    int64_t o) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* c = cols + r * patch;
    const T* d = dy + r * o;
    for (int64_t p = 0; p < patch; ++p) {
      const T a = c[p];
      T* wp = w + p * o;
      for (int64_t j = 0; j < o; ++j) wp[j] += a * d[j];
    }
  }
}

// dFilter = sum over output pixels of patch^T * dy: partial sums per shard, added under a lock.
template <class T>
void BackpropFilter(OpKernelContext* ctx, const ConvGeometry& g, const T* in, const T* dy, T* dfilter) {
  Eigen::Map<Mat<T>> dw(dfilter, g.patch(), g.o);
  dw.setZero();
  const int64_t rows = g.n * g.pixels(), block = BlockRows(g, sizeof(T));
  const int64_t blocks = (rows + block - 1) / block;
  std::mutex mu;
  ctx->device()->compute_pool()->For(blocks, block * g.patch() * g.o * 2, [&](int64_t b0, int64_t b1) {
    std::vector<T> cols;
    Mat<T> partial = Mat<T>::Zero(g.patch(), g.o), product(g.patch(), g.o);
    for (int64_t bi = b0; bi < b1; ++bi) {
      const int64_t r0 = bi * block, r1 = std::min(rows, r0 + block);
      cols.resize(static_cast<size_t>((r1 - r0) * g.patch()));
      Im2Col(g, in, r0, r1, cols.data());
      if (g.patch() <= kSmallPatch) {
        RankOneUpdates(cols.data(), dy + r0 * g.o, partial.data(), r1 - r0, g.patch(), g.o);
        continue;
      }
      Gemm<T>(true, false, g.patch(), g.o, r1 - r0, cols.data(), dy + r0 * g.o, product.data());
      partial += product;
    }
    std::lock_guard<std::mutex> lock(mu);
    dw += partial;
  });
}

std::vector<int64_t> SizesFrom(const Tensor& t) { return TensorToInt64s(t); }

Status Conv2DShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& f = c->input(1);
  if (in.unknown_rank() || f.unknown_rank() || in.dims() != 4 || f.dims() != 4) {
    c->set_output(0, PartialTensorShape(std::vector<int64_t>(4, -1)));
    return Status::OK();
  }
  Window2DAttrs a;
  Status s = ReadWindow2DAttrs(c->node(), false, &a);
  if (!s.ok()) return c->Error(s.message());
  auto out = [&](int64_t size, int64_t k, int64_t stride, int64_t before, int64_t after) -> int64_t {
    if (size < 0 || k < 0) return -1;
    Window1D w{size, k, stride, 0, before, after};
    return ResolveWindow(a.padding, "Conv2D", &w).ok() ? w.out : -1;
  };
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{
                       in.dim_size(0), out(in.dim_size(1), f.dim_size(0), a.sh, a.top, a.bottom),
                       out(in.dim_size(2), f.dim_size(1), a.sw, a.left, a.right), f.dim_size(3)}));
  return Status::OK();
}

// The output of a backprop has the shape its sizes input holds.
Status SizesShape(InferenceContext* c, int sizes_input) {
  const Tensor* sizes = c->input_tensor(sizes_input);
  c->set_output(0, sizes != nullptr && sizes->dims() == 1 ? PartialTensorShape(TensorToInt64s(*sizes))
                                                          : PartialTensorShape(std::vector<int64_t>(4, -1)));
  return Status::OK();
}

AF_REGISTER_OP("Conv2D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .AF_CONV_ATTRS
    .SetShapeFn(Conv2DShape)
    .Doc("2-D convolution of NHWC input with an HWIO filter (a cross-correlation, as in TensorFlow).");
AF_REGISTER_OP("Conv2DBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .AF_CONV_ATTRS
    .SetShapeFn([](InferenceContext* c) { return SizesShape(c, 0); })
    .Doc("The gradient of Conv2D for its input.");
AF_REGISTER_OP("Conv2DBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .AF_CONV_ATTRS
    .SetShapeFn([](InferenceContext* c) { return SizesShape(c, 1); })
    .Doc("The gradient of Conv2D for its filter.");
AF_REGISTER_OP("_FusedConv2D")
    .Input("input: T")
    .Input("filter: T")
    .Input("args: num_args * T")
    .Output("output: T")
    .Attr("T: {half, float, double}")
    .Attr("num_args: int >= 0")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("fused_ops: list(string) = []")
    .Attr("epsilon: float = 0.0001")
    .Attr("leakyrelu_alpha: float = 0.2")
    .SetShapeFn(Conv2DShape)
    .Doc("Conv2D followed by fused_ops in order: [\"BiasAdd\"], optionally followed by \"Relu\", \"Relu6\", "
         "\"LeakyRelu\" or \"Elu\"; the bias is args[0]. Made by graph optimization (graph/remapper.hpp).");

enum class ConvKind { kForward, kInput, kFilter };

template <ConvKind K>
class ConvOp : public OpKernel {
 public:
  explicit ConvOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(ReadWindow2DAttrs(c->def(), false, &attrs_));
    if (type_string() == "_FusedConv2D") {
      fused_ = true;
      c->SetStatus(epilogue_.Read(*c));
    }
  }

  void Compute(OpKernelContext* ctx) override {
    std::vector<int64_t> in_dims, filter_dims;
    const Tensor* dy = nullptr;
    if (K == ConvKind::kForward) {
      in_dims = ctx->input(0).shape().dim_sizes();
      filter_dims = ctx->input(1).shape().dim_sizes();
    } else if (K == ConvKind::kInput) {
      in_dims = SizesFrom(ctx->input(0));
      filter_dims = ctx->input(1).shape().dim_sizes();
      dy = &ctx->input(2);
    } else {
      in_dims = ctx->input(0).shape().dim_sizes();
      filter_dims = SizesFrom(ctx->input(1));
      dy = &ctx->input(2);
    }
    ConvGeometry g;
    Status s = Geometry(attrs_, in_dims, filter_dims, &g);
    AF_REQUIRES(ctx, s.ok(), errors::InvalidArgument("node '", name(), "' (op '", type_string(), "'): ", s.message()));
    const std::vector<int64_t> out_dims{g.n, g.h.out, g.w.out, g.o};
    if (fused_) AF_REQUIRES_OK(ctx, FusedEpilogue::CheckBias(ctx->input(2), g.o));
    if (dy != nullptr)
      AF_REQUIRES(ctx, dy->shape().dim_sizes() == out_dims,
                  errors::InvalidArgument("node '", name(), "': out_backprop has shape ", dy->shape().DebugString(),
                                          ", the convolution's output has ", PartialTensorShape(out_dims).DebugString()));
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(K == ConvKind::kForward ? out_dims
                                              : K == ConvKind::kInput ? in_dims
                                                                      : filter_dims,
                                              &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (out->NumElements() == 0) return;
    AF_SWITCH_FLOAT(out->dtype(), ctx->SetStatus(errors::Unimplemented(type_string(), " of ", DataTypeString(out->dtype()))),
                    Run<T>(ctx, g, out));
  }

 private:
  template <class T>
  void Run(OpKernelContext* ctx, const ConvGeometry& g, Tensor* out) {
    if (K == ConvKind::kForward)
      Forward<T>(ctx, g, ctx->input(0).data<T>(), ctx->input(1).data<T>(), out->data<T>(), fused_ ? &epilogue_ : nullptr,
                 fused_ ? ctx->input(2).data<T>() : nullptr);
    else if (K == ConvKind::kInput) BackpropInput<T>(ctx, g, ctx->input(1).data<T>(), ctx->input(2).data<T>(), out->data<T>());
    else BackpropFilter<T>(ctx, g, ctx->input(0).data<T>(), ctx->input(2).data<T>(), out->data<T>());
  }
  Window2DAttrs attrs_;
  bool fused_ = false;  // a _FusedConv2D: bias (input 2) and activation after each block
  FusedEpilogue epilogue_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Conv2D").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}),
                   ConvOp<ConvKind::kForward>);
AF_REGISTER_KERNEL(KernelDefBuilder("_FusedConv2D").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}),
                   ConvOp<ConvKind::kForward>);
AF_REGISTER_KERNEL(KernelDefBuilder("Conv2DBackpropInput").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}),
                   ConvOp<ConvKind::kInput>);
AF_REGISTER_KERNEL(KernelDefBuilder("Conv2DBackpropFilter").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}),
                   ConvOp<ConvKind::kFilter>);

}  // namespace
}  // namespace actorflow
