// The per-device memory budget (RuntimeOptions::device_memory_limit_bytes) and
// the process's (DefaultMemoryLimit): an allocation past a budget fails its
// step with ResourceExhausted naming the node and the bytes asked, exactly as
// running out of memory does; the device, the session and every other step
// go on, and the memory of a failed step is given back.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/device.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::OnRuntime;
using test::ToDef;

namespace {

constexpr int64_t kBudget = int64_t{64} << 20;

RuntimeOptions Budgeted(int cpu_devices = 1) {
  RuntimeOptions o = test::TwoThreads(cpu_devices);
  o.device_memory_limit_bytes = kBudget;
  return o;
}

// fill = Fill(dims, 1.5f) with dims fed: computed at each step on the device
// (a constant shape would be folded into the graph when the session prepares it).
proto::GraphDef FillGraph(DataType dtype = DT_FLOAT) {
  Scope root = Scope::NewRootScope();
  auto dims = ops::Placeholder(root.WithOpName("dims"), DT_INT32);
  Output value = dtype == DT_STRING ? Output(ops::Const(root, std::string("a string longer than fifteen chars")))
                                    : Output(ops::Const(root, 1.5f));
  auto fill = ops::Fill(root.WithOpName("fill"), dims, value);
  ops::Size(root.WithOpName("size"), fill);
  return ToDef(root);
}

Tensor Dims(int64_t n) { return test::MakeTensor<int32_t>({static_cast<int32_t>(n)}, TensorShape{1}); }

Status RunFill(Session& session, int64_t n, int32_t* size = nullptr) {
  std::vector<Tensor> out;
  RunOptions opts;
  opts.timeout_in_ms = 60000;  // a hang fails the test instead of blocking it
  Status s = session.Run(opts, {{"dims", Dims(n)}}, {"size"}, {}, &out);
  if (s.ok() && size) *size = out[0].scalar<int32_t>();
  return s;
}

}  // namespace

TEST_CASE("the process's default budget is the machine's memory or the cgroup's limit") {
  const int64_t limit = DefaultMemoryLimit();
  REQUIRE(limit > (int64_t{64} << 20));
  REQUIRE(limit < INT64_MAX);
  REQUIRE(cpu_allocator()->limit() == limit);
  // A tensor larger than the machine is refused before any page is touched,
  // whatever the kernel's overcommit policy.
  Tensor t;
  Status s = Tensor::Create(nullptr, DT_FLOAT, TensorShape{limit / 4 + 1}, &t);
  REQUIRE(s.code() == Code::kResourceExhausted);
  REQUIRE_THAT(s.message(), Catch::Contains(std::to_string((limit / 4 + 1) * 4) + " bytes") &&
                                Catch::Contains("budget"));
}

TEST_CASE("a budget allocator counts its own bytes and refuses past its limit") {
  Allocator* a = MakeBudgetAllocator(cpu_allocator(), 1 << 20);
  void* p = a->AllocateRaw(64, 600 << 10);
  REQUIRE(p != nullptr);
  REQUIRE(a->bytes_in_use() == (600 << 10));
  REQUIRE(a->AllocateRaw(64, 600 << 10) == nullptr);  // 1.2 MiB > 1 MiB
  REQUIRE(a->bytes_in_use() == (600 << 10));           // a refusal counts nothing
  a->DeallocateRaw(p, 600 << 10);
  REQUIRE(a->bytes_in_use() == 0);
  p = a->AllocateRaw(64, 1 << 20);  // exactly the budget fits
  REQUIRE(p != nullptr);
  a->DeallocateRaw(p, 1 << 20);
}

TEST_CASE("a step over the device's budget fails with ResourceExhausted, and later steps succeed") {
  Runtime rt(Budgeted());
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(FillGraph()).ok());
  for (int round = 0; round < 3; ++round) {
    Status s = RunFill(session, int64_t{32} << 20);  // 128 MiB of floats
    INFO(s.ToString());
    REQUIRE(s.code() == Code::kResourceExhausted);
    REQUIRE_THAT(s.message(), Catch::Contains("'fill'") && Catch::Contains("134217728 bytes") &&
                                  Catch::Contains("budget 64.0 MiB"));
    int32_t size = 0;
    REQUIRE(RunFill(session, 1000, &size).ok());
    REQUIRE(size == 1000);
    // The failed step gave its memory back: 48 MiB fits again and again.
    REQUIRE(RunFill(session, int64_t{12} << 20, &size).ok());
    REQUIRE(size == (12 << 20));
  }
  REQUIRE(rt.devices()[0]->allocator()->bytes_in_use() < (1 << 20));
}

TEST_CASE("string tensors count against the budget too") {
  Runtime rt(Budgeted());
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(FillGraph(DT_STRING)).ok());
  Status s = RunFill(session, int64_t{4} << 20);  // 4M strings: 128 MiB of std::string headers
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kResourceExhausted);
  REQUIRE_THAT(s.message(), Catch::Contains("'fill'") && Catch::Contains("string tensor"));
  int32_t size = 0;
  REQUIRE(RunFill(session, 100, &size).ok());
  REQUIRE(size == 100);
}

TEST_CASE("a refused allocation is never seen by a concurrent one (not even for an instant)") {
  // A budget of 1 MiB: 2 MiB requests are always refused; 4 KiB ones always
  // fit. Refusing used to count the 2 MiB for an instant (add, compare, undo),
  // and a concurrent 4 KiB request then failed with nothing in use.
  Allocator* budget = MakeBudgetAllocator(cpu_allocator(), int64_t{1} << 20);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> refused_big{0};
  std::thread big([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      void* p = budget->AllocateRaw(kTensorAlignment, size_t{2} << 20);
      if (p == nullptr) {
        refused_big.fetch_add(1, std::memory_order_relaxed);
      } else {
        budget->DeallocateRaw(p, size_t{2} << 20);
      }
    }
  });
  int failed = 0;
  for (int i = 0; i < 200000; ++i) {
    void* p = budget->AllocateRaw(kTensorAlignment, 4096);
    if (p == nullptr) {
      ++failed;
    } else {
      budget->DeallocateRaw(p, 4096);
    }
  }
  stop = true;
  big.join();
  CHECK(refused_big.load() > 0);
  CHECK(failed == 0);
  CHECK(budget->bytes_in_use() == 0);
}

TEST_CASE("steps that fail for memory leave concurrent steps of the same session alone") {
  Runtime rt(Budgeted());
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(FillGraph()).ok());
  std::atomic<int> wrong{0};
  std::thread failing([&] {
    for (int i = 0; i < 30; ++i)
      if (RunFill(session, int64_t{20} << 20).code() != Code::kResourceExhausted) ++wrong;  // 80 MiB
  });
  int ok = 0;
  Status first_bad;
  for (int i = 0; i < 300; ++i) {
    int32_t size = 0;
    Status s = RunFill(session, 4096, &size);
    if (s.ok() && size == 4096) ++ok;
    else if (first_bad.ok()) first_bad = s.ok() ? errors::Internal("size ", size) : s;
  }
  failing.join();
  INFO(first_bad.ToString());
  REQUIRE(wrong == 0);
  REQUIRE(ok == 300);
}

TEST_CASE("each CPU device has its own budget") {
  Runtime rt(Budgeted(2));
  REQUIRE(rt.devices()[0]->allocator() != rt.devices()[1]->allocator());
  REQUIRE(rt.devices()[0]->allocator()->limit() == kBudget);
  REQUIRE(rt.devices()[1]->allocator()->limit() == kBudget);
  // 40 MiB on each device at once: 80 MiB in all, over one budget, within each.
  Scope root = Scope::NewRootScope();
  auto dims = ops::Placeholder(root.WithOpName("dims"), DT_INT32);
  auto a = ops::Fill(root.WithOpName("a").WithDevice("/device:CPU:0"), dims, 1.f);
  auto b = ops::Fill(root.WithOpName("b").WithDevice("/device:CPU:1"), dims, 2.f);
  ops::Sum(root.WithOpName("sa").WithDevice("/device:CPU:0"), a, 0);
  ops::Sum(root.WithOpName("sb").WithDevice("/device:CPU:1"), b, 0);
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Status s = session.Run({{"dims", Dims(int64_t{10} << 20)}}, {"sa", "sb"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[1].scalar<float>() > out[0].scalar<float>());
}
