#include "actorflow/devices/capture_arena.hpp"

#include <memory>

namespace actorflow {

void* CaptureArena::AllocateRaw(size_t alignment, size_t bytes) {
  if (!Reserve(bytes)) return nullptr;
  void* p = base_->AllocateRaw(alignment, bytes);
  if (p == nullptr) {
    RecordFree(bytes);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  held_ += static_cast<int64_t>(bytes);
  return p;
}

void CaptureArena::DeallocateRaw(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  RecordFree(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!released_) {
      kept_.emplace_back(ptr, bytes);  // the captured work still uses it at each launch
      return;
    }
    held_ -= static_cast<int64_t>(bytes);
  }
  base_->DeallocateRaw(ptr, bytes);
}

void CaptureArena::Release() {
  std::vector<std::pair<void*, size_t>> back;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    back.swap(kept_);
    for (const auto& b : back) held_ -= static_cast<int64_t>(b.second);
  }
  for (const auto& [p, n] : back) base_->DeallocateRaw(p, n);
}

int64_t CaptureArena::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

CaptureArena* NewCaptureArena(Allocator* base, const std::string& name) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::unique_ptr<CaptureArena>>();
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::make_unique<CaptureArena>(base, name));
  return kept->back().get();
}

}  // namespace actorflow
