// Session::Run: pruning, feeds, caching, concurrency, deadlines and errors.
#include <catch2/catch.hpp>
#include <caf/all.hpp>
#include <atomic>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "actorflow/actors/device/step_state.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using test::ToDef;
using test::MakeTensor;
using test::Values;

namespace {
// An op that fails the step if it ever runs: Assert(false).
Operation Tripwire(const Scope& s, const Output& data) { return ops::Assert(s, false, {data}); }
}  // namespace

TEST_CASE("Run computes fetched values and returns them in fetch order") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Mul(root.WithOpName("y"), x, 3.f);
  ops::Add(root.WithOpName("z"), y, 1.f);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({{"x", MakeTensor<float>({1, 2}, {2})}}, {"z", "y:0"}, {}, &out).ok());
  REQUIRE(out.size() == 2);
  REQUIRE(Values<float>(out[0]) == std::vector<float>{4, 7});
  REQUIRE(Values<float>(out[1]) == std::vector<float>{3, 6});
}

TEST_CASE("pruning: a node the fetches do not need never runs, stateful or not") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x"), 2.f);
  auto y = ops::Square(root.WithOpName("y"), x);
  Tripwire(root.WithOpName("trip"), y);  // stateful, consumes y, but nobody needs it
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Status s = session.Run({}, {"y"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].scalar<float>() == 4.f);
  // The tripwire is real: running it as a target fails the step.
  s = session.Run({}, {}, {"trip"}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("'trip'") && Catch::Contains("assertion failed"));
}

TEST_CASE("a feed cuts the graph: what only feeds the fed tensor does not run") {
  Scope root = Scope::NewRootScope();
  auto p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT);  // would fail if it ran unfed
  auto mid = ops::Neg(root.WithOpName("mid"), p);
  auto guarded = ops::Identity(root.WithOpName("guarded").WithControlDependencies({Tripwire(root, p)}), mid);
  ops::Mul(root.WithOpName("out"), mid, 10.f);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Status s = session.Run({{"mid", Tensor::Scalar<float>(5)}}, {"out"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].scalar<float>() == 50.f);
  // Unfed, the placeholder runs and says what it needs.
  s = session.Run({}, {"out"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("must feed a value for placeholder tensor 'p'"));
  // A fed tensor that nothing needs is ignored (its value is still checked).
  REQUIRE(session.Run({{"p", Tensor::Scalar<float>(1)}, {"mid", Tensor::Scalar<float>(2)}}, {"out"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == 20.f);
  // Fetching a fed tensor returns the fed value.
  REQUIRE(session.Run({{"mid", Tensor::Scalar<float>(7)}}, {"mid"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == 7.f);
  (void)guarded;
}

TEST_CASE("executables are cached per (feeds, fetches, targets)") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_INT32);
  ops::Add(root.WithOpName("y"), x, 1);
  ops::Add(root.WithOpName("z"), x, 2);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  for (int i = 0; i < 5; ++i) REQUIRE(session.Run({{"x", Tensor::Scalar<int32_t>(i)}}, {"y"}, {}, &out).ok());
  REQUIRE(session.num_cached_executables() == 1);
  REQUIRE(out[0].scalar<int32_t>() == 5);
  REQUIRE(session.Run({{"x", Tensor::Scalar<int32_t>(1)}}, {"z"}, {}, &out).ok());
  REQUIRE(session.num_cached_executables() == 2);
  REQUIRE(out[0].scalar<int32_t>() == 3);
}

TEST_CASE("concurrent Run calls from several threads each get their own results") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 64}));
  auto w = ops::Fill(root, {64, 64}, 0.5f);
  ops::Sum(root.WithOpName("y"), ops::MatMul(root, x, w), {0, 1});
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  constexpr int kThreads = 4, kSteps = 25;
  std::vector<std::future<bool>> results;
  for (int t = 0; t < kThreads; ++t) {
    results.push_back(std::async(std::launch::async, [&session, t] {
      for (int i = 0; i < kSteps; ++i) {
        const float v = static_cast<float>(t * 100 + i);
        Tensor in(DT_FLOAT, TensorShape{8, 64});
        for (int64_t k = 0; k < in.NumElements(); ++k) in.data<float>()[k] = v;
        std::vector<Tensor> out;
        if (!session.Run({{"x", in}}, {"y"}, {}, &out).ok()) return false;
        // every element of x @ w is 64 * v * 0.5; 8 * 64 of them
        if (out[0].scalar<float>() != 8 * 64 * 64 * v * 0.5f) return false;
      }
      return true;
    }));
  }
  for (auto& r : results) {
    REQUIRE(r.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
    REQUIRE(r.get());
  }
}

TEST_CASE("a kernel error ends only its own step") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  ops::Add(root.WithOpName("sum"), a, b);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Status s = session.Run({{"a", MakeTensor<float>({1, 2}, {2})}, {"b", MakeTensor<float>({1, 2, 3}, {3})}}, {"sum"},
                         {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("node 'sum'") && Catch::Contains("Incompatible shapes: [2] vs. [3]"));
  REQUIRE(session.Run({{"a", MakeTensor<float>({1, 2}, {2})}, {"b", MakeTensor<float>({3, 4}, {2})}}, {"sum"}, {}, &out).ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{4, 6});
  // The previous results go when a step starts: a failed step leaves none, and
  // feeding last step's output back through the same vector works.
  REQUIRE(session.Run({{"a", out[0]}, {"b", MakeTensor<float>({1, 2, 3}, {3})}}, {"sum"}, {}, &out).code() ==
          Code::kInvalidArgument);
  CHECK(out.empty());
  REQUIRE(session.Run({{"a", MakeTensor<float>({1, 2}, {2})}, {"b", MakeTensor<float>({3, 4}, {2})}}, {"sum"}, {}, &out).ok());
  REQUIRE(session.Run({{"a", out[0]}, {"b", out[0]}}, {"sum"}, {}, &out).ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{8, 12});
}

TEST_CASE("RunOptions.timeout_in_ms ends a long step with DeadlineExceeded") {
  Scope root = Scope::NewRootScope();
  Output m = test::SlowChain(root);
  ops::Sum(root.WithOpName("out"), m, {0, 1});
  ops::Const(root.WithOpName("small"), 3);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOptions opts;
  opts.timeout_in_ms = 1;
  std::vector<Tensor> out;
  Status s = session.Run(opts, {}, {"out"}, {}, &out);
  REQUIRE(s.code() == Code::kDeadlineExceeded);
  REQUIRE_THAT(s.message(), Catch::Contains("deadline"));
  // The session stays usable for other steps.
  s = session.Run({}, {"small"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].scalar<int32_t>() == 3);
}

TEST_CASE("a step racing with Close ends Cancelled, whatever point it had reached") {
  // A dequeue that would wait forever, and Close at once from another thread: the step may be preparing its
  // partitions, running them, or about to run them when Close deregisters them.
  for (int i = 0; i < 200; ++i) {
    Scope root = Scope::NewRootScope();
    Output q = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT});
    ops::QueueEnqueue(root.WithOpName("put"), q, {ops::Const(root, 1.f)});
    ops::QueueDequeue(root.WithOpName("take"), q, {DT_FLOAT});
    Session session;
    REQUIRE(session.Create(ToDef(root)).ok());
    std::vector<Tensor> out;
    if (i % 2) {  // the executable cached; else the step prepares it while Close comes
      REQUIRE(session.Run({}, {}, {"put"}, &out).ok());
      REQUIRE(session.Run({}, {"take:0"}, {}, &out).ok());
    }
    auto step = std::async(std::launch::async, [&] {
      std::vector<Tensor> o;
      return session.Run({}, {"take:0"}, {}, &o);
    });
    if (i % 4 < 2) std::this_thread::yield();
    REQUIRE(session.Close().ok());
    const Status s = step.get();
    INFO(s.ToString());
    CHECK(s.code() == Code::kCancelled);
  }
}

TEST_CASE("bad feeds, fetches and targets are errors with codes") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{2}));
  ops::Neg(root.WithOpName("y"), x);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  const Tensor two = MakeTensor<float>({1, 2}, {2});
  Status s = session.Run({{"x", two}}, {"nope"}, {}, &out);
  REQUIRE(s.code() == Code::kNotFound);
  REQUIRE_THAT(s.message(), Catch::Contains("nope"));
  s = session.Run({{"nope:0", two}}, {"y"}, {}, &out);
  REQUIRE(s.code() == Code::kNotFound);
  s = session.Run({{"x", two}}, {"y:1"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  s = session.Run({{"x", two}}, {}, {"ghost"}, &out);
  REQUIRE(s.code() == Code::kNotFound);
  s = session.Run({{"x", Tensor::Scalar<int32_t>(1)}}, {"y"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("int32") && Catch::Contains("float"));
  s = session.Run({{"x", MakeTensor<float>({1, 2, 3}, {3})}}, {"y"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("[3]") && Catch::Contains("[2]"));
  s = session.Run({{"x", two}, {"x", two}}, {"y"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  s = session.Run({}, {}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE(session.Run({{"x", two}}, {"y"}, {}, &out).ok());
  REQUIRE(session.Close().ok());
  s = session.Run({{"x", two}}, {"y"}, {}, &out);
  REQUIRE(s.code() == Code::kCancelled);
}

TEST_CASE("a session on its own runtime, and Extend") {
  RuntimeOptions ro;
  ro.num_threads = 1;
  Runtime rt(ro);
  SessionOptions so;
  so.runtime = &rt;
  Session session(so);
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("a"), 2.f);
  REQUIRE(session.Create(ToDef(root)).ok());
  REQUIRE(session.Create(ToDef(root)).code() == Code::kAlreadyExists);
  proto::GraphDef more;
  REQUIRE(ParseGraphDefText("node { name: 'b' op: 'Neg' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } }",
                            &more).ok());
  Status es = session.Extend(more);
  INFO(es.ToString());
  REQUIRE(es.ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {"b"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == -2.f);
}

TEST_CASE("a session extended before it was created runs its graph, and one closed resets nothing") {
  // A remote client's first request may be Extend: the master finds its
  // devices and opens its worker sessions then, as Create would.
  RuntimeOptions ro;
  ro.num_threads = 1;
  Runtime rt(ro);
  SessionOptions so;
  so.runtime = &rt;
  Session session(so);
  Scope root = Scope::NewRootScope();
  ops::Neg(root.WithOpName("b"), ops::Const(root.WithOpName("a"), 2.f));
  const Status es = session.Extend(ToDef(root));
  INFO(es.ToString());
  REQUIRE(es.ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {"b"}, {}, &out).ok());
  CHECK(out[0].scalar<float>() == -2.f);
  REQUIRE(session.Close().ok());
  CHECK(session.Run({}, {"b"}, {}, &out).code() == Code::kCancelled);
  Session closed(so);
  REQUIRE(closed.Close().ok());
  CHECK(closed.ResetContainers({}).code() == Code::kCancelled);  // no worker session opened after Close
}

TEST_CASE("each intermediate tensor is released when its last consumer has run") {
  // 20 Casts alternating float <-> double over 1M elements: every node needs a
  // new buffer. Kept alive, they would total ~120 MB; released, a few at a time.
  Scope root = Scope::NewRootScope();
  Output v = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  for (int i = 0; i < 20; ++i) v = ops::Cast(root, v, i % 2 == 0 ? DT_DOUBLE : DT_FLOAT);
  ops::Sum(root.WithOpName("out"), v, 0);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor x(DT_FLOAT, TensorShape{1 << 20});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = 1.f;
  std::vector<Tensor> out;
  REQUIRE(session.Run({{"x", x}}, {"out"}, {}, &out).ok());  // warm up
  cpu_allocator()->ResetPeak();
  const int64_t before = cpu_allocator()->bytes_in_use();
  REQUIRE(session.Run({{"x", x}}, {"out"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == static_cast<float>(1 << 20));
  const int64_t peak = cpu_allocator()->peak_bytes_in_use() - before;
  INFO("peak bytes above baseline: " << peak);
  REQUIRE(peak < 32 * (1 << 20));
}

namespace readme {
// The README's C++ example, verbatim.
Status Example(std::vector<Tensor>* out) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Relu(root.WithOpName("y"), ops::MatMul(root, x, {{1.f, -1.f}, {2.f, 0.5f}}));
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(root.ToGraphDef(&def));   // the first error of any op above, naming the node
  Session session;                              // on the process's default Runtime
  AF_RETURN_IF_ERROR(session.Create(def));
  Tensor x_value(DT_FLOAT, TensorShape{1, 2});
  x_value.data<float>()[0] = 3;
  x_value.data<float>()[1] = 4;
  RunOptions opts;
  opts.timeout_in_ms = 1000;                    // DeadlineExceeded after 1 s
  return session.Run(opts, {{"x", x_value}}, {y.name()}, {}, out);  // "y:0" = [[11, 0]]
}
}  // namespace readme

TEST_CASE("the README's example computes what it says") {
  std::vector<Tensor> out;
  REQUIRE(readme::Example(&out).ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{11, 0});
}

TEST_CASE("step stats say how each node ran, when asked") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto big = ops::MatMul(root.WithOpName("big"), x, x);  // large: asynchronous MatMul
  auto small = ops::Neg(root.WithOpName("small"), ops::Rank(root, x));  // of a feed: not folded
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor m(DT_FLOAT, TensorShape{512, 512});
  for (int64_t i = 0; i < m.NumElements(); ++i) m.data<float>()[i] = 1.f;
  RunOptions opts;
  opts.trace_level = TraceLevel::kSoftwareTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  REQUIRE(session.Run(opts, {{"x", m}}, {big.name(), small.name()}, {}, &out, &md).ok());
  std::map<std::string, NodeExecStats> by_node;
  for (const auto& s : md.step_stats) by_node[s.node] = s;
  REQUIRE(by_node.count("big"));
  REQUIRE(by_node.count("small"));
  REQUIRE(by_node["big"].where == "async");
  REQUIRE(by_node["big"].op == "MatMul");
  REQUIRE(by_node["small"].where == "inline");
  for (const auto& s : md.step_stats) REQUIRE(s.start_us <= s.end_us);
  RunMetadata none;
  REQUIRE(session.Run({}, {{"x", m}}, {"small"}, {}, &out, &none).ok());
  REQUIRE(none.step_stats.empty());
}

TEST_CASE("Session::Run from an actor that a thread runs inline hands its step to a worker (no wait on itself)") {
  // A step starts on its caller's thread (ClientChannel::StartHere), except
  // on a thread already running actors inline: there the step's actors would
  // only join that run, which the caller, waiting, never drains.
  Runtime* rt = Runtime::Default();
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Add(root.WithOpName("y"), x, 1.f);
  auto session = test::Open(rt, root);
  std::vector<Tensor> out;
  // Registered and run once: the next step's actors are idle, so a thread
  // delivering to them would run them itself.
  REQUIRE(session->Run({{"x", Tensor::Scalar<float>(1)}}, {"y"}, {}, &out).ok());
  // One attempt per message: the actor answers whether the thread ran it
  // inline; only an inline attempt runs the step (the case under test).
  struct Attempt {
    bool inline_run = false;
    Status status;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Attempt> attempt;
  caf::actor runner = rt->system().spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[](bool b) { return b; },  // a ping: answered once the actor is up
            [&](int) {
      Attempt a;
      a.inline_run = InInlineDelivery();
      if (a.inline_run) {
        RunOptions ro;
        ro.timeout_in_ms = 5000;  // bounds the wait the bug would make
        a.status = session->Run(ro, {{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out, nullptr);
      }
      std::lock_guard<std::mutex> lock(mu);
      attempt = a;
      cv.notify_all();
    }};
  });
  {
    caf::scoped_actor self{rt->system()};
    bool up = false;
    self->request(runner, std::chrono::seconds(30), true).receive([&](bool b) { up = b; }, [](caf::error&) {});
    REQUIRE(up);
  }
  // The actor may still be finishing its last turn on a pool worker (then
  // the delivery only enqueues the message there): try again once it is
  // idle, a bounded number of times.
  Attempt done;
  for (int tries = 0; tries < 200 && !done.inline_run; ++tries) {
    {
      std::lock_guard<std::mutex> lock(mu);
      attempt.reset();
    }
    REQUIRE(DeliverInline(rt->compute_pool(), runner, nullptr, caf::make_message_id(), caf::make_message(1)));
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return attempt.has_value(); }));
    done = *attempt;
    if (!done.inline_run) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a retry's pause, orders nothing
    }
  }
  REQUIRE(done.inline_run);
  const Status s = done.status;
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(out[0].scalar<float>() == 3.f);
  caf::anon_send_exit(runner, caf::exit_reason::user_shutdown);
}

TEST_CASE("a failed step's unconsumed inputs go with the step; the plan's next step starts clean") {
  // y's Reshape fails, so Add never runs and x's value waits in its input
  // slot. The step's root iteration serves the plan's next step
  // (ExecutorPlan::spare_root): its slots must be emptied when the step
  // ends, not kept until the next one.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
  ops::Add(root.WithOpName("z"), x, ops::Reshape(root.WithOpName("r"), y, {3}));
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Tensor xv = test::MakeTensor<float>({1, 2, 3}, {3});
  REQUIRE(session.Run({{"x", xv}, {"y", test::MakeTensor<float>({10, 20, 30}, {3})}}, {"z"}, {}, &out).ok());
  CHECK(test::Values<float>(out[0]) == std::vector<float>{11, 22, 33});
  out.clear();
  const Status failed = session.Run({{"x", xv}, {"y", test::MakeTensor<float>({1, 2, 3, 4}, {4})}}, {"z"}, {}, &out);
  REQUIRE(failed.code() == Code::kInvalidArgument);
  // Answered at the error; the step itself ends once nothing of it runs.
  CHECK(test::WaitUntil([&] { return xv.RefCountIsOne(); }, std::chrono::seconds(30)));
  REQUIRE(session.Run({{"x", xv}, {"y", test::MakeTensor<float>({-1, -2, -3}, {3})}}, {"z"}, {}, &out).ok());
  CHECK(test::Values<float>(out[0]) == std::vector<float>{0, 0, 0});
  // A step that ran to its end keeps none of its feeds (the client may be
  // answered a moment before the step's state is gone: a worker ran it).
  CHECK(test::WaitUntil([&] { return xv.RefCountIsOne(); }, std::chrono::seconds(30)));
}

TEST_CASE("a step on a device actor another thread is running goes as a message, run after that turn") {
  // Session::Run starts a step on an idle device actor as a turn with no
  // message (RunStepHere); on one that is not idle the step goes as a
  // message, which queues until the actor's runner gets to it: here, the
  // thread holding a turn of the device actor (RunTurnInline), which runs
  // what came meanwhile once its turn ends.
  Runtime rt(test::TwoThreads());
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Add(root.WithOpName("y"), x, 1.f);
  auto session = test::Open(&rt, root);
  std::vector<Tensor> out;
  REQUIRE(session->Run({{"x", Tensor::Scalar<float>(1)}}, {"y"}, {}, &out).ok());
  auto* device = dynamic_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(rt.device_actor(0)));
  REQUIRE(device);
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false, release = false;  // holding: the turn runs (or the thread gave up: holder 0)
  uint64_t holder = 0;
  struct Hold {
    std::mutex* mu;
    std::condition_variable* cv;
    bool *holding, *release;
    uint64_t* holder;
  } hold{&mu, &cv, &holding, &release, &holder};
  auto let_go = [&] {
    {
      std::lock_guard<std::mutex> l(mu);
      release = true;
    }
    cv.notify_all();
  };
  // A thread of its own (one actor system per inline thread) takes a turn of
  // the device actor once it is idle (its last turn may still be ending on a
  // worker) and holds it until let go.
  bool held = false;
  std::thread h([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!held && std::chrono::steady_clock::now() < until) {
      held = RunTurnInline(rt.compute_pool(), device,
                           [](void* arg) {
                             auto* h = static_cast<Hold*>(arg);
                             std::unique_lock<std::mutex> l(*h->mu);
                             *h->holder = ThisThreadId();
                             *h->holding = true;
                             h->cv->notify_all();
                             h->cv->wait(l, [h] { return *h->release; });
                           },
                           &hold);
      if (!held) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a retry's pause, orders nothing
    }
    if (!held) {
      std::lock_guard<std::mutex> l(mu);
      holding = true;  // wakes the test, which finds no holder
      cv.notify_all();
    }
  });
  bool turn_runs;
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return holding; });
    turn_runs = holder != 0;
  }
  if (!turn_runs) h.join();
  REQUIRE(turn_runs);
  Status stepped;
  RunMetadata md;
  std::vector<Tensor> got;
  std::atomic<bool> done{false};
  std::thread c([&] {
    RunOptions ro;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    ro.timeout_in_ms = 60000;
    stepped = session->Run(ro, {{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &got, &md);
    done = true;
  });
  // The step's message waits in the held actor's mailbox (only the holder touches the rest of it now).
  const bool queued = test::WaitUntil([&] { return !device->mailbox().empty(); }, std::chrono::seconds(30));
  CHECK_FALSE(done.load());
  let_go();
  h.join();
  c.join();
  REQUIRE(queued);
  INFO(stepped.ToString());
  REQUIRE(stepped.ok());
  CHECK(got[0].scalar<float>() == 3.f);
  REQUIRE_FALSE(md.step_stats.empty());
  for (const auto& s : md.step_stats) CHECK(s.thread == holder);  // run by the holder, after its turn
}
