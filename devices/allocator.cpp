#include "devices/allocator.hpp"

#include <cstdint>
#include <cstdlib>

namespace actorflow {

void Allocator::RecordAlloc(size_t bytes) {
  auto now = in_use_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) + static_cast<int64_t>(bytes);
  auto peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (bytes > SIZE_MAX - alignment) return nullptr;
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
    if (p) RecordAlloc(bytes);
    return p;
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    RecordFree(bytes);
    std::free(ptr);
  }
};

}  // namespace

Allocator* cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator();  // never destroyed: tensors may outlive main's locals
  return a;
}

}  // namespace actorflow
