// DeferredReleaseAllocator: an Allocator whose freed blocks go back to the
// allocator below only once a hook says it is safe: for the GPU, once the
// compute stream has run everything enqueued before the free.
//
// Why: a GPU's compute stream reuses a freed block at once, because whatever
// it enqueues next runs behind the readers already enqueued (ops/gpu/gpu_kernel.hpp).
// A copy on another stream (the feeds' host-to-device copy stream,
// devices/cuda/gpu_device.hpp) has no such order: writing into a block whose
// last readers on the compute stream have not run yet would corrupt them.
// So the copy stream takes its destinations from a pool of its own
// (gpu_copy_in_allocator, devices/cuda/gpu_allocator.hpp) through this
// allocator: a block freed here returns to that pool only when the compute
// stream has passed the free (`defer`, GpuDevice::ThenRun on the compute
// stream), and the copy stream can reuse it without waiting for anything.
//
// No CUDA here: the logic is tested on the host (pool_allocator_test).
//
// Contract: thread-safe. `defer(release)` must call `release` exactly once,
// later or at once, from any thread. SetDefer(nullptr) (the device going
// away, its streams synchronized) makes every later free immediate; it waits
// for no deferred release (those run when their hook calls them). Never
// destroyed once made while tensors may hold its blocks (the GPU device
// keeps them in a process-wide list, as its pools).
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "actorflow/core/allocator.hpp"

namespace actorflow {

class DeferredReleaseAllocator final : public Allocator {
 public:
  using Release = std::function<void()>;
  using Defer = std::function<void(Release)>;

  /// Blocks come from `base` (not owned; never destroyed before this).
  DeferredReleaseAllocator(Allocator* base, std::string name, Defer defer);

  std::string Name() const override { return name_; }
  void* AllocateRaw(size_t alignment, size_t bytes) override;
  /// Hands the block's return to `base` to the hook (or returns it now when
  /// there is no hook).
  void DeallocateRaw(void* ptr, size_t bytes) override;
  bool HostAccessible() const override { return base_->HostAccessible(); }
  int64_t cached_bytes() const override { return base_->cached_bytes(); }
  int64_t ReleaseCache() override { return base_->ReleaseCache(); }

  /// Replaces the hook; nullptr: frees are immediate from now on.
  void SetDefer(Defer defer);
  /// Blocks freed here whose return to `base` is still deferred.
  int64_t deferred_blocks() const;

 private:
  Allocator* const base_;
  const std::string name_;
  mutable std::mutex mu_;  // guards defer_ (held while the hook is called: SetDefer waits for it)
  Defer defer_;
  mutable std::mutex count_mu_;
  int64_t deferred_ = 0;  // guarded by count_mu_
};

}  // namespace actorflow
