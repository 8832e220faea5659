// One SGD training step of the MLP 784-h-h-10 (ReLU, mean sparse softmax
// cross-entropy, plain SGD at 0.01) on a GPU, placed by the default placement
// (no device asked for anywhere), in ms per step: the batch fed from host
// memory each step, the step waited for. Peers (bench/peer_torch_gpu_train.py,
// run after this, which prints its ms over ours with --beside this output):
// PyTorch training the same model on the same GPU the same way ("pytorch": the
// batch copied from pinned memory with non_blocking copies, one
// synchronisation per step), and PyTorch at its best ("pytorch_cuda_graph":
// the batch resident, the whole step one CUDA graph, no synchronisation inside
// the loop). Shapes (h/batch): 256/64, 1024/256, 4096/1024, 4096/8192, or
// those named as arguments ("1024x256").
//
// Prints one JSON line per shape, with the nodes of the step placed on the
// GPU and whether a step after the measured ones was a captured graph's
// replay ("capture": "replayed", or why not). Without a GPU it says so and
// exits 0 (nothing to measure).
// AF_BENCH_TRACE=1 adds, per shape, where one traced step's time went.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "trace_summary.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"

using namespace actorflow;

namespace {

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_gpu_train: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

void Measure(int64_t hidden, int64_t batch) {
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(1);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 784}));
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32, PartialTensorShape(std::vector<int64_t>{-1}));
  Output h = x;
  int64_t in = 784;
  for (int layer = 0; layer < 3; ++layer) {
    const int64_t out = layer == 2 ? 10 : hidden;
    Variable w = NewVariable(root, "w" + std::to_string(layer), {in, out}, DT_FLOAT, init::GlorotUniform());
    Variable b = NewVariable(root, "b" + std::to_string(layer), {out}, DT_FLOAT, init::Zeros());
    h = ops::BiasAdd(root, ops::MatMul(root, h, w.value), b.value);
    if (layer < 2) h = ops::Relu(root, h);
    in = out;
  }
  auto loss = ops::Mean(root, ops::SparseSoftmaxCrossEntropyWithLogits(root, h, y).loss, 0);
  GradientDescentOptimizer sgd(0.01);
  Operation train = sgd.Minimize(root.WithOpName("train"), loss);
  Operation init = GlobalVariablesInitializer(root);
  proto::GraphDef def;
  Check(root.ToGraphDef(&def));
  Session session;
  Check(session.Create(def));
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init.name()}, &out));

  Tensor xv(DT_FLOAT, TensorShape{batch, 784}), yv(DT_INT32, TensorShape{batch});
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < xv.NumElements(); ++i) xv.data<float>()[i] = u(rng);
  for (int64_t i = 0; i < batch; ++i) yv.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  auto step = [&] { Check(session.Run({{"x", xv}, {"y", yv}}, {}, {train.name()}, &out)); };
  step();
  int on_gpu = 0, total = 0;
  for (const auto& [node, device] : session.LastPlacement()) {
    ++total;
    on_gpu += device.find("GPU") != std::string::npos;
  }
  const int block = batch >= 4096 ? 5 : 50;
  const char* gemm = std::getenv("ACTORFLOW_GPU_GEMM");  // "cublas": cublasSgemm for every product
  const char* sync = std::getenv("ACTORFLOW_GPU_SYNC");  // "callback": stream callbacks, not the event poller
  auto stats = bench::MeasureInterleaved(7, block, {step});
  // Whether the step after the measured ones is a captured CUDA graph's
  // replay (the trace's _capture entry: "replayed", or why not).
  std::string capture = "(no entry)";
  {
    RunOptions ro;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    RunMetadata md;
    Check(session.Run(ro, {{"x", xv}, {"y", yv}}, {}, {train.name()}, &out, &md));
    for (const NodeExecStats& st : md.step_stats)
      if (st.node == "_capture") capture = st.where;
    for (char& c : capture)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '\'';  // kept valid in a JSON string
  }
  const std::string params = "\"hidden\":" + std::to_string(hidden) + ",\"batch\":" + std::to_string(batch) +
                             ",\"nodes_on_gpu\":" + std::to_string(on_gpu) + ",\"nodes\":" + std::to_string(total) +
                             ",\"gemm\":\"" + std::string(gemm != nullptr ? gemm : "cublaslt") + "\",\"sync\":\"" +
                             std::string(sync != nullptr ? sync : "events") + "\",\"capture\":\"" + capture + "\"" +
                             ",\"impl\":\"actorflow\"";
  bench::Print("gpu_train_step", params, "time", "ms", stats[0], 1e3);
  if (std::getenv("AF_BENCH_TRACE") != nullptr) bench::TraceStep(session, {{"x", xv}, {"y", yv}}, train.name());
  Check(session.ResetContainers({}));  // the next shape's w0... are new variables
}

}  // namespace

int main(int argc, char** argv) {
  if (Runtime::Default()->device_manager().OfType(DEVICE_GPU).empty()) {
    std::printf("bench_gpu_train: no GPU here: nothing to measure\n");
    return 0;
  }
  std::vector<std::pair<int64_t, int64_t>> shapes = {{256, 64}, {1024, 256}, {4096, 1024}, {4096, 8192}};
  if (argc > 1) {
    shapes.clear();
    for (int i = 1; i < argc; ++i) {
      long long h = 0, b = 0;
      if (std::sscanf(argv[i], "%lldx%lld", &h, &b) != 2 || h <= 0 || b <= 0) {
        std::fprintf(stderr, "bench_gpu_train: shapes are HIDDENxBATCH, e.g. 1024x256; got '%s'\n", argv[i]);
        return 2;
      }
      shapes.emplace_back(h, b);
    }
  }
  for (const auto& [h, b] : shapes) Measure(h, b);
  return 0;
}
