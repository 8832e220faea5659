// The GPU as a training device: variables placed on GPU:0 keep their values
// in its memory and are updated there (Assign, AssignAdd/Sub, every Apply
// op) with the CPU's results; the default placement puts a whole MLP training
// step on the GPU (variables, forward, backward, SGD) and its loss follows the
// same model trained on the CPU step by step; a GPU variable is saved and
// restored.
//
// Needs a GPU: without one (or in a build without CUDA) the program prints why
// and exits 77, which CTest reports as skipped (SKIP_RETURN_CODE), never as
// passed. The placement rules themselves are tested everywhere
// (placement_gpu_test), and the optimizers' element formulas the GPU kernels
// use are checked against the CPU's updates in variables_test.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/saver.hpp"
#include "actorflow/client/train/variables.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "gpu_util.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::ExpectClose;
using test::kCpu;
using test::kGpu;
using test::NewSession;
using test::Random;

namespace {

Runtime* g_gpu_runtime = nullptr;  // with GPU:0
Runtime* g_cpu_runtime = nullptr;  // the same process's CPU only, for references


std::vector<Tensor> Run(Session* session, const std::vector<std::string>& fetches,
                        const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                        const std::vector<std::string>& targets = {}) {
  RunOptions options;
  options.timeout_in_ms = 60000;  // never hang
  std::vector<Tensor> out;
  Status s = session->Run(options, feeds, fetches, targets, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

// Variables v0 (the variable), v1 and v2 (slots) set from fixed values, and
// one Apply op of `kind` over them with the fed gradient; on `device`.
struct ApplyGraph {
  std::vector<std::string> vars;
  std::string init, apply;
};

ApplyGraph BuildApply(const Scope& root, const std::string& device, const std::string& kind, bool nesterov,
                      const Output& grad) {
  Scope s = root.WithDevice(device).NewSubScope(device == "/device:CPU:0" ? "cpu" : "gpu");
  const TensorShape shape{37, 11};
  ApplyGraph g;
  std::vector<Output> refs;
  std::vector<Operation> inits;
  for (int i = 0; i < 3; ++i) {
    Output v = ops::Variable(s.WithOpName("v" + std::to_string(i)), PartialTensorShape(shape.dim_sizes()), DT_FLOAT);
    // Slots start positive (Adagrad's accumulator and RMSProp's mean square divide by their roots).
    inits.push_back(ops::Assign(s, v, Random(shape, 100 + i, i == 0 ? -1.f : 0.1f, 1.f)).op());
    refs.push_back(v);
    g.vars.push_back(v.name());
  }
  g.init = ops::NoOp(s.WithControlDependencies(inits).WithOpName("init")).name();
  Output gfeed = ops::Identity(s, grad);
  auto c = [&](float v) { return ops::Const(s, v); };
  Output out;
  if (kind == "GradientDescent") out = ops::ApplyGradientDescent(s, refs[0], c(0.1f), gfeed);
  if (kind == "Momentum") out = ops::ApplyMomentum(s, refs[0], refs[1], c(0.05f), gfeed, c(0.9f), nesterov);
  if (kind == "Adam")
    out = ops::ApplyAdam(s, refs[0], refs[1], refs[2], c(0.81f), c(0.998f), c(0.01f), c(0.9f), c(0.999f), c(1e-7f),
                         gfeed, nesterov);
  if (kind == "Adagrad") out = ops::ApplyAdagrad(s, refs[0], refs[1], c(0.1f), gfeed);
  if (kind == "RMSProp")
    out = ops::ApplyRMSProp(s, refs[0], refs[1], refs[2], c(0.01f), c(0.9f), c(0.5f), c(1e-6f), gfeed);
  g.apply = out.node()->name();
  return g;
}

}  // namespace

TEST_CASE("a variable on GPU:0: Assign, AssignAdd and AssignSub match the CPU, and reads see each update whole") {
  Scope root = Scope::NewRootScope();
  auto value = ops::Placeholder(root.WithOpName("value"), DT_FLOAT);
  std::map<std::string, std::vector<std::string>> names;  // device -> assign, add, sub, read
  for (const char* device : {"/device:GPU:0", "/device:CPU:0"}) {
    Scope s = root.WithDevice(device).NewSubScope(device[8] == 'G' ? "gpu" : "cpu");
    Output v = ops::Variable(s.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{64, 3}), DT_FLOAT);
    names[device] = {ops::Assign(s.WithOpName("assign"), v, value).node()->name(),
                     ops::AssignAdd(s.WithOpName("add"), v, value).node()->name(),
                     ops::AssignSub(s.WithOpName("sub"), v, ops::Mul(s, value, 0.25f)).node()->name(),
                     ops::Identity(s.WithOpName("read"), v).name()};
  }
  auto session = NewSession(g_gpu_runtime, root);
  const Tensor x = Random({64, 3}, 1);
  const Tensor y = Random({64, 3}, 2);
  const auto& gpu = names["/device:GPU:0"];
  const auto& cpu = names["/device:CPU:0"];
  for (int k = 0; k < 3; ++k) {  // assign, add, sub: each read after, on both devices
    const Tensor& fed = k == 0 ? x : y;
    Run(session.get(), {}, {{"value", fed}}, {gpu[k], cpu[k]});
    if (k == 0) {  // the placement of the signature just prepared
      CHECK(session->LastPlacement()["gpu/v"] == kGpu);
      CHECK(session->LastPlacement()["gpu/assign"] == kGpu);
    }
    std::vector<Tensor> out = Run(session.get(), {gpu[3], cpu[3]});
    if (k == 0) CHECK(session->LastPlacement()["gpu/read"] == kGpu);
    INFO("after " << gpu[k]);
    ExpectClose(out[0], out[1]);
  }
}

TEST_CASE("every Apply op on GPU:0 updates its variables in place as the CPU does") {
  for (const auto& [kind, nesterov] : std::vector<std::pair<std::string, bool>>{
           {"GradientDescent", false}, {"Momentum", false}, {"Momentum", true}, {"Adam", false}, {"Adam", true},
           {"Adagrad", false}, {"RMSProp", false}}) {
    INFO(kind << (nesterov ? " (Nesterov)" : ""));
    Scope root = Scope::NewRootScope();
    auto grad = ops::Placeholder(root.WithOpName("grad"), DT_FLOAT);
    ApplyGraph on_gpu = BuildApply(root, "/device:GPU:0", kind, nesterov, grad);
    ApplyGraph on_cpu = BuildApply(root, "/device:CPU:0", kind, nesterov, grad);
    auto session = NewSession(g_gpu_runtime, root);
    Run(session.get(), {}, {}, {on_gpu.init, on_cpu.init});
    for (int step = 0; step < 3; ++step) {
      Run(session.get(), {}, {{"grad", Random({37, 11}, 10 + step)}}, {on_gpu.apply, on_cpu.apply});
      if (step == 0) CHECK(session->LastPlacement()[on_gpu.apply] == kGpu);
      std::vector<std::string> fetch = on_gpu.vars;
      fetch.insert(fetch.end(), on_cpu.vars.begin(), on_cpu.vars.end());
      std::vector<Tensor> out = Run(session.get(), fetch);
      for (int i = 0; i < 3; ++i) {
        INFO("step " << step << " variable " << i);
        ExpectClose(out[i], out[3 + i], 1e-5f);
      }
    }
  }
}

// Three variables per optimizer (one larger than a multi-tensor chunk, so its
// chunks span blocks), updated by one fused node on the GPU (the default)
// and by separate Apply* nodes (fusion off): the same values step by step.
TEST_CASE("the Apply ops of one optimizer on GPU:0 run as one fused multi-tensor launch, as the separate ops do") {
  for (const auto& [kind, nesterov] : std::vector<std::pair<std::string, bool>>{
           {"GradientDescent", false}, {"Momentum", true}, {"Adam", false}, {"Adagrad", false}, {"RMSProp", false}}) {
    INFO(kind);
    const std::vector<int64_t> sizes = {407, 200003, 5};
    std::vector<std::vector<Tensor>> results;
    for (FuseUpdates mode : {FuseUpdates::kOnGpus, FuseUpdates::kOff}) {
      Scope root = Scope::NewRootScope().WithDevice("/device:GPU:0");
      std::vector<Operation> inits, applies;
      std::vector<std::string> fetch;
      std::vector<std::string> grads;
      auto c = [&](float v) { return ops::Const(root, v); };
      for (size_t i = 0; i < sizes.size(); ++i) {
        const TensorShape shape{sizes[i]};
        std::vector<Output> refs;
        for (int j = 0; j < 3; ++j) {
          const std::string name = "v" + std::to_string(i) + "_" + std::to_string(j);
          Output v = ops::Variable(root.WithOpName(name), PartialTensorShape(shape.dim_sizes()), DT_FLOAT);
          inits.push_back(ops::Assign(root, v, Random(shape, 200 + 3 * i + j, j == 0 ? -1.f : 0.1f, 1.f)).op());
          refs.push_back(v);
          fetch.push_back(name);
        }
        grads.push_back("grad" + std::to_string(i));
        Output g = ops::Placeholder(root.WithOpName(grads.back()), DT_FLOAT);
        Output out;
        if (kind == "GradientDescent") out = ops::ApplyGradientDescent(root, refs[0], c(0.1f), g);
        if (kind == "Momentum") out = ops::ApplyMomentum(root, refs[0], refs[1], c(0.05f), g, c(0.9f), nesterov);
        if (kind == "Adam")
          out = ops::ApplyAdam(root, refs[0], refs[1], refs[2], c(0.81f), c(0.998f), c(0.01f), c(0.9f), c(0.999f),
                               c(1e-7f), g);
        if (kind == "Adagrad") out = ops::ApplyAdagrad(root, refs[0], refs[1], c(0.1f), g);
        if (kind == "RMSProp")
          out = ops::ApplyRMSProp(root, refs[0], refs[1], refs[2], c(0.01f), c(0.9f), c(0.5f), c(1e-6f), g);
        applies.push_back(out.op());
      }
      ops::NoOp(root.WithOpName("init").WithControlDependencies(inits));
      ops::NoOp(root.WithOpName("train").WithControlDependencies(applies));
      SessionOptions so;
      so.runtime = g_gpu_runtime;
      so.graph_options.fuse_optimizer_updates = mode;
      Session session(so);
      REQUIRE(session.Create(test::ToDef(root)).ok());
      Run(&session, {}, {}, {"init"});
      for (int step = 0; step < 3; ++step) {
        std::vector<std::pair<std::string, Tensor>> feeds;
        for (size_t i = 0; i < sizes.size(); ++i) feeds.push_back({grads[i], Random({sizes[i]}, 50 + step)});
        RunOptions ro;
        ro.timeout_in_ms = 60000;
        ro.trace_level = TraceLevel::kSoftwareTrace;
        RunMetadata md;
        std::vector<Tensor> none;
        Status s = session.Run(ro, feeds, {}, {"train"}, &none, &md);
        INFO(s.ToString());
        REQUIRE(s.ok());
        int fused = 0, separate = 0;
        for (const NodeExecStats& st : md.step_stats) {
          if (st.op == "_FusedApply" + kind) {
            ++fused;
            CHECK(st.device == kGpu);
          }
          separate += st.op == "Apply" + kind;
        }
        CHECK(fused == (mode == FuseUpdates::kOff ? 0 : 1));
        CHECK(separate == (mode == FuseUpdates::kOff ? 3 : 0));
      }
      results.push_back(Run(&session, fetch));
    }
    for (size_t i = 0; i < results[0].size(); ++i) {
      INFO("fetch " << i);
      ExpectClose(results[0][i], results[1][i], 1e-6f);
    }
  }
}

// Two members of one fused node update the same variable (its second update
// must read the first's result, also when a reader holds the value and the
// first update copies on write): the same values as two separate nodes.
TEST_CASE("a variable updated twice by one fused node on GPU:0 gets both updates, in place or copied on write") {
  for (bool held : {false, true}) {
    INFO((held ? "a reader holds the value (copy on write)" : "updated in place"));
    std::vector<std::vector<Tensor>> results;
    for (FuseUpdates mode : {FuseUpdates::kOnGpus, FuseUpdates::kOff}) {
      Scope root = Scope::NewRootScope().WithDevice("/device:GPU:0");
      const TensorShape shape{200003};
      Output v = ops::Variable(root.WithOpName("v"), PartialTensorShape(shape.dim_sizes()), DT_FLOAT);
      Output w = ops::Variable(root.WithOpName("w"), PartialTensorShape(shape.dim_sizes()), DT_FLOAT);
      ops::NoOp(root.WithOpName("init").WithControlDependencies(
          {ops::Assign(root, v, Random(shape, 301)).op(), ops::Assign(root, w, Random(shape, 302)).op()}));
      Output lr = ops::Const(root, 0.25f);
      Output g1 = ops::Placeholder(root.WithOpName("g1"), DT_FLOAT);
      Output g2 = ops::Placeholder(root.WithOpName("g2"), DT_FLOAT);
      auto a = ops::ApplyGradientDescent(root.WithOpName("a"), v, lr, g1);
      auto b = ops::ApplyGradientDescent(root.WithOpName("b"), v, lr, g2);
      auto c = ops::ApplyGradientDescent(root.WithOpName("c"), w, lr, g1);
      // Fetching v's old value in the same step makes the updates copy on write.
      ops::Identity(root.WithOpName("read_v"), v);
      ops::NoOp(root.WithOpName("train").WithControlDependencies({a.op(), b.op(), c.op()}));
      SessionOptions so;
      so.runtime = g_gpu_runtime;
      so.graph_options.fuse_optimizer_updates = mode;
      Session session(so);
      REQUIRE(session.Create(test::ToDef(root)).ok());
      Run(&session, {}, {}, {"init"});
      for (int step = 0; step < 3; ++step)
        Run(&session, held ? std::vector<std::string>{"read_v"} : std::vector<std::string>{},
            {{"g1", Random(shape, 310 + step)}, {"g2", Random(shape, 320 + step)}}, {"train"});
      results.push_back(Run(&session, {"v", "w"}));
    }
    // Separate nodes may apply a and b in either order: float sums may differ in the last bit.
    for (size_t i = 0; i < 2; ++i) ExpectClose(results[0][i], results[1][i], 1e-6f);
  }
}

namespace {

// The MLP 784-64-64-10 (ReLU, mean sparse softmax cross-entropy, SGD) with no
// device asked for anywhere; its loss per step on fixed batches.
struct Mlp {
  std::string loss, train;
  Output labels;
  std::vector<Variable> vars;
};

Mlp BuildMlp(const Scope& root) {
  root.SetGraphSeed(7);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32);
  Mlp m;
  m.labels = y;
  Output h = x;
  int64_t in = 784;
  for (int layer = 0; layer < 3; ++layer) {
    const int64_t out = layer == 2 ? 10 : 64;
    Variable w = NewVariable(root, "w" + std::to_string(layer), {in, out}, DT_FLOAT, init::GlorotUniform());
    Variable b = NewVariable(root, "b" + std::to_string(layer), {out}, DT_FLOAT, init::Zeros());
    h = ops::BiasAdd(root, ops::MatMul(root.WithOpName("matmul" + std::to_string(layer)), h, w.value), b.value);
    if (layer < 2) h = ops::Relu(root, h);
    m.vars.push_back(w);
    m.vars.push_back(b);
    in = out;
  }
  Output loss = ops::Mean(root.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(root, h, y).loss, 0);
  GradientDescentOptimizer sgd(0.1);
  m.train = sgd.Minimize(root.WithOpName("train"), loss).name();
  m.loss = loss.name();
  return m;
}

std::vector<std::pair<std::string, Tensor>> Batch(int step) {
  Tensor y(DT_INT32, TensorShape{128});
  for (int i = 0; i < 128; ++i) y.data<int32_t>()[i] = (i * 7 + step) % 10;
  return {{"x", Random({128, 784}, 1000 + step, 0.f, 1.f)}, {"y", y}};
}

}  // namespace

// The capture's entry of the last step's trace for the GPU partition.
std::string CaptureEntry(const RunMetadata& md) {
  std::string how = "(no entry)";
  for (const NodeExecStats& st : md.step_stats)
    if (st.node == "_capture" && st.device == kGpu) how = st.where;
  return how;
}

TEST_CASE("a training step on GPU:0 is captured into a CUDA graph and replayed, with the uncaptured step's results "
          "over 100 steps") {
  // The MLP with one-hot float32 labels (dense cross-entropy): every tensor
  // crossing to the GPU is float32, so its partition is capturable.
  std::vector<std::vector<float>> losses(2);
  std::vector<std::vector<Tensor>> weights(2);
  for (int capture = 0; capture < 2; ++capture) {
    INFO("capture " << capture);
    Scope root = Scope::NewRootScope();
    root.SetGraphSeed(7);
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
    Output h = x;
    std::vector<Variable> vars;
    int64_t in = 784;
    for (int layer = 0; layer < 2; ++layer) {
      const int64_t out = layer == 1 ? 10 : 64;
      vars.push_back(NewVariable(root, "w" + std::to_string(layer), {in, out}, DT_FLOAT, init::GlorotUniform()));
      h = ops::MatMul(root, h, vars.back().value);
      if (layer == 0) h = ops::Relu(root, h);
      in = out;
    }
    Output loss = ops::Mean(root.WithOpName("loss"), ops::SoftmaxCrossEntropyWithLogits(root, h, y).loss, 0);
    GradientDescentOptimizer sgd(0.1);
    const std::string train = sgd.Minimize(root.WithOpName("train"), loss).name();
    Operation init = GlobalVariablesInitializer(root);
    auto session = NewSession(g_gpu_runtime, root, capture == 1);
    Run(session.get(), {}, {}, {init.name()});
    for (int step = 0; step < 100; ++step) {
      Tensor labels(DT_FLOAT, TensorShape{128, 10});
      for (int i = 0; i < 1280; ++i) labels.data<float>()[i] = (i % 10) == ((i / 10 * 7 + step) % 10) ? 1.f : 0.f;
      RunOptions ro;
      ro.timeout_in_ms = 60000;
      ro.trace_level = TraceLevel::kSoftwareTrace;
      RunMetadata md;
      std::vector<Tensor> out;
      Status s = session->Run(ro, {{"x", Random({128, 784}, 1000 + step, 0.f, 1.f)}, {"y", labels}}, {loss.name()},
                             {train}, &out, &md);
      INFO("step " << step << ": " << s.ToString());
      REQUIRE(s.ok());
      losses[capture].push_back(out[0].scalar<float>());
      const std::string how = CaptureEntry(md);
      INFO("step " << step << ": " << how);
      if (capture == 0) CHECK_THAT(how, Catch::Contains("capture is off for this session"));
      else if (step >= 4) CHECK(how == "replayed");  // 3 identical steps, the capture, then replays
    }
    for (const Variable& v : vars) weights[capture].push_back(Run(session.get(), {v.value.name()})[0]);
  }
  for (int step = 0; step < 100; ++step) {
    INFO("step " << step << ": captured " << losses[1][step] << ", uncaptured " << losses[0][step]);
    CHECK(losses[1][step] == losses[0][step]);  // the same kernels in the same order: the same bits
  }
  for (size_t i = 0; i < weights[0].size(); ++i) ExpectClose(weights[1][i], weights[0][i], 0.f);
  CHECK(losses[1].back() < losses[1].front());
}

TEST_CASE("a training step with int32 class labels on GPU:0 is captured, the labels copied in from the host at each "
          "replay, with the uncaptured step's results; labels read on the host too fall back, saying why") {
  std::vector<std::vector<float>> losses(2);
  for (int capture = 0; capture < 2; ++capture) {
    INFO("capture " << capture);
    Scope root = Scope::NewRootScope();
    Mlp m = BuildMlp(root);
    Operation init = GlobalVariablesInitializer(root);
    auto session = NewSession(g_gpu_runtime, root, capture == 1);
    Run(session.get(), {}, {}, {init.name()});
    for (int step = 0; step < 30; ++step) {  // the labels differ at every step
      RunOptions ro;
      ro.timeout_in_ms = 60000;
      ro.trace_level = TraceLevel::kSoftwareTrace;
      RunMetadata md;
      std::vector<Tensor> out;
      Status s = session->Run(ro, Batch(step), {m.loss}, {m.train}, &out, &md);
      INFO("step " << step << ": " << s.ToString());
      REQUIRE(s.ok());
      losses[capture].push_back(out[0].scalar<float>());
      if (capture == 1 && step >= 4) CHECK(CaptureEntry(md) == "replayed");
    }
    // An out-of-range label: the uncaptured step's error; in a replay, read on
    // the GPU unchecked, NaN (TensorFlow's GPU kernel).
    std::vector<std::pair<std::string, Tensor>> bad = Batch(30);
    bad[1].second.data<int32_t>()[5] = 10;
    RunOptions ro;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    RunMetadata md;
    std::vector<Tensor> out;
    Status s = session->Run(ro, bad, {m.loss}, {m.train}, &out, &md);
    INFO(s.ToString());
    if (capture == 0) {
      CHECK(s.code() == Code::kInvalidArgument);
    } else {
      REQUIRE(s.ok());
      CHECK(CaptureEntry(md) == "replayed");
      CHECK(std::isnan(out[0].scalar<float>()));
    }
  }
  for (size_t step = 0; step < losses[0].size(); ++step) {
    INFO("step " << step << ": captured " << losses[1][step] << ", uncaptured " << losses[0][step]);
    CHECK(losses[1][step] == losses[0][step]);
  }

  // The labels also read by a kernel that takes them in host memory (a Cast
  // on the GPU): not captured, and the trace says which _Recv.
  Scope root = Scope::NewRootScope();
  Mlp m = BuildMlp(root);
  Output seen = ops::Sum(root.WithOpName("seen").WithDevice("/device:GPU:0"),
                         ops::Cast(root.WithDevice("/device:GPU:0"), m.labels, DT_FLOAT),
                         ops::Const(root, {0}));
  Operation init = GlobalVariablesInitializer(root);
  auto session = NewSession(g_gpu_runtime, root);
  Run(session.get(), {}, {}, {init.name()});
  RunOptions ro;
  ro.timeout_in_ms = 60000;
  ro.trace_level = TraceLevel::kSoftwareTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  REQUIRE(session->Run(ro, Batch(0), {m.loss, seen.name()}, {m.train}, &out, &md).ok());
  CHECK_THAT(CaptureEntry(md), Catch::Contains("uncaptured") && Catch::Contains("receives a tensor of int32"));
}

TEST_CASE("an MLP placed by default trains on the GPU, its loss following the CPU's step by step") {
  std::vector<float> losses[2];
  std::map<std::string, std::string> placement;
  for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
    Scope root = Scope::NewRootScope();
    Mlp m = BuildMlp(root);
    Operation init = GlobalVariablesInitializer(root);
    auto session = NewSession(on_gpu ? g_gpu_runtime : g_cpu_runtime, root);
    Run(session.get(), {}, {}, {init.name()});
    for (int step = 0; step < 20; ++step)
      losses[on_gpu].push_back(Run(session.get(), {m.loss}, Batch(step), {m.train})[0].scalar<float>());
    if (on_gpu) placement = session->LastPlacement();
  }
  // The whole step is on the GPU: variables, forward, backward and the updates.
  for (const char* node : {"w0", "b2", "matmul0", "matmul2", "loss"}) {
    INFO(node);
    CHECK(placement[node] == kGpu);
  }
  int updates = 0;
  for (const auto& [node, device] : placement) {
    if (node.find("/update_") == std::string::npos || node.find("ApplyGradientDescent") == std::string::npos) continue;
    INFO(node);
    CHECK(device == kGpu);
    ++updates;
  }
  CHECK(updates == 6);
  for (int step = 0; step < 20; ++step) {
    INFO("step " << step << ": GPU " << losses[1][step] << ", CPU " << losses[0][step]);
    CHECK(std::fabs(losses[1][step] - losses[0][step]) <= 1e-4f * (1.f + std::fabs(losses[0][step])));
  }
  CHECK(losses[1].back() < losses[1].front());  // it learned
}

TEST_CASE("an input pipeline's batches staged onto GPU:0 one step ahead reach the model in order, copied on the "
          "copy stream") {
  // A FIFO of 1 MiB batches on the host; each step unstages on the GPU the
  // batch the step before staged (its _Recv copies it on the host-to-device
  // stream, beside that step's kernels) and stages the next.
  const int64_t rows = 256, cols = 1024, batches = 6;
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/device:GPU:0");
  ops::QueueOptions qo;
  qo.shapes = {PartialTensorShape(std::vector<int64_t>{rows, cols})};
  Output q = ops::FIFOQueue(root.WithOpName("batches").WithDevice("/device:CPU:0"), {DT_FLOAT}, qo);
  auto xs = ops::Placeholder(root.WithOpName("xs"), DT_FLOAT);
  ops::QueueEnqueueMany(root.WithOpName("fill").WithDevice("/device:CPU:0"), q, {xs});
  ops::StagingArea area{{DT_FLOAT}, {2, "", "prefetch"}};
  OutputList next = ops::QueueDequeue(root.WithDevice("/device:CPU:0"), q, {DT_FLOAT});
  area.Put(gpu.WithOpName("put"), next);
  Output batch = area.Get(gpu.WithOpName("get"))[0];
  ops::Sum(gpu.WithOpName("model"), ops::Mul(gpu, batch, batch), ops::Const(gpu, {0, 1}));
  ops::Identity(root.WithOpName("seen"), ops::Slice(root, batch, ops::Const(root, {0, 0}), ops::Const(root, {1, 1})));
  auto session = NewSession(g_gpu_runtime, root);
  Tensor all = Random({batches, rows, cols}, 77, -1.f, 1.f);
  for (int64_t b = 0; b < batches; ++b) all.data<float>()[b * rows * cols] = static_cast<float>(b);  // its number
  Run(session.get(), {}, {{"xs", all}}, {"fill"});
  Run(session.get(), {}, {}, {"put"});  // warm-up: batch 0 staged
  for (int64_t b = 0; b < batches; ++b) {
    INFO("step " << b);
    RunOptions ro;
    ro.timeout_in_ms = 60000;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    RunMetadata md;
    std::vector<Tensor> out;
    const std::vector<std::string> targets = b + 1 < batches ? std::vector<std::string>{"put"} : std::vector<std::string>{};
    Status s = session->Run(ro, {}, {"model:0", "seen:0"}, targets, &out, &md);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(out[1].data<float>()[0] == static_cast<float>(b));  // batch b, in the pipeline's order
    double expect = 0;
    for (int64_t i = 0; i < rows * cols; ++i) {
      const double v = all.data<float>()[b * rows * cols + i];
      expect += v * v;
    }
    CHECK(std::fabs(out[0].scalar<float>() - expect) <= 1e-3 * expect);
    bool unstaged_on_gpu = false;
    for (const NodeExecStats& st : md.step_stats) unstaged_on_gpu |= st.op == "Unstage" && st.device == kGpu;
    CHECK(unstaged_on_gpu);
  }
}

TEST_CASE("a GPU variable is saved and restored") {
  const std::string dir = std::filesystem::temp_directory_path() / ("af_gpu_ckpt_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  Scope root = Scope::NewRootScope();
  Mlp m = BuildMlp(root);
  Operation init = GlobalVariablesInitializer(root);
  SaverOptions so;
  so.dir = dir;
  Saver saver(root, {}, so);
  auto session = NewSession(g_gpu_runtime, root);
  Run(session.get(), {}, {}, {init.name()});
  Run(session.get(), {}, Batch(0), {m.train});
  CHECK(session->LastPlacement()["w0"] == kGpu);
  const std::vector<Tensor> saved = Run(session.get(), {m.vars[0].value.name(), m.vars[5].value.name()});
  std::string prefix;
  Status s = saver.Save(session.get(), 1, &prefix);
  INFO(s.ToString());
  REQUIRE(s.ok());
  for (int step = 1; step < 4; ++step) Run(session.get(), {}, Batch(step), {m.train});
  const std::vector<Tensor> trained = Run(session.get(), {m.vars[0].value.name()});
  CHECK(test::Values<float>(trained[0]) != test::Values<float>(saved[0]));
  s = saver.Restore(session.get(), prefix);
  INFO(s.ToString());
  REQUIRE(s.ok());
  const std::vector<Tensor> restored = Run(session.get(), {m.vars[0].value.name(), m.vars[5].value.name()});
  CHECK(test::Values<float>(restored[0]) == test::Values<float>(saved[0]));
  CHECK(test::Values<float>(restored[1]) == test::Values<float>(saved[1]));
  std::filesystem::remove_all(dir);
}

int main(int argc, char** argv) {
  RuntimeOptions options;
  options.num_gpu_devices = 1;
  Runtime runtime(options);
  if (!test::HasGpuOrSaySkipped(runtime, "gpu_training_test")) return test::kSkipped;
  RuntimeOptions cpu_options;
  cpu_options.num_gpu_devices = 0;
  Runtime cpu_runtime(cpu_options);
  g_gpu_runtime = &runtime;
  g_cpu_runtime = &cpu_runtime;
  return test::RunTests(argc, argv);  // failed, skipped (77) or passed (skip.hpp)
}
