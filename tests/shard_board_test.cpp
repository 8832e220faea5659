// The shard board (devices/shard_board.hpp) and ComputePool::ParallelFor on
// it: every unit of a range runs once, helpers that poll take shards, a
// helper of a finished post takes nothing of the next, a shard's exception
// reaches the caller, a full board runs the range on the caller.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/shard_board.hpp"

using namespace actorflow;

namespace {

// Counts how often each unit of [0, n) ran and whether a thread other than
// `caller` ran some.
struct Coverage {
  explicit Coverage(int64_t n) : runs(static_cast<size_t>(n)) {}
  std::vector<std::atomic<int>> runs;
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> elsewhere{false};
  std::atomic<int> shards{0};
  int64_t throw_at = -1;  // a shard starting here throws (after counting its units)
  std::chrono::milliseconds helper_delay{0};  // how long a shard another thread runs takes

  static void Fn(void* ctx, int64_t begin, int64_t end, caf::execution_unit*) {
    auto* c = static_cast<Coverage*>(ctx);
    for (int64_t i = begin; i < end; ++i) ++c->runs[static_cast<size_t>(i)];
    ++c->shards;
    if (std::this_thread::get_id() != c->caller) {
      c->elsewhere = true;
      std::this_thread::sleep_for(c->helper_delay);
    }
    if (begin == c->throw_at) throw std::runtime_error("shard failed");
  }
  bool EachOnce() const {
    for (const auto& r : runs)
      if (r.load() != 1) return false;
    return true;
  }
};

// A thread that takes shards from `board` as a polling worker does, until destroyed.
class Helper {
 public:
  explicit Helper(ShardBoard* board)
      : thread_([this, board] {
          while (!stop_.load())
            if (!board->Help(nullptr)) std::this_thread::yield();
        }) {}
  ~Helper() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("ShardBoard: each unit runs once, a polling helper takes shards, the caller the rest") {
  ShardBoard board;
  {  // no helper: the caller runs every shard
    Coverage c(1000);
    auto t = board.Post(1000, 7, &Coverage::Fn, &c);
    REQUIRE(t);
    board.Finish(t);
    CHECK(c.EachOnce());
    CHECK(c.shards.load() == 7);
    CHECK_FALSE(c.elsewhere.load());
  }
  Helper helper(&board);
  bool helped = false;
  for (int i = 0; i < 20000 && !helped; ++i) {
    Coverage c(1001);
    auto t = board.Post(1001, 4, &Coverage::Fn, &c);
    REQUIRE(t);
    // The caller's shard takes long enough for the helper to join in.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (std::chrono::steady_clock::now() < until && c.shards.load() == 0) std::this_thread::yield();
    board.Finish(t);
    REQUIRE(c.EachOnce());
    REQUIRE(c.shards.load() == 4);
    helped = c.elsewhere.load();
  }
  CHECK(helped);

  // A helper's long shard: the caller, done with its own, sleeps until it ends.
  Coverage slow(100);
  slow.helper_delay = std::chrono::milliseconds(50);
  auto t = board.Post(100, 2, &Coverage::Fn, &slow);
  REQUIRE(t);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!slow.elsewhere.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  REQUIRE(slow.elsewhere.load());  // the helper runs shard 1
  board.Finish(t);
  CHECK(slow.EachOnce());
  CHECK(slow.shards.load() == 2);
}

TEST_CASE("ShardBoard: a helper sent for a finished post takes nothing of the slot's next post") {
  ShardBoard board;
  Coverage first(100);
  const auto old = board.Post(100, 2, &Coverage::Fn, &first);
  REQUIRE(old);
  board.Finish(old);
  board.HelpPost(old, nullptr);  // late: its post is over
  CHECK(first.EachOnce());

  Coverage second(100);
  const auto t = board.Post(100, 3, &Coverage::Fn, &second);
  REQUIRE(t.slot == old.slot);  // the freed slot is taken again
  board.HelpPost(old, nullptr);
  CHECK(second.shards.load() == 0);  // the stale helper claimed nothing
  board.HelpPost(t, nullptr);        // this post's helper takes shards 1 and 2
  CHECK(second.shards.load() == 2);
  board.Finish(t);
  CHECK(second.EachOnce());
  CHECK(second.shards.load() == 3);
}

TEST_CASE("ShardBoard: a shard's exception reaches the caller after every shard ran; a full board refuses") {
  ShardBoard board;
  Helper helper(&board);
  for (int i = 0; i < 200; ++i) {
    Coverage c(400);
    c.throw_at = 100 * (i % 4);
    auto t = board.Post(400, 4, &Coverage::Fn, &c);
    REQUIRE(t);
    CHECK_THROWS_WITH(board.Finish(t), "shard failed");
    REQUIRE(c.EachOnce());
  }
  // Every slot held by an unfinished post: the next is refused, then all finish.
  std::vector<std::unique_ptr<Coverage>> held;
  std::vector<ShardBoard::Ticket> tickets;
  for (int i = 0; i < ShardBoard::kSlots; ++i) {
    held.push_back(std::make_unique<Coverage>(10));
    tickets.push_back(board.Post(10, 2, &Coverage::Fn, held.back().get()));
    REQUIRE(tickets.back());
  }
  Coverage refused(10);
  CHECK_FALSE(board.Post(10, 2, &Coverage::Fn, &refused));
  for (size_t i = 0; i < tickets.size(); ++i) {
    board.Finish(tickets[i]);
    CHECK(held[i]->EachOnce());
  }
  const auto again = board.Post(10, 2, &Coverage::Fn, &refused);  // a slot is free again
  REQUIRE(again);
  board.Finish(again);
  CHECK(refused.EachOnce());
}

TEST_CASE("ParallelFor: shards run on polling workers as pool jobs, nest, and cover the range from many callers") {
  RuntimeOptions o;
  o.num_threads = 2;
  Runtime rt(o);
  ComputePool* pool = rt.compute_pool();
  const auto caller = std::this_thread::get_id();

  // A worker polls between jobs: a shard of a ParallelFor runs there soon,
  // as a pool job (so what it splits in turn is split too).
  REQUIRE(pool->board() != nullptr);
  const int64_t polled_before = pool->board()->PolledShards();
  bool on_worker = false, worker_in_job = true;
  for (int i = 0; i < 20000 && pool->board()->PolledShards() == polled_before; ++i) {
    std::vector<std::atomic<int>> runs(4000);
    pool->ParallelFor(4000, 1000, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) ++runs[static_cast<size_t>(k)];
      if (std::this_thread::get_id() != caller) {
        on_worker = true;
        worker_in_job = worker_in_job && ComputePool::InPoolJob();
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
    bool each_once = true;
    for (auto& r : runs) each_once = each_once && r.load() == 1;
    REQUIRE(each_once);
  }
  CHECK(on_worker);
  CHECK(worker_in_job);
  CHECK(pool->board()->PolledShards() > polled_before);  // taken by a polling worker, not only by woken ones

  // Idle workers fall asleep (counted on the board); a ParallelFor then wakes
  // one with a job for its shard.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool all_asleep = false;
  while (!all_asleep && std::chrono::steady_clock::now() < until) {
    all_asleep = pool->board()->Asleep() == pool->NumThreads();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(all_asleep);
  const int64_t sent_before = pool->board()->SentShards();
  std::atomic<bool> woken_ran{false};
  pool->ParallelFor(2, 1000000, [&](int64_t b, int64_t) {
    if (std::this_thread::get_id() != caller) {
      woken_ran = true;
      return;
    }
    // The caller's shard waits for the other one to start elsewhere (else
    // the caller would take it after this one).
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (b == 0 && !woken_ran.load() && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  });
  CHECK(woken_ran.load());
  CHECK(pool->board()->SentShards() > sent_before);  // by the job that woke it

  // A view's ParallelFor from outside its jobs: every unit once.
  ComputePool view(pool, 2);
  std::vector<std::atomic<int>> view_runs(5000);
  view.ParallelFor(5000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) ++view_runs[static_cast<size_t>(k)];
  });
  bool view_once = true;
  for (auto& r : view_runs) view_once = view_once && r.load() == 1;
  CHECK(view_once);

  // Nested, a shard that throws, and more callers at once than the board has slots.
  std::atomic<int> failures{0}, wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < ShardBoard::kSlots + 16; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<std::atomic<int>> runs(600);
        try {
          pool->ParallelFor(6, 100000, [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              pool->ParallelFor(100, 10000, [&](int64_t ib, int64_t ie) {
                for (int64_t j = ib; j < ie; ++j) ++runs[static_cast<size_t>(k * 100 + j)];
              });
              if (c % 7 == 0 && rep % 5 == 0 && k == 5) throw std::runtime_error("inner failure");
            }
          });
          if (c % 7 == 0 && rep % 5 == 0) ++wrong;  // should have thrown
        } catch (const std::runtime_error&) {
          ++failures;
        }
        for (auto& r : runs)
          if (r.load() != 1) ++wrong;
      }
    });
  for (auto& t : callers) t.join();
  CHECK(wrong.load() == 0);
  CHECK(failures.load() == 12 * 4);  // callers 0, 7, ..., 77 (12 of them), reps 0, 5, 10, 15
}

TEST_CASE("ParallelFor under another CAF scheduler: a board of the pool's own, its shards sent to workers as jobs") {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t{2});
  caf::actor_system sys(cfg);
  ComputePool pool(&sys, 2);
  REQUIRE(pool.board() != nullptr);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> elsewhere{false};
  std::vector<std::atomic<int>> runs(2);
  pool.ParallelFor(2, 1000000, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) ++runs[static_cast<size_t>(k)];
    if (std::this_thread::get_id() != caller) {
      elsewhere = true;
      return;
    }
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (b == 0 && !elsewhere.load() && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  });
  CHECK(runs[0].load() == 1);
  CHECK(runs[1].load() == 1);
  CHECK(elsewhere.load());
  CHECK(pool.board()->SentShards() == 1);
}
