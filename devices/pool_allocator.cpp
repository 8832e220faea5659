#include "actorflow/devices/pool_allocator.hpp"

#include <cstdint>

namespace actorflow {

PoolAllocator::PoolAllocator(std::unique_ptr<SubAllocator> sub, size_t cache_limit)
    : sub_(std::move(sub)), name_(sub_->Name()), host_accessible_(sub_->HostAccessible()), cache_limit_(cache_limit) {}

PoolAllocator::~PoolAllocator() { ReleaseCache(); }

size_t PoolAllocator::SizeClass(size_t bytes) {
  const size_t rounded = bytes == 0 ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
  if (rounded <= 8 * kMinBlock) return rounded;
  const int top = 63 - __builtin_clzll(static_cast<unsigned long long>(rounded));
  const size_t step = size_t{1} << (top - 3);  // eight classes per power of two
  return (rounded + step - 1) / step * step;
}

void* PoolAllocator::TakeCached(size_t block) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_lists_.find(block);
  if (it == free_lists_.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  stats_.bytes_cached -= static_cast<int64_t>(block);
  ++stats_.num_allocs;
  ++stats_.num_reused;
  return p;
}

void* PoolAllocator::AllocateRaw(size_t alignment, size_t bytes) {
  if (alignment > kMaxAlignment || bytes > SIZE_MAX / 2 || !Reserve(bytes)) return nullptr;
  const size_t block = SizeClass(bytes);
  void* p = TakeCached(block);
  if (!p) {
    p = sub_->Alloc(block);
    if (!p && ReleaseCache() > 0) p = sub_->Alloc(block);
    if (!p) {
      RecordFree(bytes);
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocs;
    ++stats_.num_system_allocs;
    stats_.bytes_reserved += static_cast<int64_t>(block);
  }
  return p;
}

void PoolAllocator::DeallocateRaw(void* ptr, size_t bytes) {
  if (!ptr) return;
  RecordFree(bytes);
  const size_t block = SizeClass(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<size_t>(stats_.bytes_cached) + block <= cache_limit_) {
      free_lists_[block].push_back(ptr);
      stats_.bytes_cached += static_cast<int64_t>(block);
      return;
    }
    ++stats_.num_system_frees;
    stats_.bytes_reserved -= static_cast<int64_t>(block);
  }
  sub_->Free(ptr, block);
}

int64_t PoolAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.bytes_cached;
}

int64_t PoolAllocator::ReleaseCache() {
  std::unordered_map<size_t, std::vector<void*>> lists;
  int64_t released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lists.swap(free_lists_);
    released = stats_.bytes_cached;
    for (const auto& [block, blocks] : lists) stats_.num_system_frees += static_cast<int64_t>(blocks.size());
    stats_.bytes_reserved -= released;
    stats_.bytes_cached = 0;
  }
  for (auto& [block, blocks] : lists)
    for (void* p : blocks) sub_->Free(p, block);
  return released;
}

PoolAllocatorStats PoolAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace actorflow
