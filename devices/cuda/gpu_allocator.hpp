// Memory of the GPU device: device memory from cudaMalloc and pinned host
// memory from cudaHostAlloc, each behind a PoolAllocator
// (devices/pool_allocator.hpp) because both calls are slow and cudaFree and
// cudaFreeHost wait for the whole GPU. Managed (unified) memory is never used:
// a GPU tensor's bytes are device memory that the host must not touch
// (Allocator::HostAccessible() is false), and crossing to the host is an
// explicit copy (the GPU _Send and _Recv, ops/sendrecv/sendrecv_gpu.cpp).
//
// Both pools keep every freed block (a cudaFree on the way would stall the
// device actor's thread on the GPU) and give their cache back when a
// cudaMalloc or cudaHostAlloc fails, then retry. They are process-wide and
// never destroyed, like cpu_allocator(): tensors may outlive any Runtime.
#pragma once

#include <string>

#include "actorflow/devices/pool_allocator.hpp"

namespace actorflow {

/// cudaMalloc / cudaFree on GPU `ordinal` (the calling thread's current device is restored).
class GpuMemorySubAllocator final : public SubAllocator {
 public:
  explicit GpuMemorySubAllocator(int ordinal) : ordinal_(ordinal) {}
  void* Alloc(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  bool HostAccessible() const override { return false; }
  std::string Name() const override { return "gpu_" + std::to_string(ordinal_); }

 private:
  const int ordinal_;
};

/// cudaHostAlloc / cudaFreeHost: page-locked host memory, for asynchronous copies.
class PinnedHostSubAllocator final : public SubAllocator {
 public:
  void* Alloc(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  bool HostAccessible() const override { return true; }
  std::string Name() const override { return "gpu_host_pinned"; }
};

/// The device memory of GPU `ordinal` (0 <= ordinal < the number of GPUs).
PoolAllocator* gpu_allocator(int ordinal);
/// Pinned host memory for staging host<->device copies.
PoolAllocator* gpu_host_allocator();
/// Device memory of GPU `ordinal` that the host-to-device copy stream writes
/// (a feed's destination): a pool apart from gpu_allocator's, whose blocks
/// each GpuDevice frees through a DeferredReleaseAllocator
/// (devices/deferred_release_allocator.hpp), so none is rewritten while the
/// compute stream may still read it.
PoolAllocator* gpu_copy_in_pool(int ordinal);

}  // namespace actorflow
