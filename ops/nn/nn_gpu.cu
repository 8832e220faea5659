// Neural-network ops on a GPU, float32: BiasAdd and BiasAddGrad (NHWC and
// NCHW), Softmax, SoftmaxCrossEntropyWithLogits (labels a distribution per
// row) and SparseSoftmaxCrossEntropyWithLogits (labels class indices).
//
// Row-wise work (Softmax, the cross entropy, a channel's gradient sum) takes
// one block per row and reduces across the block (devices/cuda/block_reduce.cuh).
// The cross entropy's labels are int32 or int64 in host memory (the GPU
// device's convention): they are checked there, as on the CPU, and copied to
// the device through pinned staging. In a captured step they are in device
// memory (OpKernel::ReadsInDeviceMemory), read there unchecked: an
// out-of-range label gives its row NaN, as TensorFlow's GPU kernel does.
#include "actorflow/devices/cuda/block_reduce.cuh"
#include "actorflow/ops/gpu/elementwise.cuh"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// Row kernels launch at most this many blocks; grid-stride loops cover the rest.
constexpr int64_t kMaxRowBlocks = 65535;

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(rows < kMaxRowBlocks ? rows : kMaxRowBlocks); }

// ---------------------------------------------------------------------------
// BiasAdd, BiasAddGrad

// out[i] = v[i] + bias[channel of i]; a value's channel is (i / inner) % c.
__global__ void BiasAddKernel(const float* v, const float* bias, float* out, int64_t n, int64_t c, int64_t inner) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = v[i] + bias[(i / inner) % c];
}

// The same, channels last and fewer than 2^31 values: 32-bit index arithmetic
// (a 64-bit remainder per value cost as much as the memory traffic).
__global__ void BiasAddLastKernel(const float* v, const float* bias, float* out, uint32_t n, uint32_t c) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = v[i] + bias[i % c];
}

// The same, four floats per access, when c is a multiple of 4 and the arrays
// are 16-byte aligned (the four values share a row: channels ch..ch+3).
__global__ void BiasAddLastVec4Kernel(const float4* v, const float4* bias, float4* out, uint32_t n4, uint32_t c4) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
    const float4 x = v[i], b = bias[i % c4];
    out[i] = make_float4(x.x + b.x, x.y + b.y, x.z + b.z, x.w + b.w);
  }
}

// out[ch] = sum over o < outer, k < inner of g[(o * c + ch) * inner + k]: one block per channel.
__global__ void BiasAddGradKernel(const float* g, float* out, int64_t outer, int64_t c, int64_t inner) {
  __shared__ float scratch[32];
  const int64_t per_channel = outer * inner;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
      const int64_t o = j / inner, k = j % inner;
      sum += g[(o * c + ch) * inner + k];
    }
    sum = BlockReduce(sum, SumOp(), 0.f, scratch);
    if (threadIdx.x == 0) out[ch] = sum;
  }
}

// data_format: true for NCHW (channels second), false for NHWC (channels last).
bool IsNchw(OpKernelConstruction* c) {
  std::string fmt;
  c->SetStatus(c->GetAttr("data_format", &fmt));
  if (fmt != "NHWC" && fmt != "NCHW") c->SetStatus(errors::InvalidArgument("Invalid data_format '", fmt, "'"));
  return fmt == "NCHW";
}

class GpuBiasAddOp : public GpuOpKernel {
 public:
  explicit GpuBiasAddOp(OpKernelConstruction* c) : GpuOpKernel(c), nchw_(IsNchw(c)) {}

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& v = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    AF_REQUIRES(ctx, v.dims() >= 2,
                errors::InvalidArgument("Input tensor must be at least 2D: ", v.shape().DebugString()));
    AF_REQUIRES(ctx, bias.dims() == 1, errors::InvalidArgument("Biases must be 1D: ", bias.shape().DebugString()));
    const int channel_dim = nchw_ ? 1 : v.dims() - 1;
    const int64_t c = v.dim_size(channel_dim);
    AF_REQUIRES(ctx, bias.dim_size(0) == c,
                errors::InvalidArgument("Must provide as many biases as the channel dimension of the input tensor: ",
                                        bias.shape().DebugString(), " vs. ", v.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, v.shape(), &out));
    const int64_t n = v.NumElements();
    if (n == 0) return;
    int64_t inner = 1;
    for (int i = channel_dim + 1; i < v.dims(); ++i) inner *= v.dim_size(i);
    if (inner == 1 && n < (int64_t{1} << 31) && c % 4 == 0 && Aligned16(v.raw_data()) &&
        Aligned16(bias.raw_data()) && Aligned16(out->raw_data())) {
      BiasAddLastVec4Kernel<<<GpuBlocks(n / 4), kGpuThreads, 0, gpu->compute_stream()>>>(
          reinterpret_cast<const float4*>(v.data<float>()), reinterpret_cast<const float4*>(bias.data<float>()),
          reinterpret_cast<float4*>(out->data<float>()), static_cast<uint32_t>(n / 4), static_cast<uint32_t>(c / 4));
      AF_REQUIRES_OK(ctx, LaunchStatus(*this));
      return;
    }
    if (inner == 1 && n < (int64_t{1} << 31)) {
      BiasAddLastKernel<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(
          v.data<float>(), bias.data<float>(), out->data<float>(), static_cast<uint32_t>(n), static_cast<uint32_t>(c));
      AF_REQUIRES_OK(ctx, LaunchStatus(*this));
      return;
    }
    BiasAddKernel<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(v.data<float>(), bias.data<float>(),
                                                                           out->data<float>(), n, c, inner);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }

 private:
  const bool nchw_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("BiasAdd").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBiasAddOp);

class GpuBiasAddGradOp : public GpuOpKernel {
 public:
  explicit GpuBiasAddGradOp(OpKernelConstruction* c) : GpuOpKernel(c), nchw_(IsNchw(c)) {}

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& g = ctx->input(0);
    AF_REQUIRES(ctx, g.dims() >= 2,
                errors::InvalidArgument("Input tensor must be at least 2D: ", g.shape().DebugString()));
    const int channel_dim = nchw_ ? 1 : g.dims() - 1;
    const int64_t c = g.dim_size(channel_dim);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{c}, &out));
    if (c == 0) return;
    if (g.NumElements() == 0) {  // every sum is empty
      AF_REQUIRES_OK(ctx, CudaStatus(cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu->compute_stream()),
                                     gpu->short_name() + ": zeroing the output of " + name()));
      return;
    }
    int64_t inner = 1;
    for (int i = channel_dim + 1; i < g.dims(); ++i) inner *= g.dim_size(i);
    const int64_t outer = g.NumElements() / (c * inner);
    if (inner == 1) {  // channels last: the column sums of an [outer, c] matrix
      ColumnSumKernel<float><<<ColumnSumGrid(1, c), dim3(kColumnTile, kColumnLanes), 0, gpu->compute_stream()>>>(
          g.data<float>(), out->data<float>(), 1, outer, c, 1.f);
      AF_REQUIRES_OK(ctx, LaunchStatus(*this));
      return;
    }
    BiasAddGradKernel<<<RowBlocks(c), kGpuThreads, 0, gpu->compute_stream()>>>(g.data<float>(), out->data<float>(),
                                                                               outer, c, inner);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }

 private:
  const bool nchw_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("BiasAddGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBiasAddGradOp);

// ---------------------------------------------------------------------------
// Softmax

// The row's maximum m and sum(exp(in - m)), over the block (every thread gets both).
__device__ void RowMaxAndSumExp(const float* in, int64_t cols, float* scratch, float* m_out, float* sum_out) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, in[j]);
  m = BlockReduce(m, MaxOp(), -INFINITY, scratch);
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(in[j] - m);
  *m_out = m;
  *sum_out = BlockReduce(sum, SumOp(), 0.f, scratch);
}

// out = exp(x - max) / sum(exp(x - max)) per row of [rows, cols]; out may be x.
__global__ void SoftmaxKernel(const float* x, float* out, int64_t rows, int64_t cols) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = x + r * cols;
    float m, sum;
    RowMaxAndSumExp(in, cols, scratch, &m, &sum);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) out[r * cols + j] = expf(in[j] - m) / sum;
  }
}

class GpuSoftmaxOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& x = ctx->input(0);
    AF_REQUIRES(ctx, x.dims() >= 1,
                errors::InvalidArgument("logits must have >= 1 dimension, got ", x.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const int64_t cols = x.dim_size(x.dims() - 1);
    const int64_t rows = cols == 0 ? 0 : x.NumElements() / cols;
    if (rows == 0) return;
    SoftmaxKernel<<<RowBlocks(rows), kGpuThreads, 0, gpu->compute_stream()>>>(x.data<float>(), out->data<float>(),
                                                                              rows, cols);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Softmax").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuSoftmaxOp);

// ---------------------------------------------------------------------------
// SoftmaxCrossEntropyWithLogits

// Per row r of logits x and label distributions y [rows, cols]:
// loss[r] = sum_j y_j * (logsumexp(x) - x_j), backprop = softmax(x) - y
// (the CPU kernel's formulas, ops/nn/xent_ops.cpp).
__global__ void XentKernel(const float* x, const float* y, float* loss, float* backprop, int64_t rows, int64_t cols) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = x + r * cols;
    const float* label = y + r * cols;
    float* bp = backprop + r * cols;
    float m, sum;
    RowMaxAndSumExp(in, cols, scratch, &m, &sum);
    const float lse = m + logf(sum);
    float l = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      bp[j] = expf(in[j] - m) / sum - label[j];
      l += label[j] * (lse - in[j]);
    }
    l = BlockReduce(l, SumOp(), 0.f, scratch);
    if (threadIdx.x == 0) loss[r] = l;
  }
}

class GpuXentOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& f = ctx->input(0);
    const Tensor& l = ctx->input(1);
    AF_REQUIRES(ctx, f.dims() == 2,
                errors::InvalidArgument("logits must be 2-dimensional, got ", f.shape().DebugString()));
    AF_REQUIRES(ctx, f.shape() == l.shape(),
                errors::InvalidArgument("logits and labels must be same size: logits_size=", f.shape().DebugString(),
                                        " labels_size=", l.shape().DebugString()));
    const int64_t rows = f.dim_size(0), cols = f.dim_size(1);
    Tensor *loss, *bp;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{rows}, &loss));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, f.shape(), &bp));
    if (rows == 0) return;
    if (cols == 0) {  // every row's sum is empty: loss 0 (the CPU's)
      AF_REQUIRES_OK(ctx, CudaStatus(cudaMemsetAsync(loss->raw_data(), 0, loss->TotalBytes(), gpu->compute_stream()),
                                     gpu->short_name() + ": zeroing the loss of " + name()));
      return;
    }
    XentKernel<<<RowBlocks(rows), kGpuThreads, 0, gpu->compute_stream()>>>(f.data<float>(), l.data<float>(),
                                                                           loss->data<float>(), bp->data<float>(), rows,
                                                                           cols);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("SoftmaxCrossEntropyWithLogits").Device(DEVICE_GPU).TypeConstraint<float>("T"),
                   GpuXentOp);

// ---------------------------------------------------------------------------
// SparseSoftmaxCrossEntropyWithLogits

// Per row r of logits [rows, cols] with label y: loss[r] = logsumexp(x) - x[y],
// backprop = softmax(x) - onehot(y). A label out of [0, cols) gives the row
// NaN (TensorFlow's GPU kernel): only labels read in device memory get here
// unchecked (a captured step's, actors/device/step_capture.hpp); the host
// checks the others first.
template <typename L>
__global__ void SparseXentKernel(const float* x, const L* labels, float* loss, float* backprop, int64_t rows,
                                 int64_t cols) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = x + r * cols;
    float* bp = backprop + r * cols;
    const int64_t label = static_cast<int64_t>(labels[r]);
    if (label < 0 || label >= cols) {  // the same for the whole block: no barrier is skipped by some threads only
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) bp[j] = nanf("");
      if (threadIdx.x == 0) loss[r] = nanf("");
      continue;
    }
    float m, sum;
    RowMaxAndSumExp(in, cols, scratch, &m, &sum);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) bp[j] = expf(in[j] - m) / sum - (j == label ? 1.f : 0.f);
    if (threadIdx.x == 0) loss[r] = m + logf(sum) - in[label];
  }
}

class GpuSparseXentOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  bool ReadsInDeviceMemory(int i) const override { return i == 1; }  // the labels

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& f = ctx->input(0);
    const Tensor& l = ctx->input(1);
    AF_REQUIRES(ctx, f.dims() == 2,
                errors::InvalidArgument("logits must be 2-D, but got shape ", f.shape().DebugString()));
    AF_REQUIRES(ctx, l.dims() == 1 && l.dim_size(0) == f.dim_size(0),
                errors::InvalidArgument("logits and labels must have the same first dimension, got logits shape ",
                                        f.shape().DebugString(), " and labels shape ", l.shape().DebugString()));
    AF_REQUIRES(ctx, l.dtype() == DT_INT32 || l.dtype() == DT_INT64,
                errors::InvalidArgument("labels of node '", name(), "' must be int32 or int64, not ",
                                        DataTypeString(l.dtype())));
    const int64_t rows = f.dim_size(0), cols = f.dim_size(1);
    // Labels in host memory (the GPU device's convention for integers) are
    // checked here, then copied in as they are; in device memory (a captured
    // step's fixed buffer) they are read where they are.
    const bool on_host = l.InHostMemory();
    if (on_host) {
      const std::vector<int64_t> labels = TensorToInt64s(l);
      for (size_t i = 0; i < labels.size(); ++i) {
        AF_REQUIRES(ctx, labels[i] >= 0 && labels[i] < cols,
                    errors::InvalidArgument("Received a label value of ", labels[i],
                                            " which is outside the valid range of [0, ", cols,
                                            "). Label values: ", l.SummarizeValue(20)));
      }
    }
    Tensor *loss, *bp;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{rows}, &loss));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, f.shape(), &bp));
    if (rows == 0) return;
    const void* labels = l.raw_data();
    Tensor device_labels;  // freed once the kernel is enqueued: the allocator orders reuse on the compute stream
    if (on_host) {
      AF_REQUIRES_OK(ctx, Tensor::Create(gpu->allocator(), l.dtype(), TensorShape{rows}, &device_labels));
      AF_REQUIRES_OK(ctx, CopyHostToDevice(gpu, gpu->compute_stream(), l.raw_data(), device_labels.raw_data(),
                                           l.TotalBytes(), keep));
      labels = device_labels.raw_data();
    }
    if (l.dtype() == DT_INT32)
      SparseXentKernel<<<RowBlocks(rows), kGpuThreads, 0, gpu->compute_stream()>>>(
          f.data<float>(), static_cast<const int32_t*>(labels), loss->data<float>(), bp->data<float>(), rows, cols);
    else
      SparseXentKernel<<<RowBlocks(rows), kGpuThreads, 0, gpu->compute_stream()>>>(
          f.data<float>(), static_cast<const int64_t*>(labels), loss->data<float>(), bp->data<float>(), rows, cols);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(
    KernelDefBuilder("SparseSoftmaxCrossEntropyWithLogits").Device(DEVICE_GPU).TypeConstraint<float>("T"),
    GpuSparseXentOp);

}  // namespace
}  // namespace actorflow
