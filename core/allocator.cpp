#include "actorflow/core/allocator.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace actorflow {

bool Allocator::Reserve(size_t bytes) {
  if (bytes > static_cast<size_t>(INT64_MAX)) return false;
  const auto b = static_cast<int64_t>(bytes);
  // Compare-and-swap, never add-then-undo: a refused reservation must not be
  // seen, even for an instant, by a concurrent one (an 80 MiB step over a 64
  // MiB budget made a concurrent 16 KiB allocation fail with 0 bytes in use).
  const int64_t limit = limit_.load(std::memory_order_relaxed);
  int64_t current = in_use_.load(std::memory_order_relaxed);
  int64_t now;
  do {
    if (b > limit || current > limit - b) return false;
    now = current + b;
  } while (!in_use_.compare_exchange_weak(current, now, std::memory_order_relaxed));
  auto peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

std::string HumanBytes(int64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

namespace {
// A positive number from the first line of `path` ("max" and unreadable files: 0).
int64_t ReadLimitFile(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char line[64] = {0};
  const bool got = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  if (!got) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(line, &end, 10);
  if (end == line || v == 0 || v > static_cast<unsigned long long>(INT64_MAX)) return 0;
  return static_cast<int64_t>(v);
}
}  // namespace

int64_t DefaultMemoryLimit() {
  if (const char* env = std::getenv("ACTORFLOW_MEMORY_LIMIT_MB")) {
    char* end = nullptr;
    const long long mb = std::strtoll(env, &end, 10);
    if (end != env && mb > 0 && mb < (INT64_MAX >> 20)) return static_cast<int64_t>(mb) << 20;
  }
  int64_t limit = INT64_MAX;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = static_cast<int64_t>(pages) * page;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const int64_t cg = ReadLimitFile(path);
    if (cg > 0 && cg < limit) limit = cg;  // v1 says "no limit" with a huge number: min() ignores it
  }
  // Under `ulimit -v` malloc fails (or a thread cannot start) long before
  // physical memory runs out: a tensor past the address space left must be
  // refused by the budget, as a Status, not by an allocation deep in a kernel.
  struct rlimit as {};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      as.rlim_cur <= static_cast<rlim_t>(INT64_MAX)) {
    const int64_t share = static_cast<int64_t>(as.rlim_cur) / kAddressSpaceShareDen * kAddressSpaceShareNum;
    if (share > 0 && share < limit) limit = share;
  }
  return limit;
}

namespace {

// Host memory from aligned_alloc, with freed large blocks kept for reuse.
//
// glibc serves large blocks with a fresh mmap and returns them on free, so
// every step producing a 16 MB tensor paid ~4000 page faults and the kernel's
// zeroing of those pages: measured here, a 2048^2 MatMul through Session::Run
// ran at ~100 GFLOP/s against ~145 for the same Eigen call into a reused
// buffer. Large blocks are therefore rounded up to size classes (at most 1/8
// waste) and kept on per-class free lists, up to a bound on cached bytes
// (ACTORFLOW_ALLOCATOR_CACHE_MB, default 1024; 0 disables the cache); when
// the system is out of memory the cache is released and the call retried.
// glibc's defaults hurt a process that allocates and frees blocks of a few
// hundred KB on every step (Eigen's packing buffers, mid-sized tensors): each
// free trimmed the thread's heap (madvise) and the next call faulted the pages
// back in. Measured here: a 128^3 MatMul step took ~230 us instead of ~37. So
// the heap keeps up to 128 MB of free top memory, and blocks below 32 MB (the
// most glibc allows) come from the heap instead of a fresh mmap each time.
// ACTORFLOW_MALLOC_TUNING=0 keeps glibc's defaults.
void TuneMalloc() {
  const char* env = std::getenv("ACTORFLOW_MALLOC_TUNING");
  if (env && std::strcmp(env, "0") == 0) return;
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
    TuneMalloc();
    if (const char* env = std::getenv("ACTORFLOW_ALLOCATOR_CACHE_MB")) {
      char* end = nullptr;
      long long mb = std::strtoll(env, &end, 10);
      if (end != env && mb >= 0) cache_limit_ = static_cast<size_t>(mb) << 20;
    }
  }

  std::string Name() const override { return "cpu"; }

  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (alignment < kTensorAlignment) alignment = kTensorAlignment;
    if (bytes > SIZE_MAX / 2 || !Reserve(bytes)) return nullptr;
    const size_t block = BlockSize(alignment, bytes);
    void* p = nullptr;
    if (alignment == kTensorAlignment && block <= kSmallMax && cache_limit_ > 0) p = TakeSmall(block);
    if (!p && Cacheable(alignment, block)) p = TakeCached(block);
    if (!p) p = std::aligned_alloc(alignment, block);
    if (!p && ReleaseCache() > 0) p = std::aligned_alloc(alignment, block);
    if (!p) RecordFree(bytes);
    return p;
  }

  void DeallocateRaw(void* ptr, size_t bytes) override {
    if (!ptr) return;
    RecordFree(bytes);
    const size_t block = BlockSize(kTensorAlignment, bytes);
    if (block <= kSmallMax && cache_limit_ > 0 && PutSmall(ptr, block)) return;
    if (Cacheable(kTensorAlignment, block) && PutCached(ptr, block)) return;
    std::free(ptr);
  }

  int64_t cached_bytes() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(cached_);
  }

  int64_t ReleaseCache() override {
    std::unordered_map<size_t, std::vector<void*>> free_lists;
    size_t released;
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_lists.swap(free_lists_);
      released = cached_;
      cached_ = 0;
    }
    for (auto& [size, blocks] : free_lists)
      for (void* p : blocks) std::free(p);
    return static_cast<int64_t>(released);
  }

 private:
  static constexpr size_t kMinCachedBlock = size_t{256} << 10;

  // Small blocks (a scalar's or a short vector's tensor, header included) are
  // kept per thread, up to kSmallPerClass per 64-byte size class: a loop
  // allocates and frees a few of them per iteration, and aligned_alloc's
  // path through malloc costs more than the kernels that use them. Blocks
  // freed on a thread serve that thread's next allocations; a thread's cache
  // is freed when it exits (at most 8 * 128 * 512 bytes per thread). They are
  // not in cached_bytes() and ReleaseCache() does not free them;
  // ACTORFLOW_ALLOCATOR_CACHE_MB=0 turns them off with the large-block cache.
  static constexpr size_t kSmallMax = 512;
  static constexpr size_t kSmallPerClass = 128;
  struct SmallCache {
    std::vector<void*> lists[kSmallMax / kTensorAlignment + 1];
    ~SmallCache() {
      for (auto& l : lists)
        for (void* p : l) std::free(p);
      small_cache_alive() = false;  // tensors freed later on this thread (at exit) go to free()
    }
  };
  // Trivially destructible: still readable after the thread's cache is gone.
  static bool& small_cache_alive() {
    static thread_local bool alive = true;
    return alive;
  }
  static SmallCache& Small() {
    static thread_local SmallCache cache;
    return cache;
  }
  static void* TakeSmall(size_t block) {
    if (!small_cache_alive()) return nullptr;
    auto& l = Small().lists[block / kTensorAlignment];
    if (l.empty()) return nullptr;
    void* p = l.back();
    l.pop_back();
    return p;
  }
  static bool PutSmall(void* p, size_t block) {
    if (!small_cache_alive()) return false;
    auto& l = Small().lists[block / kTensorAlignment];
    if (l.size() >= kSmallPerClass) return false;
    try {
      l.push_back(p);  // a list that must grow for it when no memory is left: freed instead
    } catch (...) {
      return false;
    }
    return true;
  }

  // What is really allocated for `bytes`: a multiple of the alignment (as
  // aligned_alloc requires), rounded up to a size class when large. A pure
  // function of (alignment, bytes), so Deallocate finds the same class.
  static size_t BlockSize(size_t alignment, size_t bytes) {
    size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
    if (rounded < kMinCachedBlock) return rounded;
    int top = 63 - __builtin_clzll(static_cast<unsigned long long>(rounded));
    size_t step = size_t{1} << (top - 3);  // eight classes per power of two
    return (rounded + step - 1) / step * step;
  }

  bool Cacheable(size_t alignment, size_t block) const {
    return alignment == kTensorAlignment && block >= kMinCachedBlock && block <= cache_limit_;
  }

  void* TakeCached(size_t block) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_lists_.find(block);
    if (it == free_lists_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= block;
    return p;
  }

  bool PutCached(void* p, size_t block) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + block > cache_limit_) return false;
    try {
      free_lists_[block].push_back(p);  // likewise: a deallocation never throws
    } catch (...) {
      return false;
    }
    cached_ += block;
    return true;
  }

  size_t cache_limit_ = size_t{1} << 30;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;  // guarded by mu_
  size_t cached_ = 0;                                            // guarded by mu_
};

// A device's budget over the host allocator (see MakeBudgetAllocator).
class BudgetAllocator final : public Allocator {
 public:
  explicit BudgetAllocator(Allocator* base) : base_(base) {}
  std::string Name() const override { return base_->Name(); }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (!Reserve(bytes)) return nullptr;
    void* p = base_->AllocateRaw(alignment, bytes);
    if (!p) RecordFree(bytes);
    return p;
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    if (!ptr) return;
    RecordFree(bytes);
    base_->DeallocateRaw(ptr, bytes);
  }
  bool Charge(size_t bytes) override {
    if (!Reserve(bytes)) return false;
    if (base_->Charge(bytes)) return true;
    RecordFree(bytes);
    return false;
  }
  void Uncharge(size_t bytes) override {
    RecordFree(bytes);
    base_->Uncharge(bytes);
  }
  bool HostAccessible() const override { return base_->HostAccessible(); }
  int64_t cached_bytes() const override { return base_->cached_bytes(); }
  int64_t ReleaseCache() override { return base_->ReleaseCache(); }

 private:
  Allocator* base_;
};

}  // namespace

Allocator* cpu_allocator() {
  static CpuAllocator* a = [] {  // never destroyed: tensors may outlive main's locals
    auto* c = new CpuAllocator();
    c->set_limit(DefaultMemoryLimit());
    return c;
  }();
  return a;
}

Allocator* MakeBudgetAllocator(Allocator* base, int64_t limit) {
  static std::mutex mu;
  static auto* made = new std::vector<std::unique_ptr<Allocator>>();  // reachable, never freed
  auto a = std::make_unique<BudgetAllocator>(base);
  a->set_limit(limit);
  std::lock_guard<std::mutex> lock(mu);
  made->push_back(std::move(a));
  return made->back().get();
}

}  // namespace actorflow
