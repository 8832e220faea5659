// GpuDevice: one CUDA GPU as a Device, executed by an ordinary device actor
// (actors/device/device_actor.hpp).
//
// The Runtime creates one per GPU found at start (cudaGetDeviceCount; no
// driver or no GPU means none, silently), up to RuntimeOptions::num_gpu_devices,
// named "<task>/device:GPU:N" (the Runtime's task, by default
// "/job:localhost/replica:0/task:0") with N the CUDA ordinal.
// Each has one compute stream, where its kernels enqueue work in node order,
// and one copy stream for host<->device transfers (_Send and _Recv); both are
// non-blocking streams, so nothing synchronizes with CUDA's legacy default stream.
//
// Execution: every GPU kernel is an AsyncOpKernel (ops/gpu/gpu_kernel.hpp)
// that enqueues its work and returns; ThenRun has `done` called on the compute
// pool once that work has run (a cudaLaunchHostFunc callback, which may not
// call CUDA, only hands it over). The device actor's thread never waits for
// the GPU.
//
// Memory: float32 tensors of this device live in its device memory
// (gpu_allocator(ordinal), devices/cuda/gpu_allocator.hpp); tensors of every
// other dtype (int32 labels, reduction axes, shapes) stay in host memory,
// TensorFlow's HostMemory convention, so kernels read them on the host. The
// device allocator never hands out managed memory: host code must not
// dereference a float tensor of this device.
//
// Variables live in the host's container actor, so variable reads and updates
// (Assign, ApplyGradientDescent and the other optimizers' ops) have no GPU
// kernels: they run on the CPU, and a GPU partition receives the parameters it
// uses through _Recv at every step (and sends gradients back through _Send).
//
// Thread-safety: the streams and the cuBLAS handle are used from the device
// actor's thread (kernels launch there); ThenRun and Activate from any thread.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.hpp"
#include "devices/device.hpp"

namespace actorflow {

struct CublasApi;
class PoolAllocator;

/// A CUDA error as Internal naming what failed: "GPU:0: cudaMemcpyAsync: an illegal memory access ..." (OK for
/// cudaSuccess).
Status CudaStatus(cudaError_t e, const std::string& what);

/// The number of GPUs the CUDA runtime sees; 0 when it cannot tell (no driver, no device). Asked once per process.
int GpuCount();

class GpuDevice final : public Device {
 public:
  /// The device of GPU `ordinal`, with its streams; Internal naming the GPU when CUDA refuses.
  static Status Create(const std::string& task_name, int ordinal, ComputePool* pool, std::unique_ptr<GpuDevice>* out);
  /// Waits for both streams, then destroys them and the cuBLAS handle.
  ~GpuDevice() override;

  int ordinal() const { return ordinal_; }
  /// "GPU:0", for error messages.
  const std::string& short_name() const { return short_name_; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t copy_stream() const { return copy_; }
  /// Pinned host memory for staging copies (gpu_host_allocator()).
  PoolAllocator* host_allocator() const { return host_allocator_; }

  /// Makes this GPU the calling thread's current device (CUDA's is per thread).
  Status Activate() const;
  /// cuBLAS (loaded on first use: devices/cuda/cublas_api.hpp) and its handle
  /// bound to the compute stream, created on first use. Used from the device
  /// actor's thread only (cuBLAS handles are not thread-safe).
  Status Blas(const CublasApi** api, cublasHandle_t* handle);
  /// Calls `fn` on the compute pool once all work enqueued on `stream` so far
  /// has run. Never throws: if CUDA refuses the callback, it waits for the
  /// stream here and calls `fn` on this thread.
  void ThenRun(cudaStream_t stream, std::function<void()> fn) noexcept;

 private:
  GpuDevice(const std::string& task_name, int ordinal, ComputePool* pool);

  const int ordinal_;
  const std::string short_name_;
  PoolAllocator* const host_allocator_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  std::mutex blas_mu_;                  // guards the lazy creation of blas_
  const CublasApi* blas_api_ = nullptr;  // guarded by blas_mu_ until set
  cublasHandle_t blas_ = nullptr;       // guarded by blas_mu_ until created
};

}  // namespace actorflow
