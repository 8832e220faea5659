// GpuOpKernel: the base of kernels that compute on a GpuDevice, and helpers
// for writing them (ops/*/*_gpu.cu, ops/*/*_gpu.cpp).
//
// Contract. Launch() checks the inputs, allocates outputs (ctx->allocate_output
// gives device memory for float32, host memory for other dtypes) and enqueues
// its work on gpu->compute_stream(); it never waits for the GPU. Errors are
// set on ctx (AF_REQUIRES) as on the CPU. The node is done as soon as Launch
// returns (the executor runs it inline, on the device actor's thread): its
// consumers enqueue their work behind it on the same stream, so stream order
// is what orders them, and the host waits for the GPU once per step
// (GpuDevice::Sync, called by the executor at the step's end).
//
// Memory. Every kernel of a GPU, and every copy to or from it, runs on its
// one compute stream. So a buffer released (or reused by the allocator) once
// the work reading it is enqueued is safe: whatever uses it next is enqueued
// behind that work. Host buffers read by enqueued work (pinned staging) are
// another matter: Launch appends them to `keep`, released once the stream has
// run that far.
//
// Before Launch, every float32 input is checked to be in device memory (the
// host never dereferences GPU memory); inputs of other dtypes are in host
// memory by the device's convention (devices/cuda/gpu_device.hpp), unless
// the kernel says it also reads one in device memory (ReadsInDeviceMemory).
//
//   class ReluGpu : public GpuOpKernel {
//    public:
//     using GpuOpKernel::GpuOpKernel;
//     void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override { ... }
//   };
//   AF_REGISTER_KERNEL(KernelDefBuilder("Relu").Device(DEVICE_GPU).TypeConstraint<float>("T"), ReluGpu);
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "actorflow/devices/cuda/gpu_device.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

class GpuOpKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  /// Always: launching is cheap and never waits.
  bool RunsInline(const Tensor* inputs, int num_inputs) const final { return true; }
  void ComputeInline(OpKernelContext* ctx) final;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) final;

 protected:
  virtual void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) = 0;
};

/// The GpuDevice a kernel runs on; nullptr (with an Internal status set on ctx) when it is not one.
GpuDevice* GpuDeviceOf(OpKernelContext* ctx);

/// Copies `bytes` from host memory to device memory on `stream`, through a
/// pinned staging buffer (appended to `keep`: it must live until the copy ran).
Status CopyHostToDevice(GpuDevice* gpu, cudaStream_t stream, const void* src, void* dst, size_t bytes,
                        std::vector<Tensor>* keep);

/// Copies the bytes of host tensor `source` to device memory `dst` on
/// `stream`. A source already in pinned memory (gpu->host_allocator()) is
/// one transfer, staged nowhere. A large copy (kSlicedCopyBytes or more) is cut into slices that
/// pool jobs copy into pinned staging side by side, each slice's transfer
/// enqueued as soon as it is staged: the host's copying runs on several cores
/// and overlaps the DMA, where one memcpy on one thread was the bottleneck of
/// a large feed. `done` gets the status once every slice is enqueued (from a
/// pool thread, or from this one when the copy is small); only then may work
/// that reads `dst` be enqueued. `source` and the staging live until the
/// transfer ran.
void CopyHostToDeviceAsync(GpuDevice* gpu, cudaStream_t stream, Tensor source, void* dst,
                           std::function<void(const Status&)> done);
/// Copies smaller than this are one memcpy and one transfer.
constexpr size_t kSlicedCopyBytes = size_t{512} << 10;
/// Feeds (a GPU _Recv of a host tensor) of this size or more are copied on
/// the host-to-device stream, beside the queued kernels, and their node is
/// done once the copy ran; smaller ones are enqueued on the compute stream,
/// where the node is done at once (a wait for the copy would cost more than
/// the copy).
constexpr size_t kCopyStreamBytes = size_t{256} << 10;

/// The error of the last kernel launch on this thread, naming the node (OK when none).
Status LaunchStatus(const OpKernel& kernel);

#if defined(__CUDACC__)
/// A grid-stride loop over i in [0, n) (n: int64_t).
#define AF_GPU_GRID_STRIDE(i, n)                                                        \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
#endif

/// Threads per block of the element-wise and reduction kernels.
constexpr int kGpuThreads = 256;

/// Blocks for a grid-stride loop over n items (at least 1, at most 65535 * 16).
inline unsigned GpuBlocks(int64_t n) {
  const int64_t blocks = (n + kGpuThreads - 1) / kGpuThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 16 ? 65535 * 16 : blocks);
}

}  // namespace actorflow
