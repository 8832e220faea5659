// Conv2D (NHWC, 3x3, SAME, stride 1) and its two backprops, and MaxPool 2x2,
// through Session::Run, in the shapes of a small CNN's layers, and a layer's
// forward pass: Relu(BiasAdd(Conv2D)), which runs as one _FusedConv2D
// (graph/remapper.hpp); the peer is PyTorch's conv2d / conv2d_input /
// conv2d_weight / max_pool2d and relu_(conv2d(x, w, bias)) on the same shapes
// (bench/peer_torch_conv.py, run beside it by bench/run_all.sh).
// AF_BENCH_REMAPPING=1 measures instead the layer's forward pass with the
// fusion on and off, in one process (bench::MeasureAbba, 15 rounds).
// Threads: ACTORFLOW_NUM_THREADS (default: cores).
//   bench_conv
// One JSON line per (pass, layer): the median ms of a step.
#include <cstdlib>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"

using namespace actorflow;

namespace {

struct Layer {
  int batch, size, in_c, out_c;
};

Tensor Filled(const TensorShape& shape, float v) {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = v * static_cast<float>((i % 13) - 6);
  return t;
}

}  // namespace

int main() {
  const int threads = Runtime::Default()->num_threads();
  // MNIST-sized layers of a small CNN, then a wider one.
  const std::vector<Layer> layers = {{32, 28, 1, 32}, {32, 14, 32, 64}, {16, 28, 64, 64}};
  for (const Layer& l : layers) {
    Scope root = Scope::NewRootScope();
    const std::vector<int64_t> ones = {1, 1, 1, 1};
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
    auto dy = ops::Placeholder(root.WithOpName("dy"), DT_FLOAT);
    ops::Conv2D(root.WithOpName("forward"), x, w, ones, "SAME");
    auto bias = ops::Placeholder(root.WithOpName("bias"), DT_FLOAT);
    ops::Relu(root.WithOpName("forward_bias_relu"), ops::BiasAdd(root, ops::Conv2D(root, x, w, ones, "SAME"), bias));
    ops::Conv2DBackpropInput(root.WithOpName("backprop_input"), ops::Const(root, {l.batch, l.size, l.size, l.in_c}), w,
                             dy, ones, "SAME");
    ops::Conv2DBackpropFilter(root.WithOpName("backprop_filter"), x, ops::Const(root, {3, 3, l.in_c, l.out_c}), dy,
                              ones, "SAME");
    ops::MaxPool(root.WithOpName("maxpool"), dy, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
    proto::GraphDef def;
    if (!root.ToGraphDef(&def).ok()) return 1;
    Session session;
    if (!session.Create(def).ok()) return 1;
    const Tensor xv = Filled(TensorShape{l.batch, l.size, l.size, l.in_c}, 0.01f);
    const Tensor wv = Filled(TensorShape{3, 3, l.in_c, l.out_c}, 0.02f);
    const Tensor dyv = Filled(TensorShape{l.batch, l.size, l.size, l.out_c}, 0.03f);
    const Tensor biasv = Filled(TensorShape{l.out_c}, 0.05f);
    const std::string params = "\"batch\":" + std::to_string(l.batch) + ",\"size\":" + std::to_string(l.size) +
                               ",\"in\":" + std::to_string(l.in_c) + ",\"out\":" + std::to_string(l.out_c) +
                               ",\"threads\":" + std::to_string(threads) + ",\"impl\":\"actorflow\"";
    if (std::getenv("AF_BENCH_REMAPPING") != nullptr) {
      SessionOptions off;
      off.graph_options.do_remapping = false;
      Session unfused(off);
      if (!unfused.Create(def).ok()) return 1;
      const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", xv}, {"w", wv}, {"bias", biasv}};
      std::vector<Tensor> out;
      bool ok = true;
      const auto [fused, plain] = bench::MeasureAbba(
          15, 10, [&] { ok = ok && session.Run(feeds, {"forward_bias_relu"}, {}, &out).ok(); },
          [&] { ok = ok && unfused.Run(feeds, {"forward_bias_relu"}, {}, &out).ok(); });
      if (!ok) return 1;
      bench::Print("conv2d_forward_bias_relu", params + ",\"remapping\":true", "time", "ms", fused, 1e3);
      bench::Print("conv2d_forward_bias_relu", params + ",\"remapping\":false", "time", "ms", plain, 1e3);
      continue;
    }
    for (const char* pass : {"forward", "forward_bias_relu", "backprop_input", "backprop_filter", "maxpool"}) {
      std::vector<std::pair<std::string, Tensor>> feeds;
      const std::string p = pass;
      const bool forward = p.rfind("forward", 0) == 0;
      if (forward || p == "backprop_filter") feeds.emplace_back("x", xv);
      if (forward || p == "backprop_input") feeds.emplace_back("w", wv);
      if (p == "forward_bias_relu") feeds.emplace_back("bias", biasv);
      if (!forward) feeds.emplace_back("dy", dyv);
      std::vector<Tensor> out;
      bool ok = true;
      auto stats = bench::Measure(3, 20, [&] { ok = ok && session.Run(feeds, {p}, {}, &out).ok(); });
      if (!ok) {
        std::fprintf(stderr, "bench_conv: %s failed\n", pass);
        return 1;
      }
      bench::Print(std::string("conv2d_") + pass, params, "time", "ms", stats, 1e3);
    }
  }
  return 0;
}
