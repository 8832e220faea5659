// Scheduling _Recvs late (graph/recv_scheduling.hpp, the whitepaper's 5.2):
// peak host memory and step time of one graph with the scheduling on
// (impl "recv_late", the default) and off ("recv_asap"), in one process with
// two CPU devices. The graph (bench/recv_scheduling_graph.hpp): a chain of 200
// MatMuls 128x128 on CPU:0 consuming, spread along it, 8 tensors of 1 MiB
// made from values CPU:1 sends at the start of the step, either
//   graph "expand_on_receiver": CPU:1 sends scalars, CPU:0 makes the tensors;
//   graph "large_recv": CPU:1 makes the tensors and sends them (passed by
//                       reference: the scheduling cannot shorten their lives).
//   bench_recv_scheduling [expand_on_receiver|large_recv ...]   (default: both)
//
// Peak: the CPU allocator's high-water mark during one step, above what was
// in use when it started (Allocator::ResetPeak), over 15 steps of each,
// interleaved. Step time: bench_util's interleaved rounds.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/allocator.hpp"
#include "recv_scheduling_graph.hpp"

using namespace actorflow;

namespace {

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "bench_recv_scheduling: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

struct Config {
  std::string impl;
  std::unique_ptr<Session> session;
};

void RunStep(Session* session, const std::vector<std::pair<std::string, Tensor>>& feeds, const std::string& fetch) {
  std::vector<Tensor> out;
  Status s = session->Run(feeds, {fetch}, {}, &out);
  if (!s.ok()) Die("step", s);
}

void Measure(Runtime* rt, const std::string& graph) {
  bench_graphs::LateConsumerParams p;
  p.expand_on_receiver = graph == "expand_on_receiver";
  Scope root = Scope::NewRootScope();
  const bench_graphs::LateConsumerGraph g = bench_graphs::BuildLateConsumerGraph(root, p);
  proto::GraphDef def;
  Status s = root.ToGraphDef(&def);
  if (!s.ok()) Die("graph", s);
  Tensor x(DT_FLOAT, TensorShape{p.n, p.n});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) * 0.1f;
  const std::vector<std::pair<std::string, Tensor>> feeds = {{g.x.name(), x}, {g.y.name(), Tensor::Scalar(2.0f)}};

  std::vector<Config> configs;
  for (bool late : {true, false}) {
    SessionOptions so;
    so.runtime = rt;
    so.partitioning.schedule_recvs_late = late;
    configs.push_back({late ? "recv_late" : "recv_asap", std::make_unique<Session>(so)});
    s = configs.back().session->Create(def);
    if (!s.ok()) Die("create", s);
    RunStep(configs.back().session.get(), feeds, g.result.name());  // prepares the signature
  }
  const std::string params = "\"graph\":\"" + graph + "\",\"chain\":" + std::to_string(p.chain) +
                             ",\"tensors\":" + std::to_string(p.tensors) +
                             ",\"tensor_mib\":" + std::to_string(p.elements * 4 >> 20) + ",\"impl\":";
  Allocator* a = cpu_allocator();
  std::vector<std::vector<double>> peaks(configs.size());
  for (int rep = 0; rep < 15; ++rep) {
    for (size_t c = 0; c < configs.size(); ++c) {
      const int64_t base = a->bytes_in_use();
      a->ResetPeak();
      RunStep(configs[c].session.get(), feeds, g.result.name());
      peaks[c].push_back(static_cast<double>(a->peak_bytes_in_use() - base) / (1 << 20));
    }
  }
  for (size_t c = 0; c < configs.size(); ++c) {
    std::sort(peaks[c].begin(), peaks[c].end());
    bench::Stats st{peaks[c][peaks[c].size() / 2], peaks[c].front(), peaks[c].back(),
                    static_cast<int>(peaks[c].size())};
    bench::Print("recv_scheduling", params + "\"" + configs[c].impl + "\"", "peak_bytes", "MiB", st, 1.0);
  }
  std::vector<std::function<void()>> fns;
  for (auto& c : configs) fns.push_back([&] { RunStep(c.session.get(), feeds, g.result.name()); });
  const std::vector<bench::Stats> times = bench::MeasureInterleaved(5, 10, fns);
  for (size_t c = 0; c < configs.size(); ++c)
    bench::Print("recv_scheduling", params + "\"" + configs[c].impl + "\"", "step_time", "ms", times[c], 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> graphs;
  for (int i = 1; i < argc; ++i) graphs.push_back(argv[i]);
  if (graphs.empty()) graphs = {"expand_on_receiver", "large_recv"};
  RuntimeOptions ro;
  ro.num_cpu_devices = 2;
  Runtime rt(ro);
  for (const auto& graph : graphs) {
    if (graph != "expand_on_receiver" && graph != "large_recv") {
      std::fprintf(stderr, "usage: bench_recv_scheduling [expand_on_receiver|large_recv ...]\n");
      return 2;
    }
    Measure(&rt, graph);
  }
  return 0;
}
