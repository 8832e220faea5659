// The executor driven without a device actor (actors/device/executor.hpp):
// a test host stands in for the actor's mailbox, so what the executor asks of
// its host (resume me, arm a deadline, bring a completion back) is seen and
// answered here, on the test's thread.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/subgraph.hpp"
#include "executor_test_host.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

using TestHost = test::ExecutorTestHost;  // completions wait until the test hands them back

// A CPU device that can behave as one whose kernels only enqueue work (a
// GPU): with `syncs` set, the executor must call Sync at each step's end and
// finish the step only when Sync answers, from another thread, with `status`.
class SyncingDevice final : public Device {
 public:
  using Device::Device;
  ~SyncingDevice() override {
    for (auto& t : threads_) t.join();
  }
  bool SyncsAtStepEnd() const override { return syncs; }
  void Sync(std::function<void(const Status&)> done) override {
    ++syncs_called;
    threads_.emplace_back([done = std::move(done), s = status] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the work "still runs"
      done(s);
    });
  }
  bool syncs = false;
  Status status;
  int syncs_called = 0;

 private:
  std::vector<std::thread> threads_;
};

struct Fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys = std::make_unique<caf::actor_system>(cfg);
  ComputePool pool{sys.get(), 2};
  SyncingDevice device{test::kCpu0, DEVICE_CPU, cpu_allocator(), &pool};
  TestHost host;
  Executor executor{ExecutorServices{&device, &host, nullptr, nullptr, nullptr}};
  // The scheduler's workers (the pool's threads) are joined before the pool
  // and the device go, as the Runtime does.
  ~Fixture() { sys.reset(); }

  // The plan of the scope's graph with `feeds` as _Args and `fetches` as _Retvals.
  std::shared_ptr<const ExecutorPlan> Plan(const Scope& root, const std::vector<std::string>& feeds,
                                           const std::vector<std::string>& fetches) {
    Graph g;
    REQUIRE(g.CopyFrom(*root.graph()).ok());
    FeedFetchInfo info;
    REQUIRE(RewriteGraphForExecution(&g, feeds, fetches, {}, &info).ok());
    std::unique_ptr<ExecutorPlan> plan;
    const Status s = ExecutorPlan::Build(g, &device, &plan, nullptr);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return std::shared_ptr<const ExecutorPlan>(std::move(plan));
  }

  // Starts a step and plays the host until it is answered and drained (at
  // most 60 s: a step that never ends fails the test instead of hanging it).
  RunStepResponse Run(std::shared_ptr<const ExecutorPlan> plan, std::vector<Tensor> args, int64_t timeout_ms = 0,
                      bool collect_stats = false) {
    RunStepRequest req;
    req.step_id = 7;
    req.args = std::move(args);
    req.timeout_ms = timeout_ms;
    req.collect_stats = collect_stats;
    std::optional<RunStepResponse> reply;
    {
      Executor::RunningScope running(&executor, nullptr);
      executor.StartStep(std::move(plan), 1, req, [&](RunStepResponse&& r) {
        REQUIRE(!reply);  // answered once
        reply = std::move(r);
      });
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((!reply || !executor.idle()) && std::chrono::steady_clock::now() < give_up) {
      if (host.resume) {
        host.resume = false;
        Executor::RunningScope running(&executor, nullptr);
        executor.Resume();
        continue;
      }
      if (host.HandBack(&executor)) continue;
      if (!host.deadlines.empty() && timeout_ms > 0) {
        std::this_thread::sleep_for(host.deadlines.back());
        host.deadlines.clear();
        executor.DeadlinesDue();
      }
    }
    REQUIRE(reply);
    REQUIRE(executor.idle());
    return std::move(*reply);
  }
};

}  // namespace

TEST_CASE("executor without an actor: inline and pool kernels, completions handed back by the host") {
  Fixture f;
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  // 256 x 256: the MatMul runs on the pool; the Adds around it inline.
  auto big = ops::MatMul(root.WithOpName("big"), ops::Add(root, x, 1.f), ops::Fill(root, {256, 256}, 0.5f));
  ops::Sum(root.WithOpName("total"), ops::Mul(root, big, 2.f), ops::Const(root, {0, 1}));
  auto plan = f.Plan(root, {"x"}, {"total"});

  std::vector<float> ones(256 * 256, 1.f);
  RunStepResponse r = f.Run(plan, {test::MakeTensor<float>(ones, {256, 256})}, 0, /*collect_stats=*/true);
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  REQUIRE(r.retvals.size() == 1);
  // (1 + 1) * 0.5 summed over 256 terms = 256 per element; * 2, over 65,536 elements.
  CHECK(test::Values<float>(r.retvals[0])[0] == Approx(256.f * 2.f * 65536.f));
  // The MatMul went off the executor's thread and came back through the host.
  CHECK(f.host.completions_made >= 1);
  CHECK(f.host.completions_handed_back == f.host.completions_made);
  bool off_thread = false, inline_ran = false;
  for (const NodeExecStats& s : r.stats) {
    if (s.node == "big") off_thread = s.where == "pool" || s.where == "async";
    if (s.where == "inline") inline_ran = true;
  }
  CHECK(off_thread);
  CHECK(inline_ran);
}

TEST_CASE("executor without an actor: a device that enqueues work finishes a step only once Sync answered, and a "
          "failed Sync fails the step") {
  Fixture f;
  f.device.syncs = true;
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Mul(root.WithOpName("y"), x, 3.f);
  auto plan = f.Plan(root, {"x"}, {"y"});
  RunStepResponse r = f.Run(plan, {test::MakeTensor<float>({2.f}, {1})});
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  CHECK(test::Values<float>(r.retvals[0]) == std::vector<float>{6.f});
  CHECK(f.device.syncs_called == 1);
  CHECK(f.host.completions_handed_back >= 1);  // the answer came back through the host

  f.device.status = errors::Internal("GPU:0: an illegal memory access");
  r = f.Run(plan, {test::MakeTensor<float>({2.f}, {1})});
  CHECK(f.device.syncs_called == 2);
  CHECK(r.status.code() == Code::kInternal);
  CHECK_THAT(r.status.message(), Catch::Contains("illegal memory access") && Catch::Contains(test::kCpu0));

  f.device.syncs = false;  // a CPU: no wait at all
  f.device.status = Status::OK();
  r = f.Run(plan, {test::MakeTensor<float>({2.f}, {1})});
  CHECK(r.status.ok());
  CHECK(f.device.syncs_called == 2);
}

TEST_CASE("executor without an actor: a failing node fails its step, naming it; the next step runs") {
  Fixture f;
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::MatMul(root.WithOpName("y"), x, ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}}));
  auto plan = f.Plan(root, {"x"}, {"y"});

  RunStepResponse bad = f.Run(plan, {test::MakeTensor<float>({1, 2, 3}, {1, 3})});
  CHECK(bad.status.code() == Code::kInvalidArgument);
  CHECK(bad.status.message().find("node 'y' (op 'MatMul')") != std::string::npos);

  RunStepResponse good = f.Run(plan, {test::MakeTensor<float>({1, 1}, {1, 2})});
  INFO(good.status.ToString());
  REQUIRE(good.status.ok());
  CHECK(test::Values<float>(good.retvals[0]) == std::vector<float>{4, 6});

  RunStepResponse wrong_args = f.Run(plan, {});
  CHECK(wrong_args.status.code() == Code::kInvalidArgument);
}

TEST_CASE("executor without an actor: a step past its deadline is answered DeadlineExceeded through the host's timer") {
  Fixture f;
  Scope root = Scope::NewRootScope();
  const Output slow = test::SlowChain(root);
  auto plan = f.Plan(root, {}, {slow.node()->name()});
  RunStepResponse r = f.Run(plan, {}, /*timeout_ms=*/20);
  CHECK(r.status.code() == Code::kDeadlineExceeded);
  CHECK(f.host.completions_handed_back == f.host.completions_made);  // running kernels drained before it was idle
}

TEST_CASE("executor without an actor: a variable read without a container fails the step as Unavailable") {
  Fixture f;
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{2}), DT_FLOAT);
  ops::Add(root.WithOpName("sum"), v, 1.f);
  auto plan = f.Plan(root, {}, {"sum"});
  RunStepResponse r = f.Run(plan, {});
  CHECK(r.status.code() == Code::kUnavailable);
  CHECK(r.status.message().find("no container actor") != std::string::npos);
}

TEST_CASE("executor without an actor: Shutdown answers and tells the host once drained") {
  Fixture f;
  {
    Executor::RunningScope running(&f.executor, nullptr);
    f.executor.Shutdown(errors::Cancelled("going away"));
  }
  CHECK(f.host.drained);
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c"), 1.f);
  auto plan = f.Plan(root, {}, {"c"});
  RunStepResponse r = f.Run(plan, {});
  CHECK(r.status.code() == Code::kCancelled);
}
