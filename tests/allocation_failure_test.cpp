// Allocation failures the memory budget cannot produce: std::bad_alloc from
// operator new itself (a kernel's vector, the executor's bookkeeping, the
// message a completion sends). This test program replaces operator new with
// one that fails on demand:
//  - every allocation of at least `g_fail_from_bytes` bytes, on any thread,
//    while that is non-zero;
//  - the next `t_fail_next` allocations on a thread (memory exhausted for a
//    moment, as when other steps are still giving theirs back).
// Whatever fails, the step ends with a Status (ResourceExhausted naming the
// node), never a hang, a dead device actor or an abort, and the session's
// later steps succeed.
//
// ASan and its runtime bring their own operator new: the replacement (and so
// this program's cases) exist only in builds without a sanitizer; a sanitized
// build's program reports itself skipped (exit 77).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/attr_value.pb.h"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "failing_new.hpp"
#include "wait_until.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::OnRuntime;
using test::ToDef;

namespace {

// Refuses big operator-new allocations while alive.
class FailBigAllocations {
 public:
  explicit FailBigAllocations(size_t from) { g_fail_from_bytes = from; }
  ~FailBigAllocations() { g_fail_from_bytes = 0; }
};

// A kernel that builds a temporary vector of `bytes` (a sort buffer, say).
AF_REGISTER_OP("TestBigTemp").Input("x: float").Output("y: float").Attr("bytes: int").Attr("offload: bool = false");
class TestBigTempOp : public OpKernel {
 public:
  explicit TestBigTempOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("bytes", &bytes_));
    c->SetStatus(c->GetAttr("offload", &offload_));
  }
  bool ShouldOffload(const Tensor*, int) const override { return offload_; }
  void Compute(OpKernelContext* ctx) override {
    std::vector<char> temp(static_cast<size_t>(bytes_), 1);
    ctx->set_output(0, ctx->input(0));
  }

 private:
  int64_t bytes_ = 0;
  bool offload_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("TestBigTemp").Device(DEVICE_CPU), TestBigTempOp);

// An asynchronous kernel finishing on a thread of its own while memory is
// exhausted: its completion must still reach the device actor (sending it
// allocates nothing; scheduling the actor, inside CAF, is retried).
AF_REGISTER_OP("TestDoneWithoutMemory").Input("x: float").Output("y: float").Attr("fail: bool = false");
class TestDoneWithoutMemoryOp : public AsyncOpKernel {
 public:
  explicit TestDoneWithoutMemoryOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    c->SetStatus(c->GetAttr("fail", &fail_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    if (fail_) ctx->SetStatus(errors::ResourceExhausted("no memory for the result"));
    else ctx->set_output(0, ctx->input(0));
    std::thread([done = std::move(done)] {
      t_fail_next = 40;  // the next 40 allocations on this thread fail
      done();
      t_fail_next = 0;
    }).detach();
  }

 private:
  bool fail_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("TestDoneWithoutMemory").Device(DEVICE_CPU), TestDoneWithoutMemoryOp);

[[maybe_unused]] AttrMap Attrs(const std::vector<std::pair<std::string, int64_t>>& ints,
             const std::vector<std::pair<std::string, bool>>& bools = {}) {
  AttrMap m;
  for (const auto& [k, v] : ints) m[k].set_i(v);
  for (const auto& [k, v] : bools) m[k].set_b(v);
  return m;
}

[[maybe_unused]] RunOptions Bounded() {
  RunOptions o;
  o.timeout_in_ms = 60000;  // a lost completion fails the test instead of hanging it
  return o;
}

}  // namespace

#ifndef AF_NO_NEW_REPLACEMENT

TEST_CASE("a kernel's own allocation failing fails its step; the device goes on") {
  for (bool offload : {false, true}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    root.WithOpName("temp").AddOp("TestBigTemp", {{x}}, Attrs({{"bytes", int64_t{8} << 20}}, {{"offload", offload}}));
    Runtime rt(RuntimeOptions{});
    Session session(OnRuntime(&rt));
    REQUIRE(session.Create(ToDef(root)).ok());
    std::vector<Tensor> out;
    REQUIRE(session.Run(Bounded(), {{"x", Tensor::Scalar<float>(2)}}, {"temp"}, {}, &out).ok());
    Status s;
    {
      FailBigAllocations fail(1 << 20);
      s = session.Run(Bounded(), {{"x", Tensor::Scalar<float>(2)}}, {"temp"}, {}, &out);
    }
    INFO(s.ToString());
    REQUIRE(s.code() == Code::kResourceExhausted);
    REQUIRE_THAT(s.message(), Catch::Contains("'temp'"));
    REQUIRE(session.Run(Bounded(), {{"x", Tensor::Scalar<float>(3)}}, {"temp"}, {}, &out).ok());
    REQUIRE(out[0].scalar<float>() == 3.f);
  }
}

TEST_CASE("a completion sent where no memory is left still ends its step") {
  for (bool fail : {false, true}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    root.WithOpName("late").AddOp("TestDoneWithoutMemory", {{x}}, Attrs({}, {{"fail", fail}}));
    Runtime rt(RuntimeOptions{});
    Session session(OnRuntime(&rt));
    REQUIRE(session.Create(ToDef(root)).ok());
    for (int i = 0; i < 20; ++i) {
      std::vector<Tensor> out;
      Status s = session.Run(Bounded(), {{"x", Tensor::Scalar<float>(static_cast<float>(i))}}, {"late"}, {}, &out);
      INFO(s.ToString());
      if (fail) {
        REQUIRE(s.code() == Code::kResourceExhausted);
        REQUIRE_THAT(s.message(), Catch::Contains("'late'") && Catch::Contains("no memory for the result"));
      } else {
        REQUIRE(s.ok());
        REQUIRE(out[0].scalar<float>() == static_cast<float>(i));
      }
    }
  }
}

TEST_CASE("a graph whose executor bookkeeping does not fit fails to run; the session goes on") {
  // 65536 outputs: the plan's and the device actor's per-output arrays are
  // megabytes, refused below; the step is answered with ResourceExhausted.
  constexpr int64_t kParts = 65536;
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto parts = ops::Split(root.WithOpName("split"), 0, x, kParts);
  ops::Identity(root.WithOpName("first"), parts[0]);
  Runtime rt(RuntimeOptions{});
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor value(DT_FLOAT, TensorShape{kParts});
  for (int64_t i = 0; i < kParts; ++i) value.data<float>()[i] = static_cast<float>(i);
  std::vector<Tensor> out;
  const int64_t refused_before = g_refused.load();
  Status s;
  {
    FailBigAllocations fail(1 << 20);
    s = session.Run(Bounded(), {{"x", value}}, {"first"}, {}, &out);
  }
  INFO(s.ToString());
  REQUIRE(g_refused.load() > refused_before);
  REQUIRE(s.code() == Code::kResourceExhausted);
  // The failed preparation is not cached: the same Run now succeeds.
  s = session.Run(Bounded(), {{"x", value}}, {"first"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].NumElements() == 1);
  // And a step of the registered graph whose own bookkeeping is refused.
  {
    FailBigAllocations fail(1 << 20);
    s = session.Run(Bounded(), {{"x", value}}, {"first"}, {}, &out);
  }
  INFO(s.ToString());
  REQUIRE((s.ok() || s.code() == Code::kResourceExhausted));
  REQUIRE(session.Run(Bounded(), {{"x", value}}, {"first"}, {}, &out).ok());
  REQUIRE(out[0].data<float>()[0] == 0.f);
}

// Runs `fetch` with `feed` fed as "x" on a thread of its own (one that ran
// another runtime's steps before, this program's earlier cases, runs none
// inline on this one), its allocations refused one at a time, the first, the
// second, ... until a step runs with none refused. Each step must end bounded,
// with a result `check` accepts or ResourceExhausted, keep none of its feeds
// once over, and the session's next step must succeed.
struct Sweep {
  std::string failure;  // the first step that broke the rules, and how
  int refused_steps = 0;
  int device_refusals = 0;  // refused in the device actor's turn (its answer names no partition)
};
Sweep SweepStepAllocations(Session& session, const Tensor& feed, const std::string& fetch,
                           const std::function<bool(const Tensor&)>& check) {
  Sweep r;
  std::thread caller([&] {
    std::vector<Tensor> out;
    if (!session.Run(Bounded(), {{"x", feed}}, {fetch}, {}, &out).ok()) r.failure = "the first step failed";
    for (int k = 0; k < 2000 && r.failure.empty(); ++k) {
      const int64_t before = g_refused.load();
      std::vector<std::pair<std::string, Tensor>> feeds = {{"x", feed}};
      std::vector<std::string> fetches = {fetch};
      t_fail_after = k;
      const Status s = session.Run(Bounded(), feeds, fetches, {}, &out);
      t_fail_after = -1;
      feeds.clear();
      const std::string at = "allocation " + std::to_string(k) + " refused: " + s.ToString();
      if (!s.ok() && s.code() != Code::kResourceExhausted) r.failure = at;
      else if (s.ok() && !check(out[0])) r.failure = at + ", wrong values";
      else if (!test::WaitUntil([&] { return feed.RefCountIsOne(); }, std::chrono::seconds(10)))
        r.failure = at + ", its feed still held 10 s later";
      else if (!session.Run(Bounded(), {{"x", feed}}, {fetch}, {}, &out).ok()) r.failure = at + ", the next step failed";
      if (!s.ok() && s.message().rfind("partition on", 0) != 0) ++r.device_refusals;
      out.clear();
      if (g_refused.load() == before) break;  // the step needed fewer than k allocations here
      ++r.refused_steps;
    }
  });
  caller.join();
  return r;
}

TEST_CASE("any one allocation of a step failing on the caller's thread ends that step; none is left behind") {
  // A step the caller's own thread runs (Session::Run starts a one-device
  // step there, the device actor's turns included).
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Mul(root.WithOpName("y"), ops::Add(root.WithOpName("sum"), x, x), x);
  Runtime rt(RuntimeOptions{});
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(ToDef(root)).ok());
  const Tensor xv = test::MakeTensor<float>({1, 2, 3}, {3});
  const Sweep r = SweepStepAllocations(session, xv, "y", [](const Tensor& y) {
    return test::Values<float>(y) == std::vector<float>{2, 8, 18};
  });
  INFO(r.failure);
  CHECK(r.failure.empty());
  CHECK(r.refused_steps >= 4);   // the sweep reached the step's own allocations (8 here)
  CHECK(r.device_refusals >= 1);  // and the device actor's, run on the caller's thread
}

TEST_CASE("any one allocation of a step reading and updating local variables failing ends that step whole") {
  // The variable reads (ten variables taken by value by one AddN: the
  // executor's batched read, VariableAccess::ReadNow, its lists past their
  // inline room) and the update (UpdateNow) of a step on the caller's
  // thread, its allocations refused one at a time: the step ends with its
  // result or ResourceExhausted, the variable whole (every element updated
  // the same number of times), nothing left behind.
  Scope root = Scope::NewRootScope();
  auto var = ops::Variable(root.WithOpName("var"), PartialTensorShape(TensorShape{3}), DT_FLOAT);
  std::vector<Input> grads;
  std::vector<std::string> inits = {"init_var"};
  ops::Assign(root.WithOpName("init_var"), var, ops::Fill(root, {3}, 100.f));
  for (int i = 0; i < 10; ++i) {
    const std::string g = "grad" + std::to_string(i);
    auto grad = ops::Variable(root.WithOpName(g), PartialTensorShape(TensorShape{3}), DT_FLOAT);
    ops::Assign(root.WithOpName("init_" + g), grad, ops::Fill(root, {3}, 1.f));
    grads.push_back(grad);
    inits.push_back("init_" + g);
  }
  auto lr = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto delta = ops::AddN(root.WithOpName("delta"), grads);  // 10
  ops::Identity(root.WithOpName("y"), ops::ApplyGradientDescent(root.WithOpName("update"), var, lr, delta));
  Runtime rt(RuntimeOptions{});
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run(Bounded(), {}, {}, inits, &out).ok());
  const Tensor half = test::MakeTensor<float>({0.5f}, {});
  const Sweep r = SweepStepAllocations(session, half, "y", [](const Tensor& y) {
    const std::vector<float> v = test::Values<float>(y);
    const float steps = (100.f - v[0]) / 5.f;  // updates applied so far
    return v.size() == 3 && v[0] == v[1] && v[1] == v[2] && steps >= 1 && steps == static_cast<float>(int(steps));
  });
  INFO(r.failure);
  CHECK(r.failure.empty());
  CHECK(r.refused_steps >= 4);
}

#else

TEST_CASE("allocation failure injection needs a build without a sanitizer") {
  AF_SKIP("operator new is the sanitizer's here: the allocation failure cases run in the plain build");
}

#endif
