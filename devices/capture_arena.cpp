#include "actorflow/devices/capture_arena.hpp"

#include <memory>

namespace actorflow {

void* CaptureArena::AllocateRaw(size_t alignment, size_t bytes) {
  if (!Reserve(bytes)) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!released_ && alignment <= 256) {  // a freed block of the capture that fits, the smallest
      size_t best = kept_.size();
      for (size_t i = 0; i < kept_.size(); ++i)
        if (kept_[i].second >= bytes && kept_[i].second <= 2 * bytes + 256 &&
            (best == kept_.size() || kept_[i].second < kept_[best].second))
          best = i;
      if (best < kept_.size()) {
        void* p = kept_[best].first;
        kept_[best] = kept_.back();
        kept_.pop_back();
        return p;
      }
    }
  }
  void* p = base_->AllocateRaw(alignment, bytes);
  if (p == nullptr) {
    RecordFree(bytes);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  try {
    sizes_[p] = bytes;
  } catch (...) {
    base_->DeallocateRaw(p, bytes);
    RecordFree(bytes);
    return nullptr;
  }
  held_ += static_cast<int64_t>(bytes);
  return p;
}

void CaptureArena::DeallocateRaw(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  RecordFree(bytes);
  size_t size = bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(ptr);
    if (it != sizes_.end()) size = it->second;
    if (!released_) {
      try {
        kept_.emplace_back(ptr, size);  // the captured work still uses it at each launch
        return;
      } catch (...) {  // no memory to keep it: it stays out of the pool, lost until the process ends
        return;
      }
    }
    if (it != sizes_.end()) sizes_.erase(it);
    held_ -= static_cast<int64_t>(size);
  }
  base_->DeallocateRaw(ptr, size);
}

void CaptureArena::Release() {
  std::vector<std::pair<void*, size_t>> back;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    back.swap(kept_);
    for (const auto& b : back) {
      held_ -= static_cast<int64_t>(b.second);
      sizes_.erase(b.first);
    }
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
