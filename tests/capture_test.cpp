// CUDA-graph capture of a partition's steps (actors/device/step_capture.hpp)
// as the executor runs it, on the host: a fake device whose test kernel only
// "enqueues" its work (a closure run at once, or recorded while the device
// captures) stands in for a GPU, so what the executor does is checked here:
// the steps it watches, the dry run that records them (fixed buffers for the
// feeds, nothing executed), the replays (feeds copied in, one launch, the
// fetches copied out, the other nodes skipped), results equal to the
// uncaptured steps', the fallback when the shapes change, and the reasons a
// partition is not captured, in the trace. The CUDA side (stream capture,
// cudaGraphLaunch) is gpu_training_test's.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/actors/device/step_capture.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/capture_arena.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "executor_test_host.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

std::atomic<int> g_scale_runs{0};  // CaptureTestScale kernels that ran (enqueued their work)

// A device whose work is "enqueued": run at once, or recorded while capturing.
class FakeCaptureDevice final : public Device {
 public:
  FakeCaptureDevice(ComputePool* pool) : Device(test::kCpu0, DEVICE_CPU, cpu_allocator(), pool) {}
  bool SyncsAtStepEnd() const override { return true; }
  bool CanCapture() const override { return can_capture; }
  Status BeginCapture(Allocator* arena) override {
    ++begins;
    recording_.clear();
    set_allocator(arena);
    set_capturing(true);
    return Status::OK();
  }
  Status EndCapture(std::unique_ptr<CapturedWork>* out) override {
    set_allocator(cpu_allocator());
    set_capturing(false);
    recorded = static_cast<int>(recording_.size());
    if (fail_capture) return errors::Internal("the capture was invalidated (test)");
    *out = std::make_unique<Work>(this, std::move(recording_));
    return Status::OK();
  }
  Status CopyOnDevice(const void* src, void* dst, size_t bytes) override {
    Enqueue([=] { std::memcpy(dst, src, bytes); });
    return Status::OK();
  }
  Status CopyFromHost(const Tensor& src, void* dst) override {  // staged: src may change once this returns
    if (capturing()) return errors::Unimplemented("a copy from the host while capturing (test)");
    ++copies_from_host;
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src.raw_data()),
                                                      static_cast<const char*>(src.raw_data()) + src.TotalBytes());
    Enqueue([staged, dst] { std::memcpy(dst, staged->data(), staged->size()); });
    return Status::OK();
  }
  void Enqueue(std::function<void()> fn) {
    if (capturing()) recording_.push_back(std::move(fn));
    else fn();
  }

  bool can_capture = true;
  bool fail_capture = false;
  int begins = 0, recorded = 0, launches = 0, copies_from_host = 0;

 private:
  struct Work final : CapturedWork {
    Work(FakeCaptureDevice* d, std::vector<std::function<void()>> fns) : d(d), fns(std::move(fns)) {}
    Status Launch() override {
      ++d->launches;
      for (auto& fn : fns) fn();
      return Status::OK();
    }
    FakeCaptureDevice* d;
    std::vector<std::function<void()>> fns;
  };
  std::vector<std::function<void()>> recording_;
};

AF_REGISTER_OP("CaptureTestScale").Input("x: float").Output("y: float").SetShapeFn(shape_fns::Unchanged)
    .Doc("Test only: y = 2x + 1, enqueued on a FakeCaptureDevice.");

// As a GPU kernel: allocates its output and enqueues the arithmetic on raw pointers.
class CaptureTestScale final : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  bool RunsInline(const Tensor*, int) const override { return true; }
  void ComputeInline(OpKernelContext* ctx) override {
    ++g_scale_runs;
    const Tensor& x = ctx->input(0);
    Tensor* y = nullptr;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const float* in = x.data<float>();
    float* out = y->data<float>();
    const int64_t n = x.NumElements();
    static_cast<FakeCaptureDevice*>(ctx->device())->Enqueue([in, out, n] {
      for (int64_t i = 0; i < n; ++i) out[i] = 2.f * in[i] + 1.f;
    });
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ComputeInline(ctx);
    done();
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("CaptureTestScale").Device(DEVICE_CPU), CaptureTestScale);

AF_REGISTER_OP("CaptureTestPick")
    .Input("x: float")
    .Input("labels: int32")
    .Output("y: float")
    .Doc("Test only: y[r] = x[r, labels[r]] (NaN out of range), enqueued on a FakeCaptureDevice, as the GPU's "
         "SparseSoftmaxCrossEntropyWithLogits reads its labels in host or device memory.");

class CaptureTestPick final : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  bool RunsInline(const Tensor*, int) const override { return true; }
  bool ReadsInDeviceMemory(int i) const override { return i == 1; }
  void ComputeInline(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    Tensor* y = nullptr;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{x.dim_size(0)}, &y));
    const float* in = x.data<float>();
    const int32_t* l = labels.data<int32_t>();
    float* out = y->data<float>();
    const int64_t rows = x.dim_size(0), cols = x.dim_size(1);
    static_cast<FakeCaptureDevice*>(ctx->device())->Enqueue([in, l, out, rows, cols] {
      for (int64_t r = 0; r < rows; ++r) out[r] = l[r] >= 0 && l[r] < cols ? in[r * cols + l[r]] : NAN;
    });
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ComputeInline(ctx);
    done();
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("CaptureTestPick").Device(DEVICE_CPU), CaptureTestPick);

// Feeds by tensor name; what the _Sends sent, by tensor name.
class FakeRendezvous final : public ExecutorRendezvous {
 public:
  struct Pending {
    int64_t step;
    IterationState* iter;
    int32_t node;
    std::string key;
  };
  void Send(int64_t, const RendezvousKey& key, const Tensor& value, bool, bool) override {
    sent[NameOf(key.str())] = value;
  }
  void Recv(int64_t, const RendezvousKey&, RecvCallback done) override {
    done(errors::Unimplemented("test"), Tensor(), false);
  }
  void RecvForNode(int64_t step, int64_t, IterationState* iter, int32_t node, int64_t,
                   const RendezvousKey& key) override {
    pending.push_back({step, iter, node, key.str()});
  }
  void Abort(int64_t, const Status&) override {}
  void Flush() override {}
  static std::string NameOf(const std::string& key) {
    for (const char* n : {";x;", ";z;", ";y;", ";w;", ";l;"})
      if (key.find(n) != std::string::npos) return std::string(n).substr(1, 1);
    return key;
  }
  std::map<std::string, Tensor> feeds, sent;
  std::vector<Pending> pending;
  Status fail_with;  // when set: every _Recv gets it (the step aborted elsewhere)
};

// _Recv x (and z) -> CaptureTestScale twice -> _Send y (and a second chain to w).
// With `labels`: _Recv x and _Recv l (int32) -> CaptureTestPick -> _Send y.
std::string PartitionText(bool two_chains, const std::string& extra = "", bool labels = false) {
  const std::string cpu = test::kCpu0, other = "/job:localhost/replica:0/task:0/device:CPU:1";
  auto recv = [&](const std::string& name, const std::string& type) {
    return "node { name: '" + name + "_recv' op: '_Recv' attr { key: 'tensor_type' value { type: " + type +
           " } } attr { key: 'tensor_name' value { s: '" + name + "' } } attr { key: 'send_device' value { s: '" +
           other + "' } } attr { key: 'send_device_incarnation' value { i: 1 } } attr { key: 'recv_device' "
           "value { s: '" + cpu + "' } } }\n";
  };
  auto send = [&](const std::string& name, const std::string& input) {
    return "node { name: '" + name + "_send' op: '_Send' input: '" + input +
           "' attr { key: 'T' value { type: DT_FLOAT } } attr { key: 'tensor_name' value { s: '" + name +
           "' } } attr { key: 'send_device' value { s: '" + cpu + "' } } attr { key: 'send_device_incarnation' "
           "value { i: 1 } } attr { key: 'recv_device' value { s: '" + other + "' } } }\n";
  };
  auto scale = [](const std::string& name, const std::string& input) {
    return "node { name: '" + name + "' op: 'CaptureTestScale' input: '" + input + "' }\n";
  };
  if (labels)  // x [rows, cols] and its labels: y = x[r, labels[r]]
    return recv("x", "DT_FLOAT") + recv("l", "DT_INT32") +
           "node { name: 'pick' op: 'CaptureTestPick' input: 'x_recv' input: 'l_recv' }\n" + send("y", "pick") + extra;
  std::string text = recv("x", "DT_FLOAT") + scale("s1", "x_recv") + scale("s2", "s1") + send("y", "s2");
  if (two_chains) text += recv("z", "DT_FLOAT") + scale("t1", "z_recv") + send("w", "t1");
  return text + extra;
}

struct Fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys = std::make_unique<caf::actor_system>(cfg);
  ComputePool pool{sys.get(), 2};
  FakeCaptureDevice device{&pool};
  test::ExecutorTestHost host;
  FakeRendezvous rendezvous;
  Executor executor{ExecutorServices{&device, &host, nullptr, &rendezvous, nullptr}};
  ~Fixture() { sys.reset(); }

  std::shared_ptr<const ExecutorPlan> Plan(const std::string& text) {
    Graph g;
    Status s = test::Import(text, &g);
    INFO(s.ToString());
    REQUIRE(s.ok());
    std::unique_ptr<ExecutorPlan> plan;
    s = ExecutorPlan::Build(g, &device, &plan, nullptr);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return std::shared_ptr<const ExecutorPlan>(std::move(plan));
  }

  // One step of `plan` (graph handle 1) with the feeds set; plays the host
  // (resumes, _Recvs answered from the feeds) until it is answered and the
  // executor idle. Returns the response; `how` gets the trace's capture entry.
  RunStepResponse Run(const std::shared_ptr<const ExecutorPlan>& plan, std::string* how = nullptr) {
    RunStepRequest req;
    req.step_id = ++client_step;
    req.collect_stats = true;
    req.multi_partition = true;
    std::optional<RunStepResponse> reply;
    {
      Executor::RunningScope running(&executor, nullptr);
      executor.StartStep(plan, 1, req, [&](RunStepResponse&& r) { reply = std::move(r); });
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((!reply || !executor.idle() || host.resume) && std::chrono::steady_clock::now() < give_up) {
      Executor::RunningScope running(&executor, nullptr);
      if (!rendezvous.pending.empty()) {
        auto p = rendezvous.pending.front();
        rendezvous.pending.erase(rendezvous.pending.begin());
        executor.RecvNodeDone(p.step, p.iter, p.node, 0, rendezvous.fail_with,
                              rendezvous.fail_with.ok() ? rendezvous.feeds[FakeRendezvous::NameOf(p.key)] : Tensor(),
                              false);
        executor.Run();
        continue;
      }
      if (host.resume) {
        host.resume = false;
        executor.Resume();
        continue;
      }
      host.HandBack(&executor);
    }
    REQUIRE(reply);
    REQUIRE(executor.idle());
    if (how) {
      how->clear();
      for (const NodeExecStats& st : reply->stats)
        if (st.node == "_capture") *how = st.where;
    }
    return std::move(*reply);
  }
  int64_t client_step = 0;
};

std::vector<float> Expected(const std::vector<float>& x) {  // two scalings: 2(2x + 1) + 1
  std::vector<float> y;
  for (float v : x) y.push_back(4.f * v + 3.f);
  return y;
}

}  // namespace

TEST_CASE("capture: after 3 identical steps the partition is captured once and replayed; results equal the "
          "uncaptured steps'") {
  Fixture f;
  auto plan = f.Plan(PartitionText(false));
  std::string how;
  for (int step = 0; step < 10; ++step) {
    INFO("step " << step);
    const std::vector<float> x = {1.f * step, -2.f, 0.5f * step, 7.f};
    f.rendezvous.feeds["x"] = test::MakeTensor<float>(x, {4});
    const int runs_before = g_scale_runs.load();
    RunStepResponse r = f.Run(plan, &how);
    INFO(r.status.ToString());
    REQUIRE(r.status.ok());
    REQUIRE(f.rendezvous.sent.count("y"));
    CHECK(test::Values<float>(f.rendezvous.sent["y"]) == Expected(x));
    f.rendezvous.sent.clear();
    if (step < 3) {
      CHECK_THAT(how, Catch::StartsWith("uncaptured: watching"));
      // Both kernels ran; after the third step, once more in the dry run (recorded, not executed).
      CHECK(g_scale_runs.load() - runs_before == (step == 2 ? 4 : 2));
    } else {
      CHECK(how == "replayed");
      CHECK(g_scale_runs.load() - runs_before == 0);  // skipped: their work is in the launch
    }
  }
  CHECK(f.device.begins == 1);    // captured once, in the dry run after step 3
  CHECK(f.device.recorded == 2);  // the two kernels' work, nothing else
  CHECK(f.device.launches == 7);
}

TEST_CASE("capture: integer labels from the host, read in device memory by every consumer, are captured; each "
          "replay copies them in from the host") {
  Fixture f;
  auto plan = f.Plan(PartitionText(false, "", true));
  REQUIRE(AnalyzeCapture(*plan).reason.empty());
  std::string how;
  const std::vector<float> x = {0.f, 1.f, 2.f, 10.f, 11.f, 12.f};  // [2, 3]
  for (int step = 0; step < 8; ++step) {
    INFO("step " << step);
    const std::vector<int32_t> labels = {step % 3, (step + 1) % 3};
    f.rendezvous.feeds["x"] = test::MakeTensor<float>(x, {2, 3});
    f.rendezvous.feeds["l"] = test::MakeTensor<int32_t>(labels, {2});
    RunStepResponse r = f.Run(plan, &how);
    INFO(r.status.ToString());
    REQUIRE(r.status.ok());
    CHECK(test::Values<float>(f.rendezvous.sent["y"]) ==
          std::vector<float>{x[static_cast<size_t>(labels[0])], x[3 + static_cast<size_t>(labels[1])]});
    CHECK(how == (step < 3 ? "uncaptured: watching for identical steps before capturing" : "replayed"));
  }
  CHECK(f.device.copies_from_host == 5);  // once per replay: the labels, not the float feed
  // Out of range in a replay: read on the device unchecked, NaN (TensorFlow's
  // GPU kernel); the next step replays as before.
  f.rendezvous.feeds["l"] = test::MakeTensor<int32_t>({-1, 3}, {2});
  RunStepResponse bad = f.Run(plan, &how);
  REQUIRE(bad.status.ok());
  CHECK(how == "replayed");
  const std::vector<float> nans = test::Values<float>(f.rendezvous.sent["y"]);
  CHECK((nans.size() == 2 && std::isnan(nans[0]) && std::isnan(nans[1])));
  f.rendezvous.feeds["l"] = test::MakeTensor<int32_t>({2, 0}, {2});
  REQUIRE(f.Run(plan, &how).status.ok());
  CHECK(how == "replayed");
  CHECK(test::Values<float>(f.rendezvous.sent["y"]) == std::vector<float>{2.f, 10.f});
  // A consumer that reads them on the host (Cast): not captured, saying which _Recv.
  auto cast = f.Plan(PartitionText(false, "node { name: 'c' op: 'Cast' input: 'l_recv' attr { key: 'SrcT' value { "
                                          "type: DT_INT32 } } attr { key: 'DstT' value { type: DT_FLOAT } } }\n",
                                          true));
  CHECK_THAT(AnalyzeCapture(*cast).reason, Catch::Contains("'l_recv' (op '_Recv') receives a tensor of int32"));
}

TEST_CASE("capture: a replay whose _Recv fails ends (its parked nodes too), and the next step replays") {
  Fixture f;
  auto plan = f.Plan(PartitionText(true));
  std::string how;
  f.rendezvous.feeds["x"] = test::MakeTensor<float>({1.f, 2.f}, {2});
  f.rendezvous.feeds["z"] = test::MakeTensor<float>({3.f}, {1});
  for (int i = 0; i < 4; ++i) REQUIRE(f.Run(plan, &how).status.ok());
  CHECK(how == "replayed");
  f.rendezvous.fail_with = errors::Aborted("the step was aborted by another partition (test)");
  RunStepResponse r = f.Run(plan, &how);  // Run REQUIREs the executor idle after the answer
  CHECK(r.status.code() == Code::kAborted);
  f.rendezvous.fail_with = Status::OK();
  f.rendezvous.sent.clear();
  REQUIRE(f.Run(plan, &how).status.ok());
  CHECK(how == "replayed");
  CHECK(test::Values<float>(f.rendezvous.sent["y"]) == Expected({1.f, 2.f}));
}

TEST_CASE("capture: new shapes fall back to an uncaptured step and drop the capture; it is made again") {
  Fixture f;
  auto plan = f.Plan(PartitionText(true));
  std::string how;
  auto step = [&](const std::vector<float>& x, const std::vector<float>& z) {
    f.rendezvous.feeds["x"] = test::MakeTensor<float>(x, {static_cast<int64_t>(x.size())});
    f.rendezvous.feeds["z"] = test::MakeTensor<float>(z, {static_cast<int64_t>(z.size())});
    RunStepResponse r = f.Run(plan, &how);
    INFO(r.status.ToString());
    REQUIRE(r.status.ok());
    CHECK(test::Values<float>(f.rendezvous.sent["y"]) == Expected(x));
    std::vector<float> w;
    for (float v : z) w.push_back(2.f * v + 1.f);
    CHECK(test::Values<float>(f.rendezvous.sent["w"]) == w);
  };
  for (int i = 0; i < 4; ++i) step({1.f, 2.f, float(i)}, {float(i)});
  CHECK(how == "replayed");
  step({1.f, 2.f}, {3.f});  // x's shape changed (a last, smaller batch): as usual, the capture kept
  CHECK_THAT(how, Catch::StartsWith("uncaptured: the received shapes changed"));
  step({1.f, 2.f, 3.f}, {4.f});
  CHECK(how == "replayed");
  CHECK(f.device.begins == 1);
  // The new shapes stay: after 3 such steps the capture is dropped, then made for them.
  for (int i = 0; i < 6; ++i) step({float(i), 1.f}, {3.f});
  CHECK(f.device.begins == 2);
  step({5.f, 6.f}, {7.f});
  CHECK(how == "replayed");
}

TEST_CASE("capture: a capture that fails leaves the step's results intact, and the partition runs as usual") {
  Fixture f;
  f.device.fail_capture = true;
  auto plan = f.Plan(PartitionText(false));
  std::string how;
  for (int step = 0; step < 6; ++step) {
    const std::vector<float> x = {float(step)};
    f.rendezvous.feeds["x"] = test::MakeTensor<float>(x, {1});
    RunStepResponse r = f.Run(plan, &how);
    REQUIRE(r.status.ok());
    CHECK(test::Values<float>(f.rendezvous.sent["y"]) == Expected(x));
    CHECK_THAT(how, Catch::StartsWith("uncaptured"));
  }
  CHECK(f.device.begins == 2);  // tried after the 3rd step, and again only after 3 more identical ones
  CHECK(f.device.launches == 0);
  // After kMaxDrops failed captures, capture is off for the partition, saying why.
  for (int step = 0; step < 3 * StepCapture::kMaxDrops; ++step) {
    f.rendezvous.feeds["x"] = test::MakeTensor<float>({1.f}, {1});
    REQUIRE(f.Run(plan, &how).status.ok());
  }
  CHECK(f.device.begins == StepCapture::kMaxDrops);
  CHECK_THAT(how, Catch::Contains("dropped") && Catch::Contains("invalidated (test)"));
}

TEST_CASE("capture: the reasons a partition is not captured") {
  Fixture f;
  auto reason = [&](const std::string& text) { return AnalyzeCapture(*f.Plan(text)).reason; };
  CHECK(reason(PartitionText(true)).empty());
  CHECK(AnalyzeCapture(*f.Plan(PartitionText(true))).recvs.size() == 2);
  // A feed that is not float32: it stays in host memory on a GPU.
  std::string text = PartitionText(false);
  const auto at = text.find("DT_FLOAT");
  CHECK_THAT(reason(text.substr(0, at) + "DT_INT32" + text.substr(at + 8).replace(
                 text.substr(at + 8).find("input: 'x_recv'"), 15, "input: 'c'") +
                 "node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } attr { key: 'value' "
                 "value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }\n"),
             Catch::Contains("receives a tensor of int32 that stays in host memory"));
  // A stateful op.
  CHECK_THAT(reason(PartitionText(false, "node { name: 'r' op: 'RandomUniform' input: 'shape' attr { key: 'dtype' "
                                         "value { type: DT_FLOAT } } attr { key: 'T' value { type: DT_INT32 } } }\n"
                                         "node { name: 'shape' op: 'Const' attr { key: 'dtype' value { type: "
                                         "DT_INT32 } } attr { key: 'value' value { tensor { dtype: DT_INT32 "
                                         "tensor_shape { dim { size: 1 } } int_val: 2 } } } }\n")),
             Catch::Contains("'r' (op 'RandomUniform') is stateful"));
  // A variable's value sent as it is (a ref edge read at each step), and an Assign.
  const std::string var = "node { name: 'v' op: 'VariableV2' attr { key: 'dtype' value { type: DT_FLOAT } } "
                          "attr { key: 'shape' value { shape { dim { size: 1 } } } } }\n";
  std::string sends_var = PartitionText(false, var);
  sends_var.replace(sends_var.find("input: 's2'"), 11, "input: 'v'");
  CHECK_THAT(reason(sends_var), Catch::Contains("sends a variable's value"));
  CHECK_THAT(reason(PartitionText(false, var + "node { name: 'set' op: 'Assign' input: 'v' input: 's2' attr { key: "
                                                "'T' value { type: DT_FLOAT } } }\n")),
             Catch::Contains("'set' (op 'Assign') gives its variable a new buffer"));
  // The session's option off.
  std::string off = PartitionText(false);
  off.replace(off.find("op: 'CaptureTestScale'"), 22,
              "op: 'CaptureTestScale' attr { key: '_no_capture' value { s: 'capture is off (test)' } }");
  CHECK_THAT(reason(off), Catch::Contains("capture is off (test)"));
  // A device that cannot capture.
  f.device.can_capture = false;
  CHECK_THAT(reason(PartitionText(false)), Catch::Contains("cannot capture"));
}

TEST_CASE("capture: StepCapture counts identical steps, and gives up after repeated drops with the last reason") {
  Fixture f;
  StepCapture c(f.Plan(PartitionText(false)));
  CaptureSignature a{{DT_FLOAT}, {TensorShape{4}}}, b{{DT_FLOAT}, {TensorShape{5}}};
  c.Observed(a, true);
  c.Observed(a, true);
  CHECK_FALSE(c.CaptureDue());
  c.Observed(b, true);  // another signature starts the count again
  c.Observed(b, true);
  c.Observed(b, false);  // a failed step too
  c.Observed(b, true);
  c.Observed(b, true);
  CHECK_FALSE(c.CaptureDue());
  c.Observed(b, true);
  CHECK(c.CaptureDue());
  CHECK(c.signature() == b);
  for (int i = 0; i < StepCapture::kMaxDrops; ++i) c.Drop("reason " + std::to_string(i));
  CHECK(c.off());
  CHECK_THAT(c.reason(), Catch::Contains("reason 7"));
}

TEST_CASE("capture: the arena reuses blocks freed within the capture and gives them back when it is released") {
  CaptureArena* arena = NewCaptureArena(cpu_allocator(), "test arena");
  void* a = arena->AllocateRaw(64, 1024);
  REQUIRE(a != nullptr);
  arena->DeallocateRaw(a, 1024);
  CHECK(arena->held_bytes() == 1024);       // out of the base while the capture lives
  void* b = arena->AllocateRaw(64, 4096);    // too big for it: a new block
  CHECK(b != a);
  void* c = arena->AllocateRaw(64, 1000);    // fits: the capture reuses it, as its one stream would
  CHECK(c == a);
  void* d = arena->AllocateRaw(64, 100);     // far smaller than any kept block: a new one
  CHECK(d != a);
  CHECK(arena->held_bytes() == 1024 + 4096 + 100);
  arena->DeallocateRaw(d, 100);
  arena->Release();
  CHECK(arena->held_bytes() == 1024 + 4096);  // b and c, still in tensors
  arena->DeallocateRaw(b, 4096);
  arena->DeallocateRaw(c, 1000);               // its block's own size goes back to the base
  CHECK(arena->held_bytes() == 0);
}
