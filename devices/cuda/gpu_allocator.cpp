#include "actorflow/devices/cuda/gpu_allocator.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

namespace actorflow {

namespace {
// Makes `ordinal` the calling thread's current device while alive.
class ScopedDevice {
 public:
  explicit ScopedDevice(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    ok_ = previous_ == ordinal || cudaSetDevice(ordinal) == cudaSuccess;
    if (previous_ == ordinal) previous_ = -1;  // nothing to restore
  }
  ~ScopedDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = false;
};
}  // namespace

void* GpuMemorySubAllocator::Alloc(size_t bytes) {
  ScopedDevice device(ordinal_);
  if (!device.ok()) return nullptr;
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the out-of-memory error: the caller reports it
    return nullptr;
  }
  return p;
}

void GpuMemorySubAllocator::Free(void* ptr, size_t bytes) {
  ScopedDevice device(ordinal_);
  cudaFree(ptr);
}

void* PinnedHostSubAllocator::Alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    p = nullptr;
  }
  return p;
}

void PinnedHostSubAllocator::Free(void* ptr, size_t bytes) { cudaFreeHost(ptr); }

PoolAllocator* gpu_allocator(int ordinal) {
  static std::mutex mu;
  static auto* pools = new std::map<int, PoolAllocator*>();  // never destroyed, nor their pools
  std::lock_guard<std::mutex> lock(mu);
  PoolAllocator*& pool = (*pools)[ordinal];
  if (!pool) pool = new PoolAllocator(std::make_unique<GpuMemorySubAllocator>(ordinal));
  return pool;
}

PoolAllocator* gpu_host_allocator() {
  static auto* pool = new PoolAllocator(std::make_unique<PinnedHostSubAllocator>());
  return pool;
}

}  // namespace actorflow
