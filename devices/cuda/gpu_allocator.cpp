#include "actorflow/devices/cuda/gpu_allocator.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>

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

static PoolAllocator* DevicePool(int kind, int ordinal);

void* GpuMemorySubAllocator::Alloc(size_t bytes) {
  ScopedDevice device(ordinal_);
  if (!device.ok()) return nullptr;
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) == cudaSuccess) return p;
  cudaGetLastError();  // clear the out-of-memory error
  // The GPU's two pools cache apart (gpu_allocator, gpu_copy_in_pool): before
  // failing, both give back what they keep (the caller's pool retries after
  // its own release, which finds nothing more), then one more try.
  for (int kind : {0, 1}) DevicePool(kind, ordinal_)->ReleaseCache();
  if (cudaMalloc(&p, bytes) == cudaSuccess) return p;
  cudaGetLastError();  // the caller reports it
  return nullptr;
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

// Device-memory pools of GPU `ordinal`, one per `kind` (0: the device's, 1:
// the copy stream's): never destroyed, like cpu_allocator().
static PoolAllocator* DevicePool(int kind, int ordinal) {
  static std::mutex mu;
  static auto* pools = new std::map<std::pair<int, int>, PoolAllocator*>();
  std::lock_guard<std::mutex> lock(mu);
  PoolAllocator*& pool = (*pools)[{kind, ordinal}];
  if (!pool) pool = new PoolAllocator(std::make_unique<GpuMemorySubAllocator>(ordinal));
  return pool;
}

PoolAllocator* gpu_allocator(int ordinal) { return DevicePool(0, ordinal); }
PoolAllocator* gpu_copy_in_pool(int ordinal) { return DevicePool(1, ordinal); }

PoolAllocator* gpu_host_allocator() {
  static auto* pool = new PoolAllocator(std::make_unique<PinnedHostSubAllocator>());
  return pool;
}

}  // namespace actorflow
