#include "actorflow/devices/deferred_release_allocator.hpp"

#include <utility>

namespace actorflow {

DeferredReleaseAllocator::DeferredReleaseAllocator(Allocator* base, std::string name, Defer defer)
    : base_(base), name_(std::move(name)), defer_(std::move(defer)) {}

void* DeferredReleaseAllocator::AllocateRaw(size_t alignment, size_t bytes) {
  if (!Reserve(bytes)) return nullptr;  // this allocator's own limit, if set
  void* p = base_->AllocateRaw(alignment, bytes);
  if (p == nullptr) RecordFree(bytes);
  return p;
}

void DeferredReleaseAllocator::DeallocateRaw(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  RecordFree(bytes);  // no longer in use here; back in `base` once released
  std::lock_guard<std::mutex> lock(mu_);
  if (!defer_) {
    base_->DeallocateRaw(ptr, bytes);
    return;
  }
  {
    std::lock_guard<std::mutex> count(count_mu_);
    ++deferred_;
  }
  // The hook may call the release at once, on this thread: it takes count_mu_, never mu_.
  defer_([this, ptr, bytes] {
    base_->DeallocateRaw(ptr, bytes);
    std::lock_guard<std::mutex> count(count_mu_);
    --deferred_;
  });
}

void DeferredReleaseAllocator::SetDefer(Defer defer) {
  std::lock_guard<std::mutex> lock(mu_);
  defer_ = std::move(defer);
}

int64_t DeferredReleaseAllocator::deferred_blocks() const {
  std::lock_guard<std::mutex> count(count_mu_);
  return deferred_;
}

}  // namespace actorflow
