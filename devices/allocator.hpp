// Allocator: where tensor bytes come from.
//
// Every tensor buffer is allocated through an Allocator owned by a device. The
// CPU allocator returns 64-byte aligned host memory (Eigen's packet loads and
// BLAS want it); device allocators (CUDA) return memory the host cannot touch.
// Allocators are thread-safe: kernels allocate from pool threads. The CPU
// allocator keeps freed large blocks for reuse (see allocator.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace actorflow {

constexpr size_t kTensorAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  /// Returns nullptr when out of memory.
  virtual void* AllocateRaw(size_t alignment, size_t bytes) = 0;
  virtual void DeallocateRaw(void* ptr, size_t bytes) = 0;
  /// True when the host can read and write what this allocator returns.
  virtual bool HostAccessible() const { return true; }
  /// Bytes freed by tensors but kept for reuse, and giving them back to the
  /// system (returns how many); allocators without a cache keep none.
  virtual int64_t cached_bytes() const { return 0; }
  virtual int64_t ReleaseCache() { return 0; }

  /// Bytes currently allocated and the high-water mark, for step statistics.
  int64_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }
  int64_t peak_bytes_in_use() const { return peak_.load(std::memory_order_relaxed); }
  void ResetPeak() { peak_.store(bytes_in_use(), std::memory_order_relaxed); }

 protected:
  void RecordAlloc(size_t bytes);
  void RecordFree(size_t bytes) { in_use_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
};

/// The process-wide host allocator.
Allocator* cpu_allocator();

}  // namespace actorflow
