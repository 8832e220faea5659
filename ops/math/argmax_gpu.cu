// ArgMax and ArgMin on a GPU, float32 input. Their int32/int64 output lives
// in host memory (the GPU device's convention), so the kernel is
// asynchronous: it computes the indices into device memory, copies them to
// pinned staging on the compute stream and finishes once the copy has run,
// like a _Send to the host (an accuracy's argmax waits for its logits). Each
// output element scans its axis in one thread; ties keep the first index,
// as on the CPU.
#include <cstring>

#include "actorflow/devices/pool_allocator.hpp"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/math/math_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

template <bool kMax>
__global__ void ArgKernel(const float* x, int64_t outer, int64_t len, int64_t inner, int64_t* out) {
  AF_GPU_GRID_STRIDE(e, outer * inner) {
    const int64_t o = e / inner, i = e % inner;
    const float* base = x + o * len * inner + i;
    float best = base[0];
    int64_t idx = 0;
    for (int64_t j = 1; j < len; ++j) {
      const float v = base[j * inner];
      if (kMax ? v > best : v < best) {
        best = v;
        idx = j;
      }
    }
    out[e] = idx;
  }
}

template <bool kMax>
class GpuArgOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    Tensor* out = nullptr;
    Tensor staging;
    Status s;
    try {
      s = gpu ? Launch(ctx, gpu, &out, &staging) : ctx->status();
      if (s.ok() && staging.IsInitialized()) {
        gpu->ThenRunWithStatus(gpu->compute_stream(), [ctx, out, staging, done](cudaError_t e) {
          if (e != cudaSuccess) {
            ctx->SetStatus(CudaStatus(e, "ArgMax/ArgMin on the GPU"));
          } else if (out->dtype() == DT_INT64) {
            std::memcpy(out->raw_data(), staging.raw_data(), out->TotalBytes());
          } else {
            for (int64_t i = 0; i < out->NumElements(); ++i)
              out->data<int32_t>()[i] = static_cast<int32_t>(staging.data<int64_t>()[i]);
          }
          done();
        });
        return;
      }
    } catch (...) {  // no memory: the copy into staging may be enqueued already
      s = errors::ResourceExhausted("out of host memory running ", name(), " on the GPU");
      if (staging.IsInitialized()) cudaStreamSynchronize(gpu->compute_stream());
    }
    ctx->SetStatus(s);  // an error, or nothing to compute
    done();
  }

 private:
  // Checks, allocates the output (host memory) and enqueues the scan and the
  // copy into `staging`; leaves `staging` empty when there is nothing to do.
  Status Launch(OpKernelContext* ctx, GpuDevice* gpu, Tensor** out, Tensor* staging) {
    const Tensor& x = ctx->input(0);
    if (x.NumElements() > 0 && x.InHostMemory())
      return errors::Internal("input of node '", name(), "' is a float tensor in host memory on ", gpu->short_name());
    TensorShape out_shape;
    int64_t outer, len, inner;
    AF_RETURN_IF_ERROR(ArgReductionDims(x, ctx->input(1), &out_shape, &outer, &len, &inner));
    AF_RETURN_IF_ERROR(ctx->allocate_output(0, out_shape, out));
    const int64_t n = (*out)->NumElements();
    if (n == 0) return Status::OK();
    AF_RETURN_IF_ERROR(gpu->Activate());
    Tensor indices;
    AF_RETURN_IF_ERROR(Tensor::Create(gpu->allocator(), DT_INT64, out_shape, &indices));
    AF_RETURN_IF_ERROR(Tensor::Create(gpu->host_allocator(), DT_INT64, out_shape, staging)
                           .WithContext("pinned staging buffer on " + gpu->short_name()));
    ArgKernel<kMax><<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(
        x.data<float>(), outer, len, inner, indices.data<int64_t>());
    AF_RETURN_IF_ERROR(LaunchStatus(*this));
    const std::string what = gpu->short_name() + ": cudaMemcpyAsync (device to host) of " + name();
    const cudaError_t e = cudaMemcpyAsync(staging->raw_data(), indices.raw_data(), indices.TotalBytes(),
                                          cudaMemcpyDeviceToHost, gpu->compute_stream());
    if (e == cudaSuccess) return Status::OK();
    *staging = Tensor();  // nothing enqueued to wait for: fail now
    return CudaStatus(e, what);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ArgMax").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuArgOp<true>);
AF_REGISTER_KERNEL(KernelDefBuilder("ArgMin").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuArgOp<false>);

}  // namespace
}  // namespace actorflow
