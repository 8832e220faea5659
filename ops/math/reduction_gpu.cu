// Sum and Mean on a GPU, float32, over any axes that form one contiguous group
// once size-1 dims are dropped: all axes, one axis, or neighbouring axes (other
// layouts are Unimplemented on the GPU). The input is then [outer, R, inner]
// and each output element sums R values: one block per output row when
// inner == 1 (reducing the last axes), else one thread per output element,
// reading neighbouring columns together. The axes are int32 or int64 in host
// memory (the GPU device's convention). Empty reductions give 0 (NaN for a
// Mean), as on the CPU.
#include <limits>

#include "actorflow/devices/cuda/block_reduce.cuh"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/math/math_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// out[o] = sum of x[o * r .. o * r + r) (times scale): one block per row.
__global__ void ReduceRowsKernel(const float* x, float* out, int64_t rows, int64_t r, bool mean) {
  __shared__ float scratch[32];
  for (int64_t o = blockIdx.x; o < rows; o += gridDim.x) {
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < r; j += blockDim.x) sum += x[o * r + j];
    sum = BlockReduce(sum, SumOp(), 0.f, scratch);
    if (threadIdx.x == 0) out[o] = mean ? sum / static_cast<float>(r) : sum;
  }
}

// out[o * inner + k] = sum over j < r of x[(o * r + j) * inner + k]: one thread per output.
__global__ void ReduceMiddleKernel(const float* x, float* out, int64_t outer, int64_t r, int64_t inner, bool mean) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t o = i / inner, k = i % inner;
    const float* p = x + o * r * inner + k;
    float sum = 0.f;
    for (int64_t j = 0; j < r; ++j) sum += p[j * inner];
    out[i] = mean ? sum / static_cast<float>(r) : sum;
  }
}

__global__ void FillKernel(float* out, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = value;
}

template <bool kMean>
class GpuReductionOp : public GpuOpKernel {
 public:
  explicit GpuReductionOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    c->SetStatus(c->GetAttr("keep_dims", &keep_dims_));
  }

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& x = ctx->input(0);
    const Tensor& axes = ctx->input(1);
    AF_REQUIRES(ctx, axes.InHostMemory(),
                errors::Internal("reduction_indices of node '", name(), "' are in device memory; the GPU keeps ",
                                 DataTypeString(axes.dtype()), " tensors in host memory"));
    const int rank = x.dims();
    std::vector<bool> reduced;
    TensorShape out_shape;
    AF_REQUIRES_OK(ctx, ReductionDims(x, axes, keep_dims_, &reduced, &out_shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    const int64_t n_out = out->NumElements();
    if (n_out == 0) return;
    // [outer, r, inner]: the reduced dims (size-1 dims aside) must be adjacent.
    int64_t outer = 1, r = 1, inner = 1;
    int phase = 0;  // 0: before the reduced group, 1: in it, 2: after it
    for (int i = 0; i < rank; ++i) {
      const int64_t d = x.dim_size(i);
      if (d == 1) continue;
      if (reduced[i]) {
        AF_REQUIRES(ctx, phase < 2,
                    errors::Unimplemented(type_string(), " on the GPU reduces one contiguous group of axes; node '",
                                          name(), "' reduces axes ", axes.SummarizeValue(), " of ",
                                          x.shape().DebugString()));
        phase = 1;
        r *= d;
      } else if (phase == 0) {
        outer *= d;
      } else {
        phase = 2;
        inner *= d;
      }
    }
    cudaStream_t stream = gpu->compute_stream();
    if (x.NumElements() == 0) {  // nothing to reduce: the identity (NaN for a mean)
      const float fill = kMean ? std::numeric_limits<float>::quiet_NaN() : 0.f;
      FillKernel<<<GpuBlocks(n_out), kGpuThreads, 0, stream>>>(out->data<float>(), n_out, fill);
    } else if (inner == 1 && r > 1) {
      const unsigned blocks = static_cast<unsigned>(outer < 65535 ? outer : 65535);
      ReduceRowsKernel<<<blocks, kGpuThreads, 0, stream>>>(x.data<float>(), out->data<float>(), outer, r, kMean);
    } else if (r >= kColumnLanes) {  // long columns: a block of row lanes per 32 columns
      ColumnSumKernel<float><<<ColumnSumGrid(outer, inner), dim3(kColumnTile, kColumnLanes), 0, stream>>>(
          x.data<float>(), out->data<float>(), outer, r, inner, kMean ? static_cast<float>(r) : 1.f);
    } else {
      ReduceMiddleKernel<<<GpuBlocks(outer * inner), kGpuThreads, 0, stream>>>(x.data<float>(), out->data<float>(),
                                                                              outer, r, inner, kMean);
    }
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }

 private:
  bool keep_dims_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Sum").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuReductionOp<false>);
AF_REGISTER_KERNEL(KernelDefBuilder("Mean").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuReductionOp<true>);

}  // namespace
}  // namespace actorflow
