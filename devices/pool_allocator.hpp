// PoolAllocator: an Allocator that keeps freed blocks on per-size-class free
// lists and takes memory from a SubAllocator only when a list is empty.
//
// Built for memory whose system calls are slow or synchronizing (cudaMalloc
// and cudaFree wait for the whole GPU; cudaHostAlloc pins pages): the GPU's
// device memory and pinned host staging buffers (devices/cuda/gpu_allocator.hpp)
// are PoolAllocators over a CUDA SubAllocator; it has no CUDA dependency
// itself, so its logic is tested on the host (tests/pool_allocator_test.cpp).
//
// Requests are rounded up to a size class (SizeClass: multiples of 256 bytes,
// then eight classes per power of two, so at most 1/8 is wasted); a freed
// block goes back on its class's list, up to `cache_limit` cached bytes
// (beyond that, to the SubAllocator). When the SubAllocator is out of memory
// the cache is released and the call retried once. Alignment up to 256 bytes
// (what cudaMalloc guarantees) is honoured; larger requests fail.
//
// Thread-safe: one mutex guards the lists and the counters; the SubAllocator
// is called outside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorflow/core/allocator.hpp"

namespace actorflow {

/// Where a PoolAllocator's blocks come from (cudaMalloc, cudaHostAlloc, or
/// malloc in tests). Must be thread-safe.
class SubAllocator {
 public:
  virtual ~SubAllocator() = default;
  /// `bytes` (> 0) aligned to at least 256; nullptr when out of memory.
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
  virtual bool HostAccessible() const = 0;
  virtual std::string Name() const = 0;
};

/// What a PoolAllocator has done since it was created.
struct PoolAllocatorStats {
  int64_t num_allocs = 0;         // blocks handed out
  int64_t num_reused = 0;         // of those, taken from a free list
  int64_t num_system_allocs = 0;  // SubAllocator::Alloc calls that succeeded
  int64_t num_system_frees = 0;   // SubAllocator::Free calls
  int64_t bytes_reserved = 0;     // held from the SubAllocator now: in use (rounded) + cached
  int64_t bytes_cached = 0;       // on the free lists now
};

class PoolAllocator final : public Allocator {
 public:
  static constexpr size_t kMinBlock = 256;
  static constexpr size_t kMaxAlignment = 256;
  static constexpr size_t kUnlimited = ~size_t{0};

  /// `cache_limit`: most bytes kept on the free lists (kUnlimited: all).
  PoolAllocator(std::unique_ptr<SubAllocator> sub, size_t cache_limit = kUnlimited);
  /// Returns the cached blocks; blocks still in use are leaked (their tensors outlived the pool).
  ~PoolAllocator() override;

  /// The block size a request of `bytes` gets: a pure function, so DeallocateRaw finds the same list.
  static size_t SizeClass(size_t bytes);

  std::string Name() const override { return name_; }
  void* AllocateRaw(size_t alignment, size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;
  bool HostAccessible() const override { return host_accessible_; }
  int64_t cached_bytes() const override;
  int64_t ReleaseCache() override;

  PoolAllocatorStats stats() const;

 private:
  void* TakeCached(size_t block);

  const std::unique_ptr<SubAllocator> sub_;
  const std::string name_;
  const bool host_accessible_;
  const size_t cache_limit_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;  // by block size; guarded by mu_
  PoolAllocatorStats stats_;                                  // guarded by mu_
};

}  // namespace actorflow
