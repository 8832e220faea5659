// PoolAllocator (the GPU's device and pinned-host pools, devices/cuda/gpu_allocator.hpp)
// over a host SubAllocator that counts its calls: size classes, reuse from the
// free lists, the cache limit, giving the cache back when the system is out of
// memory, and tensors in memory the host may not touch. Runs without a GPU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/deferred_release_allocator.hpp"
#include "actorflow/devices/pool_allocator.hpp"

using namespace actorflow;

namespace {

// malloc'd blocks, with a byte budget standing in for the device's memory.
class CountingSubAllocator final : public SubAllocator {
 public:
  struct Counts {
    int allocs = 0, frees = 0, failed = 0;
    size_t live_bytes = 0;
    size_t budget = SIZE_MAX;  // Alloc fails beyond this many live bytes
    bool host_accessible = true;
  };
  explicit CountingSubAllocator(Counts* counts) : c_(counts) {}
  void* Alloc(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (c_->live_bytes + bytes > c_->budget) {
      ++c_->failed;
      return nullptr;
    }
    void* p = std::aligned_alloc(PoolAllocator::kMaxAlignment, bytes);
    if (!p) return nullptr;
    ++c_->allocs;
    c_->live_bytes += bytes;
    return p;
  }
  void Free(void* ptr, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++c_->frees;
    c_->live_bytes -= bytes;
    std::free(ptr);
  }
  bool HostAccessible() const override { return c_->host_accessible; }
  std::string Name() const override { return "counting"; }

 private:
  std::mutex mu_;
  Counts* c_;
};

}  // namespace

TEST_CASE("PoolAllocator size classes: 256-byte steps, then eight per power of two") {
  CHECK(PoolAllocator::SizeClass(0) == 256);
  CHECK(PoolAllocator::SizeClass(1) == 256);
  CHECK(PoolAllocator::SizeClass(256) == 256);
  CHECK(PoolAllocator::SizeClass(257) == 512);
  CHECK(PoolAllocator::SizeClass(2048) == 2048);
  CHECK(PoolAllocator::SizeClass(2049) == 2304);
  CHECK(PoolAllocator::SizeClass(4097) == 4608);
  CHECK(PoolAllocator::SizeClass(size_t{1} << 20) == size_t{1} << 20);
  CHECK(PoolAllocator::SizeClass((size_t{1} << 20) + 1) == (size_t{1} << 20) + (size_t{1} << 17));
  size_t previous = 0;
  for (size_t bytes = 1; bytes < (size_t{1} << 30); bytes = bytes * 5 / 4 + 7) {
    const size_t c = PoolAllocator::SizeClass(bytes);
    INFO(bytes);
    CHECK(c >= bytes);
    CHECK(c % 256 == 0);                   // cudaMalloc's alignment is kept by every block
    CHECK(c - bytes <= std::max<size_t>(255, bytes / 8));  // at most 1/8 wasted above 2 KB
    CHECK(c >= previous);                  // monotone
    CHECK(PoolAllocator::SizeClass(c) == c);  // a class is its own class
    previous = c;
  }
}

TEST_CASE("PoolAllocator reuses freed blocks of the same class and counts what it does") {
  CountingSubAllocator::Counts counts;
  PoolAllocator pool(std::make_unique<CountingSubAllocator>(&counts));
  void* a = pool.AllocateRaw(64, 1000);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0);
  CHECK(pool.bytes_in_use() == 1000);
  pool.DeallocateRaw(a, 1000);
  CHECK(pool.bytes_in_use() == 0);
  CHECK(pool.cached_bytes() == 1024);
  CHECK(counts.frees == 0);  // kept, not given back

  void* b = pool.AllocateRaw(64, 900);  // same class (1024): the same block
  CHECK(b == a);
  CHECK(counts.allocs == 1);
  void* c = pool.AllocateRaw(64, 900);  // the list is empty now: a new block
  CHECK(c != a);
  CHECK(counts.allocs == 2);
  void* d = pool.AllocateRaw(64, 5000);  // another class
  CHECK(counts.allocs == 3);
  CHECK(pool.peak_bytes_in_use() == 900 + 900 + 5000);

  PoolAllocatorStats s = pool.stats();
  CHECK(s.num_allocs == 4);
  CHECK(s.num_reused == 1);
  CHECK(s.num_system_allocs == 3);
  CHECK(s.bytes_reserved == 1024 + 1024 + 5120);
  CHECK(s.bytes_cached == 0);

  pool.DeallocateRaw(b, 900);
  pool.DeallocateRaw(c, 900);
  pool.DeallocateRaw(d, 5000);
  CHECK(pool.cached_bytes() == 1024 + 1024 + 5120);
  CHECK(pool.ReleaseCache() == 1024 + 1024 + 5120);
  CHECK(counts.frees == 3);
  CHECK(counts.live_bytes == 0);
  s = pool.stats();
  CHECK(s.bytes_reserved == 0);
  CHECK(s.num_system_frees == 3);
  CHECK(pool.AllocateRaw(512, 16) == nullptr);  // more alignment than a block has
}

TEST_CASE("PoolAllocator gives blocks beyond its cache limit back at once") {
  CountingSubAllocator::Counts counts;
  PoolAllocator pool(std::make_unique<CountingSubAllocator>(&counts), /*cache_limit=*/3000);
  void* a = pool.AllocateRaw(64, 2048);
  void* b = pool.AllocateRaw(64, 2048);
  pool.DeallocateRaw(a, 2048);  // cached: 2048 <= 3000
  pool.DeallocateRaw(b, 2048);  // would make 4096: freed
  CHECK(pool.cached_bytes() == 2048);
  CHECK(counts.frees == 1);
  CHECK(counts.live_bytes == 2048);
}

TEST_CASE("PoolAllocator releases its cache and retries when the system is out of memory") {
  CountingSubAllocator::Counts counts;
  counts.budget = 8192;
  PoolAllocator pool(std::make_unique<CountingSubAllocator>(&counts));
  void* small = pool.AllocateRaw(64, 4096);
  REQUIRE(small != nullptr);
  pool.DeallocateRaw(small, 4096);  // cached: 4096 of the budget stays taken
  void* big = pool.AllocateRaw(64, 6000);  // 6144: fits only once the cache is gone
  REQUIRE(big != nullptr);
  CHECK(counts.failed == 1);
  CHECK(counts.frees == 1);
  CHECK(pool.cached_bytes() == 0);
  CHECK(pool.AllocateRaw(64, 4096) == nullptr);  // out of memory, nothing cached to give back
  pool.DeallocateRaw(big, 6000);
}

TEST_CASE("tensors from a pool of memory the host cannot touch keep their header apart") {
  CountingSubAllocator::Counts counts;
  counts.host_accessible = false;
  PoolAllocator pool(std::make_unique<CountingSubAllocator>(&counts));
  REQUIRE_FALSE(pool.HostAccessible());
  std::set<const void*> seen;
  for (int step = 0; step < 3; ++step) {
    Tensor t;
    REQUIRE(Tensor::Create(&pool, DT_FLOAT, TensorShape{10, 10}, &t).ok());
    CHECK_FALSE(t.InHostMemory());
    CHECK(t.SummarizeValue() == "<in device memory>");  // never read by the host
    CHECK(pool.bytes_in_use() == 400);  // the data only: the header is host memory
    seen.insert(t.raw_data());
  }
  CHECK(seen.size() == 1);  // each step's tensor got the block the last one freed
  CHECK(counts.allocs == 1);
  CHECK(pool.bytes_in_use() == 0);
  Tensor host(DT_FLOAT, TensorShape{2});
  CHECK(host.InHostMemory());
}

TEST_CASE("DeferredReleaseAllocator: a freed block is reused only once its release ran (the copy stream's pool)") {
  CountingSubAllocator::Counts counts;
  PoolAllocator pool(std::make_unique<CountingSubAllocator>(&counts));
  std::vector<DeferredReleaseAllocator::Release> pending;  // stands in for "once the compute stream has passed here"
  DeferredReleaseAllocator copy_in(&pool, "copy_in", [&](DeferredReleaseAllocator::Release r) {
    pending.push_back(std::move(r));
  });
  CHECK(copy_in.Name() == "copy_in");
  void* a = copy_in.AllocateRaw(64, 1000);
  REQUIRE(a != nullptr);
  CHECK(copy_in.bytes_in_use() == 1000);
  copy_in.DeallocateRaw(a, 1000);
  CHECK(copy_in.bytes_in_use() == 0);
  CHECK(copy_in.deferred_blocks() == 1);
  CHECK(pool.bytes_in_use() == 1000);  // not back in the pool yet
  void* b = copy_in.AllocateRaw(64, 1000);
  CHECK(b != a);  // the block whose readers may still be queued is not handed out
  REQUIRE(pending.size() == 1);
  pending[0]();  // the compute stream passed the free
  pending.clear();
  CHECK(copy_in.deferred_blocks() == 0);
  void* c = copy_in.AllocateRaw(64, 1000);
  CHECK(c == a);  // now it is
  // A tensor's buffer frees through it too, deferred the same way.
  {
    Tensor t;
    REQUIRE(Tensor::Create(&copy_in, DT_FLOAT, TensorShape{250}, &t).ok());
  }
  CHECK(pending.size() == 1);
  // Without a hook (the device gone, its streams synchronized), frees are immediate.
  copy_in.SetDefer(nullptr);
  copy_in.DeallocateRaw(b, 1000);
  copy_in.DeallocateRaw(c, 1000);
  CHECK(pending.size() == 1);
  pending[0]();
  CHECK(copy_in.deferred_blocks() == 0);
  CHECK(pool.bytes_in_use() == 0);
  // The hook may release at once, on the freeing thread.
  copy_in.SetDefer([](DeferredReleaseAllocator::Release r) { r(); });
  void* d = copy_in.AllocateRaw(64, 300);
  copy_in.DeallocateRaw(d, 300);
  CHECK(copy_in.deferred_blocks() == 0);
  CHECK(pool.bytes_in_use() == 0);
}
