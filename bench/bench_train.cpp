// One SGD training step through Session::Run, in examples/s (the peer is
// bench/peer_torch_train.py: PyTorch training the same models the same way):
//  - the MLP 784-256-10 (ReLU), batch 64 and 256
//  - softmax regression 64-10, batch 32
// Mean softmax cross-entropy, plain SGD; one step feeds a batch, computes the
// gradients and applies the updates (the variables live in the container
// actor). Threads: ACTORFLOW_NUM_THREADS (default: cores). AF_BENCH_TRACE=1
// adds, per figure, where one traced step's time went (trace_summary.hpp).
// AF_BENCH_REMAPPING=1 measures instead, in one process, the same steps with
// MatMul+BiasAdd+Relu fusion (graph/remapper.hpp) on and off: two sessions'
// blocks interleaved in the order on, off, off, on each round, 21 rounds
// (bench::MeasureAbba).
#include <cstdio>
#include <cstdlib>
#include <random>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "trace_summary.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"

using namespace actorflow;

namespace {

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_train: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

void Measure(bool mlp, int batch) {
  const int features = mlp ? 784 : 64;
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(1);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, features}));
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32, PartialTensorShape(std::vector<int64_t>{-1}));
  Output logits;
  if (mlp) {
    Variable w1 = NewVariable(root, "w1", {features, 256}, DT_FLOAT, init::GlorotUniform());
    Variable b1 = NewVariable(root, "b1", {256}, DT_FLOAT, init::Zeros());
    Variable w2 = NewVariable(root, "w2", {256, 10}, DT_FLOAT, init::GlorotUniform());
    Variable b2 = NewVariable(root, "b2", {10}, DT_FLOAT, init::Zeros());
    auto h = ops::Relu(root, ops::BiasAdd(root, ops::MatMul(root, x, w1.value), b1.value));
    logits = ops::BiasAdd(root, ops::MatMul(root, h, w2.value), b2.value);
  } else {
    Variable w = NewVariable(root, "w", {features, 10}, DT_FLOAT, init::GlorotUniform());
    Variable b = NewVariable(root, "b", {10}, DT_FLOAT, init::Zeros());
    logits = ops::BiasAdd(root, ops::MatMul(root, x, w.value), b.value);
  }
  auto loss = ops::Mean(root, ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, y).loss, 0);
  GradientDescentOptimizer sgd(0.01);
  Operation train = sgd.Minimize(root.WithOpName("train"), loss);
  Operation init = GlobalVariablesInitializer(root);
  proto::GraphDef def;
  Check(root.ToGraphDef(&def));
  Session session;
  Check(session.Create(def));
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init.name()}, &out));

  Tensor xv(DT_FLOAT, TensorShape{batch, features}), yv(DT_INT32, TensorShape{batch});
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < xv.NumElements(); ++i) xv.data<float>()[i] = u(rng);
  for (int i = 0; i < batch; ++i) yv.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  auto step = [&] { Check(session.Run({{"x", xv}, {"y", yv}}, {}, {train.name()}, &out)); };
  // Rounds of back-to-back steps (~15 ms each), as a training loop runs them.
  const int block = mlp ? (batch <= 64 ? 20 : 6) : 500;
  const int threads = Runtime::Default()->num_threads();
  const std::string params = std::string("\"model\":\"") + (mlp ? "mlp" : "softmax") + "\",\"batch\":" +
                             std::to_string(batch) + ",\"threads\":" + std::to_string(threads) +
                             ",\"impl\":\"actorflow\"";
  if (std::getenv("AF_BENCH_REMAPPING") != nullptr) {
    SessionOptions off;
    off.graph_options.do_remapping = false;
    Session unfused(off);
    Check(unfused.Create(def));
    auto step_off = [&] { Check(unfused.Run({{"x", xv}, {"y", yv}}, {}, {train.name()}, &out)); };
    const auto [fused, plain] = bench::MeasureAbba(21, block, step, step_off);
    bench::Print("train_step", params + ",\"remapping\":true", "throughput", "examples/s", fused, batch, true);
    bench::Print("train_step", params + ",\"remapping\":false", "throughput", "examples/s", plain, batch, true);
    return;
  }
  auto stats = bench::MeasureInterleaved(9, block, {step});
  bench::Print("train_step", params, "throughput", "examples/s", stats[0], batch, true);
  if (std::getenv("AF_BENCH_TRACE") != nullptr) bench::TraceStep(session, {{"x", xv}, {"y", yv}}, train.name());
}

}  // namespace

// Arguments (optional): which figures to run: mlp64, mlp256, softmax32.
int main(int argc, char** argv) {
  auto wanted = [&](const char* name) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == name) return true;
    return false;
  };
  if (wanted("mlp64")) Measure(true, 64);
  if (wanted("mlp256")) Measure(true, 256);
  if (wanted("softmax32")) Measure(false, 32);
  return 0;
}
