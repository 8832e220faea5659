// The compute pool and its limited views (a CPU device's share of the pool).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"

using namespace actorflow;

namespace {

// Waits until `flag` is set, for at most `limit`; returns whether it was.
bool WaitFor(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// A job on `first` waits (bounded by `wait`) for a job on `second` to start.
// Returns whether they overlapped; both have finished on return.
bool TwoJobsOverlap(ComputePool* first, ComputePool* second, std::chrono::milliseconds wait) {
  std::atomic<bool> second_started{false}, overlapped{false};
  std::atomic<int> finished{0};
  first->Schedule([&] {
    overlapped = WaitFor(second_started, wait);
    ++finished;
  });
  second->Schedule([&] {
    second_started = true;
    ++finished;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (finished.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  REQUIRE(finished.load() == 2);
  return overlapped.load();
}

bool TwoJobsOverlap(ComputePool* pool) { return TwoJobsOverlap(pool, pool, std::chrono::milliseconds(300)); }

}  // namespace

TEST_CASE("the shared pool runs two jobs at once; a view limited to one runs them one after the other") {
  RuntimeOptions o;
  o.num_threads = 2;
  Runtime rt(o);
  CHECK(TwoJobsOverlap(rt.compute_pool()));

  ComputePool one(rt.compute_pool(), 1);
  CHECK(one.MaxConcurrency() == 1);
  CHECK(one.MaxParallelism() == 1);
  CHECK(one.NumThreads() == 2);
  CHECK_FALSE(TwoJobsOverlap(&one));

  ComputePool two(rt.compute_pool(), 2);
  CHECK(two.MaxParallelism() == 2);
  CHECK(TwoJobsOverlap(&two));
}

TEST_CASE("a job of a limited view that splits its work is not held back by the view's limit") {
  RuntimeOptions o;
  o.num_threads = 2;
  Runtime rt(o);
  ComputePool view(rt.compute_pool(), 1);
  std::atomic<bool> inner_ran{false}, saw_inner{false}, done{false};
  view.Schedule([&] {
    // Work the job itself schedules (a shard, an Eigen task) starts although
    // the job holds the view's only slot.
    view.Schedule([&] { inner_ran = true; });
    saw_inner = WaitFor(inner_ran, std::chrono::seconds(10));
    done = true;
  });
  REQUIRE(WaitFor(done, std::chrono::seconds(30)));
  CHECK(saw_inner.load());

  // A job held back runs once the slot is free, and a job that throws frees its slot.
  std::atomic<int> ran{0};
  for (int i = 0; i < 8; ++i)
    view.Schedule([&, i] {
      ++ran;
      if (i % 3 == 0) throw std::runtime_error("kernel failure");
    });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ran.load() < 8 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  CHECK(ran.load() == 8);
}

TEST_CASE("cpu_device_threads gives each CPU device its own share of the runtime's pool") {
  RuntimeOptions o;
  o.num_threads = 2;
  o.num_cpu_devices = 2;
  o.cpu_device_threads = 1;
  Runtime rt(o);
  ComputePool* p0 = rt.devices()[0]->compute_pool();
  ComputePool* p1 = rt.devices()[1]->compute_pool();
  CHECK(p0 != p1);
  CHECK(p0->MaxConcurrency() == 1);
  CHECK(p0->MaxParallelism() == 1);
  // Each device runs one job at a time, but the two devices run side by side.
  CHECK_FALSE(TwoJobsOverlap(p0));
  CHECK(TwoJobsOverlap(p0, p1, std::chrono::seconds(10)));

  RuntimeOptions shared = o;
  shared.cpu_device_threads = 0;
  Runtime rt2(shared);
  CHECK(rt2.devices()[0]->compute_pool() == rt2.compute_pool());
  CHECK(rt2.devices()[1]->compute_pool() == rt2.compute_pool());
}

TEST_CASE("ParallelFor splits by Eigen's cost model: small work runs on the caller and large work in shards") {
  RuntimeOptions o;
  o.num_threads = 4;
  Runtime rt(o);
  ComputePool* pool = rt.compute_pool();
  REQUIRE(pool->MaxParallelism() == 4);
  auto shards_of = [&](int64_t n, int64_t cost_per_unit) {
    std::atomic<int> calls{0};
    std::atomic<int64_t> covered{0};
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> elsewhere{false};
    pool->ParallelFor(n, cost_per_unit, [&](int64_t begin, int64_t end) {
      ++calls;
      covered += end - begin;
      if (std::this_thread::get_id() != caller) elsewhere = true;
    });
    REQUIRE(covered.load() == n);  // every unit once
    return std::make_pair(calls.load(), elsewhere.load());
  };
  // 150k cycles: under what a second thread costs to start; one range, here.
  // (One shard per 20k cycles, the old model, cut it 4 ways here.)
  auto [small_calls, small_elsewhere] = shards_of(1500, 100);
  CHECK(small_calls == 1);
  CHECK_FALSE(small_elsewhere);
  // 100M cycles: every thread's worth.
  auto [big_calls, big_elsewhere] = shards_of(100000, 1000);
  CHECK(big_calls == 4);
  (void)big_elsewhere;  // whether a worker took a shard before the caller did is up to the scheduler
  // 250k cycles: two shards ((250k - 100k) / 100k + 0.9 = 2.4).
  CHECK(shards_of(2500, 100).first == 2);
}
