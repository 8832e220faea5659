// Allocator: where tensor bytes come from.
//
// Every tensor buffer is allocated through an Allocator owned by a device. The
// CPU allocator returns 64-byte aligned host memory (Eigen's packet loads and
// BLAS want it); device allocators (CUDA) return memory the host cannot touch.
// Allocators are thread-safe: kernels allocate from pool threads. The CPU
// allocator keeps freed large blocks for reuse (see allocator.cpp).
//
// Every allocator has a budget (limit()): an allocation that would take the
// bytes in use past it fails (nullptr) exactly as if the system were out of
// memory, so running out of memory is a Status (ResourceExhausted) whatever
// the kernel's overcommit policy, and tests can prove it without ulimit. The
// process's host allocator is limited by DefaultMemoryLimit(); a device given
// a budget of its own (RuntimeOptions::device_memory_limit_bytes) allocates
// through a BudgetAllocator over it. Bytes a tensor holds outside its block
// (the characters of long strings, on the heap) count against the same
// budget when the code filling it charges them (Charge; Tensor::ChargeStringBytes).
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

  /// The most bytes this allocator hands out at once; AllocateRaw returns
  /// nullptr for a request that would pass it. Unlimited unless set.
  int64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  void set_limit(int64_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }

  /// Counts `bytes` that a block of this allocator holds elsewhere (the heap
  /// blocks of a string tensor's long elements) against limit(), as an
  /// allocation of that size would be; false, and nothing counted, when it
  /// does not fit. Uncharge gives them back (TensorBuffer does when freed).
  virtual bool Charge(size_t bytes) { return Reserve(bytes); }
  virtual void Uncharge(size_t bytes) { RecordFree(bytes); }

  /// Bytes currently allocated and the high-water mark, for step statistics.
  int64_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }
  int64_t peak_bytes_in_use() const { return peak_.load(std::memory_order_relaxed); }
  void ResetPeak() { peak_.store(bytes_in_use(), std::memory_order_relaxed); }

 protected:
  /// Counts `bytes` as in use unless that would pass limit(); false (and
  /// nothing counted) then. Call before taking the memory; RecordFree undoes it.
  bool Reserve(size_t bytes);
  void RecordFree(size_t bytes) { in_use_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> limit_{INT64_MAX};
};

/// The process-wide host allocator. Its limit() starts at DefaultMemoryLimit().
Allocator* cpu_allocator();

/// The machine's physical memory, or when lower the memory limit of the
/// process's cgroup (v2 memory.max or v1 memory.limit_in_bytes) or
/// 3/4 of its address-space limit (RLIMIT_AS, `ulimit -v`: the rest is for
/// code, thread stacks, malloc's arenas and what is not a tensor); the environment variable ACTORFLOW_MEMORY_LIMIT_MB, when set to a
/// positive number, instead.
int64_t DefaultMemoryLimit();
/// The share of RLIMIT_AS that DefaultMemoryLimit gives tensors: 3/4.
constexpr int64_t kAddressSpaceShareNum = 3, kAddressSpaceShareDen = 4;

/// An allocator with a budget of its own over another (a device's share of
/// host memory): it counts what it hands out and refuses past `limit`, and
/// takes the memory from `base` (which also applies its own limit).
/// Never destroyed once made (MakeBudgetAllocator keeps it): tensors it
/// allocated may outlive the runtime whose device it served.
Allocator* MakeBudgetAllocator(Allocator* base, int64_t limit);

/// "1.5 GiB", "64.0 MiB", "512 bytes": for messages.
std::string HumanBytes(int64_t bytes);

}  // namespace actorflow
