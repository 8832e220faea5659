#include "actorflow/devices/shard_board.hpp"

#include <thread>

namespace actorflow {

namespace {
constexpr uint64_t kPostShift = 32;
constexpr uint64_t kShardsShift = 16;
constexpr uint64_t kField = 0xffff;

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

ShardBoard::ShardBoard() = default;
ShardBoard::~ShardBoard() = default;

ShardBoard::Ticket ShardBoard::Post(int64_t total, int64_t shards, ShardFn fn, void* ctx) {
  if (shards < 2 || shards > kMaxShards) return {};
  uint64_t taken = taken_.load(std::memory_order_relaxed);
  int i;
  do {
    if (~taken == 0) return {};
    i = __builtin_ctzll(~taken);
  } while (!taken_.compare_exchange_weak(taken, taken | (uint64_t{1} << i), std::memory_order_acquire,
                                         std::memory_order_relaxed));
  Slot& s = slots_[i];
  // Nobody reads these now: every shard of the slot's last post has finished.
  s.fn = fn;
  s.ctx = ctx;
  s.total = total;
  s.error = nullptr;
  s.remaining.store(shards, std::memory_order_relaxed);
  const uint32_t post = ++s.post;
  // Published: shard 0 already the caller's.
  s.claim.store(uint64_t{post} << kPostShift | static_cast<uint64_t>(shards) << kShardsShift | 1,
                std::memory_order_release);
  open_.fetch_or(uint64_t{1} << i, std::memory_order_release);
  return {i, post};
}

int64_t ShardBoard::Claim(Slot& s, bool any, uint32_t post) {
  uint64_t w = s.claim.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t shards = (w >> kShardsShift) & kField, next = w & kField;
    if (next >= shards || (!any && static_cast<uint32_t>(w >> kPostShift) != post)) return -1;
    if (s.claim.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return static_cast<int64_t>(next);
  }
}

void ShardBoard::Run(Slot& s, int64_t shard, caf::execution_unit* eu) {
  // The claim (acquire) made the post's fields visible; they stay until this
  // shard is counted below.
  const int64_t shards = static_cast<int64_t>((s.claim.load(std::memory_order_relaxed) >> kShardsShift) & kField);
  const int64_t begin = s.total / shards * shard + s.total % shards * shard / shards;
  const int64_t end = s.total / shards * (shard + 1) + s.total % shards * (shard + 1) / shards;
  try {
    s.fn(s.ctx, begin, end, eu);
  } catch (...) {
    try {  // (a lock that fails leaves the error unreported, never the shard uncounted)
      std::lock_guard<std::mutex> l(s.mu);
      if (!s.error) s.error = std::current_exception();
    } catch (...) {
    }
  }
  // The last shard wakes a caller that sleeps: it sees sleeping set, or the
  // caller (setting it, then reading `remaining`) sees every shard done.
  if (s.remaining.fetch_sub(1, std::memory_order_seq_cst) == 1 && s.sleeping.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> l(s.mu);
    s.cv.notify_all();
  }
}

bool ShardBoard::HelpOpen(caf::execution_unit* eu) {
  bool ran = false;
  for (uint64_t open = open_.load(std::memory_order_acquire); open != 0; open &= open - 1) {
    Slot& s = slots_[__builtin_ctzll(open)];
    for (int64_t k; (k = Claim(s, true, 0)) >= 0; ran = true) {
      polled_.fetch_add(1, std::memory_order_relaxed);
      Run(s, k, eu);
    }
  }
  return ran;
}

void ShardBoard::HelpPost(Ticket t, caf::execution_unit* eu) {
  Slot& s = slots_[t.slot];
  for (int64_t k; (k = Claim(s, false, t.post)) >= 0;) {
    sent_.fetch_add(1, std::memory_order_relaxed);
    Run(s, k, eu);
  }
}

void ShardBoard::Finish(Ticket t) {
  Slot& s = slots_[t.slot];
  const uint64_t bit = uint64_t{1} << t.slot;
  Run(s, 0, nullptr);
  for (int64_t k; (k = Claim(s, false, t.post)) >= 0;) Run(s, k, nullptr);
  open_.fetch_and(~bit, std::memory_order_relaxed);  // every shard claimed
  // Wait only for shards other threads are running now: a few microseconds
  // of spinning (a worker on another core is finishing its shard), then
  // yielding (it may be waiting for this core), then sleeping.
  for (int spin = 0; spin < 4000 && s.remaining.load(std::memory_order_acquire) > 0; ++spin) {
    if (spin < 2000)
      Pause();
    else
      std::this_thread::yield();
  }
  if (s.remaining.load(std::memory_order_acquire) > 0) {
    std::unique_lock<std::mutex> l(s.mu);
    s.sleeping.store(true, std::memory_order_seq_cst);
    s.cv.wait(l, [&] { return s.remaining.load(std::memory_order_seq_cst) == 0; });
    s.sleeping.store(false, std::memory_order_relaxed);
  }
  // Every shard has finished (what they wrote is visible): no lock needed.
  std::exception_ptr error = std::move(s.error);
  s.error = nullptr;
  taken_.fetch_and(~bit, std::memory_order_release);
  if (error) std::rethrow_exception(error);
}

}  // namespace actorflow
