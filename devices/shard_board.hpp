// ShardBoard: where a ParallelFor posts its shards for the pool's idle workers.
//
// A caller (ComputePool::ParallelFor) takes one of the board's slots, posts
// its shards there and runs the first itself. Workers that are polling for
// work (WorkerPolicy: awake, between jobs) look at the board on every poll and
// take the shards left: no job to allocate, no queue, no wake-up, and the
// shard starts a cache-line transfer after it was posted. Shards nobody took
// the caller runs itself (caller-runs: it never waits for a shard no thread
// has started); it waits only for shards others are running. Only for shards
// more than the awake workers can take, the caller wakes sleeping ones with
// jobs that help with that post alone (HelpPost).
//
// Contract: a slot's state (the function, the range) is read only by a thread
// holding a claimed, unfinished shard of the current post, so the caller can
// reuse the slot once every shard has finished. A claim is a compare-and-swap
// of one word (post number, shards, next shard): a stale helper never claims a
// shard of a later post. Shards that throw: the first exception is rethrown
// by Finish after every shard has run. At most kSlots posts are open at once;
// Post returns an empty ticket beyond that (the caller then runs the range
// itself).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>

namespace caf {
class execution_unit;
}

namespace actorflow {

class ShardBoard {
 public:
  static constexpr int kSlots = 64;
  static constexpr int64_t kMaxShards = 0xffff;
  /// Runs units [begin, end) of the range on this thread; `eu` is the worker
  /// running it, null for the caller.
  using ShardFn = void (*)(void* ctx, int64_t begin, int64_t end, caf::execution_unit* eu);

  struct Ticket {
    int slot = -1;
    uint32_t post = 0;
    explicit operator bool() const { return slot >= 0; }
  };

  ShardBoard();
  ~ShardBoard();
  ShardBoard(const ShardBoard&) = delete;
  ShardBoard& operator=(const ShardBoard&) = delete;

  /// Posts `shards` (2..kMaxShards) shards of [0, total), shard 0 claimed for
  /// the caller; an empty ticket if every slot is taken.
  Ticket Post(int64_t total, int64_t shards, ShardFn fn, void* ctx);
  /// The caller: runs its shard 0 and every shard nobody took, waits for the
  /// rest, frees the slot, rethrows a shard's exception.
  void Finish(Ticket t);
  /// A polling worker: runs shards of any open post; whether it ran one.
  bool Help(caf::execution_unit* eu) { return open_.load(std::memory_order_acquire) != 0 && HelpOpen(eu); }
  /// A job sent for post `t`: runs shards of that post only, if any are left.
  void HelpPost(Ticket t, caf::execution_unit* eu);

  /// Workers asleep now (WorkerPolicy counts them): the others, polling or
  /// finishing a job, take posted shards without being woken.
  int Asleep() const { return asleep_.load(std::memory_order_relaxed); }
  void Sleeping(int d) { asleep_.fetch_add(d, std::memory_order_relaxed); }
  /// Shards run by polling workers (Help), and by jobs sent for their post
  /// (HelpPost), since the board was made.
  int64_t PolledShards() const { return polled_.load(std::memory_order_relaxed); }
  int64_t SentShards() const { return sent_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    // post number (32 bits) | shards (16) | next shard to claim (16)
    std::atomic<uint64_t> claim{0};
    std::atomic<int64_t> remaining{0};
    ShardFn fn = nullptr;
    void* ctx = nullptr;
    int64_t total = 0;
    uint32_t post = 0;  // the caller's, bumped per post
    std::atomic<bool> sleeping{false};  // the caller waits on cv
    std::mutex mu;
    std::condition_variable cv;
    std::exception_ptr error;  // written under mu; read by the caller once every shard finished
  };
  bool HelpOpen(caf::execution_unit* eu);
  // Claims one shard of `s` (of post `post` only, unless `any`); -1 if none.
  static int64_t Claim(Slot& s, bool any, uint32_t post);
  static void Run(Slot& s, int64_t shard, caf::execution_unit* eu);

  alignas(64) std::atomic<uint64_t> taken_{0};  // slots held by callers
  alignas(64) std::atomic<uint64_t> open_{0};   // slots with shards left to claim
  alignas(64) std::atomic<int> asleep_{0};
  std::atomic<int64_t> polled_{0};
  std::atomic<int64_t> sent_{0};
  Slot slots_[kSlots];
};

}  // namespace actorflow
