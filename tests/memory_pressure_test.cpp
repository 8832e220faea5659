// Memory pressure that the budget alone did not catch (issue 29): `actorflow
// run` of a Fill of 60,000,000 strings of 64 bytes under `ulimit -v 4194304`
// never ended. The budget did not know the address-space limit, the strings'
// characters were not counted, the failed Fill's partial output (~3.9 GB)
// stayed alive while its completion was sent, and sending it, with no memory
// left to schedule the device actor, was retried for ever.
//
// Checked here: the default budget honours RLIMIT_AS; a string Fill whose
// characters do not fit the budget is ResourceExhausted naming the node; a
// failed kernel's outputs are freed before its completion is delivered;
// rescheduling an actor whose scheduling keeps failing for memory gives up
// after a bounded number of tries and runs it on the caller; and the command
// itself, under ulimit -v, ends with RESOURCE_EXHAUSTED in bounded time.
//
// Sanitized builds (AF_SANITIZED) skip what needs ulimit -v or operator new
// failing on demand: a sanitizer reserves terabytes of address space and
// brings its own operator new.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/subgraph.hpp"
#include "executor_test_host.hpp"
#include "failing_new.hpp"  // a thread's next allocations fail on demand (t_fail_next)
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using test::OnRuntime;
using test::ToDef;

namespace {

constexpr int64_t kBudget = int64_t{64} << 20;

// fill = Fill(dims, value) with dims fed (computed at each step on the device)
// and a 64-byte string value, as in the issue.
proto::GraphDef StringFillGraph() {
  Scope root = Scope::NewRootScope();
  auto dims = ops::Placeholder(root.WithOpName("dims"), DT_INT32);
  ops::Fill(root.WithOpName("fill"), dims, ops::Const(root, std::string(64, 'x')));
  return ToDef(root);
}

Tensor Dims(int64_t n) { return test::MakeTensor<int32_t>({static_cast<int32_t>(n)}, TensorShape{1}); }

RunOptions Bounded() {
  RunOptions o;
  o.timeout_in_ms = 60000;  // a hang fails the test instead of blocking it
  return o;
}

// A completion as it was delivered: with the device allocator's bytes in use
// at that moment.
struct Delivery {
  Status status;
  int64_t bytes_in_use = 0;
  bool outputs_alive = false;
};

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("af_memory_pressure_" + std::to_string(getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST_CASE("the default budget honours the address-space limit (ulimit -v): at most 3/4 of it",
          "[may_skip][unsanitized]") {
#ifdef AF_SANITIZED
  AF_SKIP("a sanitizer's runtime cannot allocate under a lowered RLIMIT_AS: run in the plain build");
#else
  // In a child process: RLIMIT_AS is the whole process's. Its hard limit must
  // allow 4 GiB (a shell's ulimit -Hv may not).
  struct rlimit hard {};
  REQUIRE(getrlimit(RLIMIT_AS, &hard) == 0);
  if (hard.rlim_max != RLIM_INFINITY && hard.rlim_max < (rlim_t{4} << 30))
    AF_SKIP("the hard address-space limit is below 4 GiB: it cannot be raised to test 4 GiB");
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    unsetenv("ACTORFLOW_MEMORY_LIMIT_MB");
    struct rlimit rl {};
    getrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = rl.rlim_max;  // a lower soft limit (ulimit -v) would be part of the base
    setrlimit(RLIMIT_AS, &rl);
    int64_t seen[3] = {DefaultMemoryLimit(), 0, 0};
    int i = 1;
    for (rlim_t gib : {rlim_t{4}, rlim_t{2}}) {
      rl.rlim_cur = gib << 30;
      seen[i++] = setrlimit(RLIMIT_AS, &rl) == 0 ? DefaultMemoryLimit() : -1;
    }
    const bool written = write(fds[1], seen, sizeof seen) == static_cast<ssize_t>(sizeof seen);
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  int64_t seen[3] = {0, 0, 0};
  const ssize_t got = read(fds[0], seen, sizeof seen);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(got == static_cast<ssize_t>(sizeof seen));
  const int64_t unlimited = seen[0];  // physical memory, the cgroup's limit (or 3/4 of a hard limit of 4 GiB or more)
  INFO("without RLIMIT_AS " << unlimited << ", under 4 GiB " << seen[1] << ", under 2 GiB " << seen[2]);
  REQUIRE(seen[1] == std::min(unlimited, int64_t{3} << 30));
  REQUIRE(seen[2] == std::min(unlimited, int64_t{3} << 29));
#endif
}

TEST_CASE("a string Fill whose characters do not fit the budget is ResourceExhausted naming the node") {
  RuntimeOptions o = test::TwoThreads();
  o.device_memory_limit_bytes = kBudget;
  Runtime rt(o);
  Allocator* device_allocator = rt.devices()[0]->allocator();
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(StringFillGraph()).ok());
  // 1M strings: 32 MB of std::string objects fit 64 MiB, their 65 MB of characters do not.
  std::vector<Tensor> out;
  Status s = session.Run(Bounded(), {{"dims", Dims(1 << 20)}}, {"fill"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kResourceExhausted);
  REQUIRE_THAT(s.message(), Catch::Contains("'fill'") && Catch::Contains("bytes of string data") &&
                                Catch::Contains("budget 64.0 MiB"));
  // The failed step gave back what it took; a Fill that fits holds its characters' bytes while it lives.
  REQUIRE(device_allocator->bytes_in_use() < (1 << 20));
  s = session.Run(Bounded(), {{"dims", Dims(100000)}}, {"fill"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].NumElements() == 100000);
  REQUIRE(out[0].data<std::string>()[99999] == std::string(64, 'x'));
  REQUIRE(out[0].buffer()->heap_bytes() == 100000 * StringHeapBytes(out[0].data<std::string>()[0]));
  REQUIRE(StringHeapBytes(out[0].data<std::string>()[0]) >= 65);
  REQUIRE(device_allocator->bytes_in_use() >= 100000 * (32 + 65));
  out.clear();
  REQUIRE(device_allocator->bytes_in_use() < (1 << 20));
}

// Every kernel's string outputs count, not only Fill's: Tile counts nothing
// itself; the executor counts its output's characters when the node finishes.
TEST_CASE("a string tensor any kernel makes counts its characters: over the budget its node is ResourceExhausted") {
  RuntimeOptions o = test::TwoThreads();
  o.device_memory_limit_bytes = kBudget;
  Runtime rt(o);
  Allocator* device_allocator = rt.devices()[0]->allocator();
  Scope root = Scope::NewRootScope();
  auto multiples = ops::Placeholder(root.WithOpName("multiples"), DT_INT32);
  ops::Tile(root.WithOpName("tile"), ops::Const(root, {std::string(64, 'x')}), multiples);
  Session session(OnRuntime(&rt));
  REQUIRE(session.Create(ToDef(root)).ok());
  // 1M strings: 32 MB of std::string objects fit 64 MiB, their 65 MB of characters do not.
  std::vector<Tensor> out;
  Status s = session.Run(Bounded(), {{"multiples", Dims(1 << 20)}}, {"tile"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kResourceExhausted);
  REQUIRE_THAT(s.message(), Catch::Contains("'tile'") && Catch::Contains("bytes of string data"));
  REQUIRE(device_allocator->bytes_in_use() < (1 << 20));
  // One that fits holds its characters' bytes while it lives.
  s = session.Run(Bounded(), {{"multiples", Dims(100000)}}, {"tile"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].NumElements() == 100000);
  REQUIRE(out[0].buffer()->heap_bytes() == 100000 * StringHeapBytes(out[0].data<std::string>()[0]));
  out.clear();
  REQUIRE(device_allocator->bytes_in_use() < (1 << 20));
}

// An executor on a device with a 64 MiB budget, its host recording each delivery.
struct ExecutorFixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys = std::make_unique<caf::actor_system>(cfg);
  ComputePool pool{sys.get(), 2};
  Allocator* budget = MakeBudgetAllocator(cpu_allocator(), kBudget);
  Device device{test::kCpu0, DEVICE_CPU, budget, &pool};
  test::ExecutorTestHost host;  // stands in for the device actor
  Executor executor{ExecutorServices{&device, &host, nullptr, nullptr, nullptr}};
  std::vector<Delivery> deliveries;  // written under the host's lock; read once the step ended

  ExecutorFixture() {
    host.on_delivery = [this](const KernelDone& d) {
      Delivery seen{d.status, budget->bytes_in_use(), false};
      for (const Tensor& t : d.outputs) seen.outputs_alive = seen.outputs_alive || t.IsInitialized();
      deliveries.push_back(seen);
    };
  }
  // The pool's workers stop (the kernels' jobs end) before the pool and the device go.
  ~ExecutorFixture() { sys.reset(); }

  // The plan of fill = Fill(dims, 64-byte string), dims fed.
  std::unique_ptr<ExecutorPlan> StringFillPlan() {
    Scope root = Scope::NewRootScope();
    auto dims = ops::Placeholder(root.WithOpName("dims"), DT_INT32);
    ops::Fill(root.WithOpName("fill"), dims, ops::Const(root, std::string(64, 'x')));
    Graph g;
    REQUIRE(g.CopyFrom(*root.graph()).ok());
    FeedFetchInfo info;
    REQUIRE(RewriteGraphForExecution(&g, {"dims"}, {"fill"}, {}, &info).ok());
    std::unique_ptr<ExecutorPlan> plan;
    REQUIRE(ExecutorPlan::Build(g, &device, &plan, nullptr).ok());
    return plan;
  }
};

TEST_CASE("a failed kernel's outputs are freed before its completion is delivered") {
  ExecutorFixture f;
  std::unique_ptr<ExecutorPlan> plan = f.StringFillPlan();

  // The Fill runs on the pool: it allocates its 32 MB of strings, then the
  // charge for their characters is refused.
  RunStepRequest req;
  req.step_id = 1;
  req.args = {Dims(1 << 20)};
  std::optional<RunStepResponse> reply;
  {
    Executor::RunningScope running(&f.executor, nullptr);
    f.executor.StartStep(std::shared_ptr<const ExecutorPlan>(std::move(plan)), 1, req,
                         [&](RunStepResponse&& r) { reply = std::move(r); });
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((!reply || !f.executor.idle()) && std::chrono::steady_clock::now() < give_up) {
    if (f.host.resume) {
      f.host.resume = false;
      Executor::RunningScope running(&f.executor, nullptr);
      f.executor.Resume();
    } else {
      f.host.HandBack(&f.executor);
    }
  }
  REQUIRE(reply);
  INFO(reply->status.ToString());
  REQUIRE(reply->status.code() == Code::kResourceExhausted);
  REQUIRE_THAT(reply->status.message(), Catch::Contains("'fill'"));
  REQUIRE(f.deliveries.size() == 1);
  CHECK(f.deliveries[0].status.code() == Code::kResourceExhausted);
  CHECK_FALSE(f.deliveries[0].outputs_alive);
  CHECK(f.deliveries[0].bytes_in_use < (1 << 20));  // the 32 MB were given back before the delivery
}

TEST_CASE("an actor whose scheduling keeps failing for memory runs on the caller after bounded tries",
          "[may_skip][unsanitized]") {
#ifdef AF_SANITIZED
  AF_SKIP("operator new cannot be made to fail on demand under a sanitizer: run in the plain build");
#else
  Runtime rt(test::TwoThreads());
  std::atomic<int> handled{0};
  std::atomic<std::thread::id> handled_on{};
  std::atomic<bool> last_in_failed_run{false};  // what an executor there would see (ends its step)
  caf::actor counter = rt.system().spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](int) {
      handled_on = std::this_thread::get_id();
      last_in_failed_run = ComputePool::InFailedScheduleRun();
      handled.fetch_add(1);
    }};
  });
  auto* dest = caf::actor_cast<caf::abstract_actor*>(counter);
  // An execution unit with no memory to queue the actor: the message is in
  // the mailbox, the actor runnable, and nobody runs it (as when CAF's
  // scheduling throws bad_alloc). The actor may still be finishing a message
  // (then the new one is taken without scheduling): try again until one is refused.
  class NoMemoryUnit final : public caf::execution_unit {
   public:
    explicit NoMemoryUnit(caf::actor_system* sys) : caf::execution_unit(sys) {}
    void exec_later(caf::resumable*) override { throw std::bad_alloc(); }
  } no_memory(&rt.system());
  bool refused = false;
  int sent = 0;
  for (int i = 0; i < 1000 && !refused; ++i) {
    REQUIRE(test::WaitUntil([&] { return handled.load() == sent; }, std::chrono::seconds(30)));
    ++sent;
    try {
      dest->enqueue(caf::make_mailbox_element(nullptr, caf::make_message_id(), {}, caf::make_message(i)), &no_memory);
    } catch (const std::bad_alloc&) {
      refused = true;
    }
  }
  REQUIRE(refused);
  // The rescheduling thread's next kRescheduleAttempts allocations fail: each
  // try to queue the actor makes one (CAF's queue node). Unbounded, the next
  // try queued it once memory came back; bounded, the actor runs on this
  // thread once they are used up, without a further try.
  std::atomic<bool> returned{false};
  std::atomic<std::thread::id> rescheduler_id{};
  const int64_t refused_before = g_refused.load();
  std::thread rescheduler([&] {
    rescheduler_id = std::this_thread::get_id();
    t_fail_next = ComputePool::kRescheduleAttempts;
    rt.compute_pool()->RescheduleAfterFailure(dynamic_cast<caf::resumable*>(dest));
    t_fail_next = 0;
    returned = true;
  });
  const bool ended = test::WaitUntil([&] { return returned.load(); }, std::chrono::seconds(30));
  rescheduler.join();
  REQUIRE(ended);
  CHECK(g_refused.load() - refused_before == ComputePool::kRescheduleAttempts);
  // The message was handled, on the rescheduling thread; later ones are handled as usual.
  REQUIRE(handled.load() == sent);
  CHECK(handled_on.load() == rescheduler_id.load());
  CHECK(last_in_failed_run.load());  // a kernel's completion handled there ends its step (Executor::KernelFinished)
  CHECK_FALSE(ComputePool::InFailedScheduleRun());
  caf::anon_send(counter, 1);
  REQUIRE(test::WaitUntil([&] { return handled.load() == sent + 1; }, std::chrono::seconds(30)));
  CHECK_FALSE(last_in_failed_run.load());
#endif
}

// Stands in for the device actor CAF could not schedule: handing its
// completion back to the executor is what the actor's run would do.
class HandBackJob final : public caf::resumable {
 public:
  HandBackJob(test::ExecutorTestHost* host, Executor* executor) : host_(host), executor_(executor) {}
  resume_result resume(caf::execution_unit*, size_t) override {
    ran_after_failed_schedule = ComputePool::InFailedScheduleRun();
    handed_back = host_->HandBack(executor_);
    return done;
  }
  void intrusive_ptr_add_ref_impl() override {}
  void intrusive_ptr_release_impl() override {}
  bool ran_after_failed_schedule = false;
  bool handed_back = false;

 private:
  test::ExecutorTestHost* host_;
  Executor* executor_;
};

TEST_CASE("a kernel's completion that could not be scheduled for memory ends its step with ResourceExhausted",
          "[may_skip][unsanitized]") {
#ifdef AF_SANITIZED
  AF_SKIP("operator new cannot be made to fail on demand under a sanitizer: run in the plain build");
#else
  ExecutorFixture f;
  std::unique_ptr<ExecutorPlan> plan = f.StringFillPlan();
  // A Fill that fits runs on the pool and succeeds; its completion waits in the host.
  RunStepRequest req;
  req.step_id = 1;
  req.args = {Dims(100000)};  // large enough to run on the pool (a small one runs inline)
  std::optional<RunStepResponse> reply;
  {
    Executor::RunningScope running(&f.executor, nullptr);
    f.executor.StartStep(std::shared_ptr<const ExecutorPlan>(std::move(plan)), 1, req,
                         [&](RunStepResponse&& r) { reply = std::move(r); });
  }
  REQUIRE(test::WaitUntil(
      [&] {
        if (f.host.resume) {
          f.host.resume = false;
          Executor::RunningScope running(&f.executor, nullptr);
          f.executor.Resume();
        }
        return f.host.HasDelivery() || reply.has_value();
      },
      std::chrono::seconds(60)));
  REQUIRE_FALSE(reply);  // the kernel ran on the pool: its completion waits in the host
  // The actor that would take it cannot be scheduled (each try's queue node is
  // refused): after the bounded tries it runs here, and the step ends.
  HandBackJob job(&f.host, &f.executor);
  t_fail_next = ComputePool::kRescheduleAttempts;
  f.pool.RescheduleAfterFailure(&job);
  t_fail_next = 0;
  CHECK(job.ran_after_failed_schedule);
  REQUIRE(job.handed_back);
  REQUIRE(reply);
  INFO(reply->status.ToString());
  CHECK(reply->status.code() == Code::kResourceExhausted);
  CHECK_THAT(reply->status.message(), Catch::Contains("'fill'") && Catch::Contains("could not be scheduled"));
  CHECK(f.executor.idle());
#endif
}

TEST_CASE("actorflow run under ulimit -v: a Fill of 60M strings of 64 bytes ends with RESOURCE_EXHAUSTED, no hang",
          "[may_skip][ulimit]") {
#ifdef AF_SANITIZED
  AF_SKIP("a sanitizer's shadow memory does not fit under ulimit -v: run in the plain build");
#else
  // The issue's graph: constant dims [60000000] and a 64-byte constant string.
  const std::string graph = TempPath("fill.pbtxt");
  std::ofstream(graph)
      << "node { name: \"dims\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } attr { key: \"value\" "
         "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 60000000 } } } }\n"
      << "node { name: \"value\" op: \"Const\" attr { key: \"dtype\" value { type: DT_STRING } } attr { key: "
         "\"value\" value { tensor { dtype: DT_STRING tensor_shape {} string_val: \""
      << std::string(64, 'x') << "\" } } } }\n"
      << "node { name: \"fill\" op: \"Fill\" input: \"dims\" input: \"value\" "
         "attr { key: \"T\" value { type: DT_STRING } } }\n";
  const auto start = std::chrono::steady_clock::now();
  // timeout: a hang ends as exit code 124 (a failure), not as a blocked test.
  const test::ShellResult r = test::Shell("(ulimit -v 4194304 && exec timeout 120 " + std::string(AF_CLI_PATH) +
                                          " run --graph " + graph + " --fetch fill) 2>&1");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::remove(graph.c_str());
  INFO(r.out << "(exit code " << r.exit_code << " after " << seconds << " s)");
  REQUIRE(r.exit_code == 1);  // the step failed: not 124 (the timeout), nor a signal's 128 + n
  REQUIRE(r.out.find(R"({"step":0,"ok":false,"code":"RESOURCE_EXHAUSTED")") == 0);
  REQUIRE_THAT(r.out, Catch::Contains("'fill'"));
  CHECK(seconds < 60);
#endif
}
