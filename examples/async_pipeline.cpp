// async_pipeline: several steps of one graph in flight at once.
//
// The graph has two independent branches — a "features" branch (two dense
// layers) and a "statistics" branch (moments of the input) — joined at the
// end. Within a step the device actor runs whatever is ready: the branches'
// large kernels go to the compute pool and overlap. Across steps, three client
// threads call Session::Run concurrently on the same session; each step has
// its own pending counts and tensors, so they interleave freely. The first
// step of each client prints how each node ran: inline on the device actor's
// thread or on a pool thread, and when.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/devices/device.hpp"

using namespace actorflow;

namespace {

Tensor Filled(const TensorShape& shape, float start, float step) {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i % 97);
  return t;
}

Status BuildGraph(proto::GraphDef* def) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 256}));

  Scope features = root.NewSubScope("features");
  auto w1 = ops::Const(features.WithOpName("w1"), Filled({256, 256}, -0.01f, 0.0002f));
  auto w2 = ops::Const(features.WithOpName("w2"), Filled({256, 8}, -0.02f, 0.0004f));
  auto h = ops::Relu(features.WithOpName("h"), ops::MatMul(features, x, w1));
  auto logits = ops::MatMul(features.WithOpName("logits"), h, w2);
  auto probs = ops::Softmax(features.WithOpName("probs"), logits);
  ops::ArgMax(features.WithOpName("label"), probs, 1);

  Scope stats = root.NewSubScope("stats");
  auto mean = ops::Mean(stats.WithOpName("mean"), x, {0, 1});
  auto centered = ops::Sub(stats, x, mean);
  ops::Sqrt(stats.WithOpName("stddev"), ops::Mean(stats, ops::Square(stats, centered), {0, 1}));

  // The join: a score that needs both branches.
  ops::Mul(root.WithOpName("score"), ops::Max(root, probs, {0, 1}), mean);
  return root.ToGraphDef(def);
}

}  // namespace

int main() {
  proto::GraphDef def;
  Status s = BuildGraph(&def);
  if (!s.ok()) {
    std::fprintf(stderr, "building the graph failed: %s\n", s.ToString().c_str());
    return 1;
  }
  Runtime* rt = Runtime::Default();
  std::printf("actorflow async_pipeline: %d nodes, %d compute threads\n", def.node_size(), rt->num_threads());
  for (Device* d : rt->devices()) std::printf("device actor on %s\n", d->name().c_str());

  Session session;
  s = session.Create(def);
  if (!s.ok()) {
    std::fprintf(stderr, "Create failed: %s\n", s.ToString().c_str());
    return 1;
  }

  std::mutex print_mu;
  std::vector<Status> failures;
  auto client = [&](int id) {
    for (int step = 0; step < 4; ++step) {
      const int64_t batch = 32 + 16 * id;
      Tensor x = Filled({batch, 256}, 0.1f * static_cast<float>(id + 1), 0.01f * static_cast<float>(step + 1));
      std::vector<Tensor> out;
      RunOptions opts;
      // Show how the first step of each client ran.
      opts.trace_level = step == 0 ? TraceLevel::kSoftwareTrace : TraceLevel::kNoTrace;
      RunMetadata md;
      const auto t0 = std::chrono::steady_clock::now();
      // Client 2 fetches only the statistics branch: the features branch is pruned.
      const std::vector<std::string> fetches =
          id == 2 ? std::vector<std::string>{"stats/mean", "stats/stddev"}
                  : std::vector<std::string>{"features/label", "stats/stddev", "score"};
      Status st = session.Run(opts, {{"x", x}}, fetches, {}, &out, &md);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(print_mu);
      if (!st.ok()) {
        failures.push_back(st);
        std::printf("client %d step %d: %s\n", id, step, st.ToString().c_str());
        continue;
      }
      std::printf("client %d step %d (batch %3lld, %5.2f ms, %s):", id, step, static_cast<long long>(batch), ms,
                  rt->devices()[0]->name().c_str());
      for (size_t i = 0; i < out.size(); ++i)
        std::printf("  %s=%s", fetches[i].c_str(), out[i].SummarizeValue(4).c_str());
      std::printf("\n");
      // What ran where: inline on the device actor, or on a pool thread (id).
      for (const auto& n : md.step_stats) {
        if (n.op == "_Arg" || n.op == "_Retval" || n.op == "Const") continue;
        std::printf("    %-22s %-8s %-6s thread %04llx  %6lld..%6lld us\n", n.node.c_str(), n.op.c_str(),
                    n.where.c_str(), static_cast<unsigned long long>(n.thread % 0x10000),
                    static_cast<long long>(n.start_us), static_cast<long long>(n.end_us));
      }
    }
  };
  std::vector<std::thread> clients;
  for (int id = 0; id < 3; ++id) clients.emplace_back(client, id);
  for (auto& c : clients) c.join();
  std::printf("%zu signatures prepared (each pruned and registered once), %zu failed steps\n",
              session.num_cached_executables(), failures.size());
  return failures.empty() ? 0 : 1;
}
