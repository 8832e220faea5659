// GpuDevice: one CUDA GPU as a Device, executed by an ordinary device actor
// (actors/device/device_actor.hpp).
//
// The Runtime creates one per GPU found at start (cudaGetDeviceCount; no
// driver or no GPU means none, silently), up to RuntimeOptions::num_gpu_devices,
// named "<task>/device:GPU:N" (the Runtime's task, by default
// "/job:localhost/replica:0/task:0") with N the CUDA ordinal.
// Each has one compute stream, where its kernels enqueue work in node order;
// it is a non-blocking stream, so nothing synchronizes with CUDA's legacy
// default stream. One stream is what makes freed device memory reusable at
// once (ops/gpu/gpu_kernel.hpp). Two copy streams carry the large transfers
// beside it, as TensorFlow's host_to_device and device_to_host streams do:
// a feed's copy into device memory (the GPU _Recv) overlaps the kernels
// already queued, its destination taken from copy_in_allocator() (whose
// blocks are reused only once the compute stream has passed their free);
// a fetch's copy to the host (the GPU _Send) waits for the kernel that
// produced it through an event (WaitFor), not behind every later kernel.
//
// Execution: every GPU kernel enqueues its work and returns, inline on the
// device actor's thread (ops/gpu/gpu_kernel.hpp); the executor calls Sync at
// the end of each step, and a _Send to the host waits for its copy. Both use
// ThenRun: a function called on the compute pool once the stream's work so
// far has run (an event the GPU's poller thread watches,
// devices/cuda/gpu_event_poller.hpp; it reports a device error too, so a
// faulting kernel fails its step). The device actor's thread never waits for
// the GPU.
//
// Memory: float32 tensors of this device live in its device memory
// (gpu_allocator(ordinal), devices/cuda/gpu_allocator.hpp); tensors of every
// other dtype (int32 labels, reduction axes, shapes) stay in host memory,
// TensorFlow's HostMemory convention, so kernels read them on the host (but
// for an input a kernel also reads in device memory, OpKernel::
// ReadsInDeviceMemory: a captured step's class labels). The
// device allocator never hands out managed memory: host code must not
// dereference a float tensor of this device.
//
// Variables placed on a GPU keep their float32 values in its memory: the
// container actor holds the tensors, and the GPU kernels of Assign and the
// Apply* ops update them in place on the compute stream
// (ops/state/variable_ops_gpu.cu).
//
// Thread-safety: the stream and the cuBLAS handle are used from the device
// actor's thread (kernels launch there); ThenRun and Activate from any thread.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/devices/deferred_release_allocator.hpp"
#include "actorflow/devices/device.hpp"

namespace actorflow {

struct CublasApi;
struct CublasLtApi;
class GpuEventPoller;
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
  /// Waits for the stream, then destroys it and the cuBLAS handle.
  ~GpuDevice() override;

  int ordinal() const { return ordinal_; }
  /// "GPU:0", for error messages.
  const std::string& short_name() const { return short_name_; }
  cudaStream_t compute_stream() const { return compute_; }
  /// Where feeds are copied into device memory; nothing on it waits for the
  /// compute stream, so its destinations come from copy_in_allocator().
  cudaStream_t host_to_device_stream() const { return h2d_; }
  /// Where fetches are copied to the host, each after WaitFor(compute).
  cudaStream_t device_to_host_stream() const { return d2h_; }
  /// Device memory for what the host-to-device stream writes: a block freed
  /// here goes back to its pool (gpu_copy_in_pool) once the compute stream
  /// has run everything enqueued before the free.
  Allocator* copy_in_allocator() const { return copy_in_; }
  /// Makes `waiter` wait (on the GPU, the host never does) for the work
  /// enqueued on `producer` so far: an event recorded there.
  Status WaitFor(cudaStream_t waiter, cudaStream_t producer);
  /// Pinned host memory for staging copies (gpu_host_allocator()).
  PoolAllocator* host_allocator() const { return host_allocator_; }

  /// Makes this GPU the calling thread's current device (CUDA's is per thread).
  Status Activate() const;
  /// cuBLAS (loaded on first use: devices/cuda/cublas_api.hpp) and its handle
  /// bound to the compute stream, created on first use. Used from the device
  /// actor's thread only (cuBLAS handles are not thread-safe).
  Status Blas(const CublasApi** api, cublasHandle_t* handle);
  /// cuBLASLt, its handle and this GPU's GEMM workspace (kGemmWorkspaceBytes
  /// of device memory, what cuBLAS itself takes on Hopper), created on first
  /// use. The workspace serves one product at a time: only work enqueued on
  /// the compute stream may use it, which orders the products.
  Status BlasLt(const CublasLtApi** api, cublasLtHandle_t* handle, void** workspace, size_t* workspace_bytes);
  static constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;
  /// Calls `fn` on the compute pool once all work enqueued on `stream` so far
  /// has run. Never throws: if CUDA refuses the callback, it waits for the
  /// stream here and calls `fn` on this thread.
  void ThenRun(cudaStream_t stream, std::function<void()> fn) noexcept;
  /// As ThenRun, with the stream's status: cudaSuccess, or the error of a
  /// kernel that faulted before (a device error reaches every later callback).
  void ThenRunWithStatus(cudaStream_t stream, std::function<void(cudaError_t)> fn) noexcept;

  /// A step ends once its work on the compute stream has run: the host waits
  /// for the GPU once per step, not per kernel.
  bool SyncsAtStepEnd() const override { return true; }
  /// `done` on the compute pool once the compute stream's work so far has run,
  /// with the stream's error if a kernel failed (Internal naming the GPU).
  void Sync(std::function<void(const Status&)> done) override;

  /// Stream capture of the compute stream into a CUDA graph (relaxed mode).
  /// While capturing, functions ThenRun would call once the compute stream
  /// has passed a point (keep-alives, deferred frees) are kept with the
  /// captured work and called when it is destroyed; a host-to-device copy
  /// through staging (CopyHostToDevice) refuses, since its source would be
  /// read again at each launch.
  bool CanCapture() const override { return true; }
  Status BeginCapture(Allocator* arena) override;
  Status EndCapture(std::unique_ptr<CapturedWork>* out) override;
  Status CopyOnDevice(const void* src, void* dst, size_t bytes) override;
  /// CopyFromHostOn the compute stream.
  Status CopyFromHost(const Tensor& src, void* dst) override { return CopyFromHostOn(compute_, src, dst); }
  /// Enqueues a copy of host tensor `src` into device memory `dst` on
  /// `stream`: from pinned memory (host_allocator()) one transfer, `src`
  /// kept until it ran; from other host memory through a pinned staging
  /// buffer, kept so. On the compute stream not while capturing
  /// (Unimplemented: the copy would read the same bytes at each launch).
  Status CopyFromHostOn(cudaStream_t stream, const Tensor& src, void* dst);

 private:
  GpuDevice(const std::string& task_name, int ordinal, ComputePool* pool);

  const int ordinal_;
  const std::string short_name_;
  PoolAllocator* const host_allocator_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t h2d_ = nullptr;
  cudaStream_t d2h_ = nullptr;
  std::mutex order_mu_;               // guards order_event_ (recorded then waited for, as one)
  cudaEvent_t order_event_ = nullptr;
  DeferredReleaseAllocator* copy_in_ = nullptr;  // never destroyed (tensors may outlive the device)
  std::mutex blas_mu_;                  // guards the lazy creation of blas_
  const CublasApi* blas_api_ = nullptr;  // guarded by blas_mu_ until set
  cublasHandle_t blas_ = nullptr;       // guarded by blas_mu_ until created
  const CublasLtApi* lt_api_ = nullptr;  // the same, for cuBLASLt
  cublasLtHandle_t lt_ = nullptr;
  void* lt_workspace_ = nullptr;
  std::unique_ptr<GpuEventPoller> poller_;
  Allocator* const normal_allocator_;  // allocator() outside captures
  std::mutex capture_mu_;              // guards after_capture_, capture_failed_, the capture's start and end
  bool capture_failed_ = false;
  std::vector<std::function<void(cudaError_t)>> after_capture_;  // ThenRun's on the compute stream while capturing
};

}  // namespace actorflow
