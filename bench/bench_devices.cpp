// Multi-device execution in one process (a Runtime with several CPU devices):
//  - two_branch: two independent chains of 512x512 MatMuls, each branch on its
//    own device (2 devices) vs both on one device; steps/s, ratio printed.
//    Each CPU device computes with one thread (RuntimeOptions::
//    cpu_device_threads = 1: a device is one core, as separate GPUs are separate
//    compute units), so the second device adds compute.
//  - two_branch_shared: the same where every device shares the whole pool (the
//    default): one device already runs both branches at once on the two
//    threads, so a second device adds nothing: expect ~1x.
//  - two_branch_inline: the same with chains of Tanh on 128x128 (64 KB), which
//    run inline on their device actor: one device runs the branches one after
//    the other, two devices side by side.
//  - placement: two graphs whose right placement is known, on 2 one-thread
//    CPU devices, placed by the cost model, round-robin and
//    everything-on-one-device; steps/s of each:
//      branches: two independent chains of 384x384 MatMuls: right answer, a
//        chain per device;
//      chain: one chain of 200 cheap ops on 32x32: right answer, one device
//        (every hop between devices costs more than the op).
//  - send_recv: microseconds per cross-device transfer of a scalar: a step of
//    1000 independent scalar adds whose inputs come from the other device,
//    minus the same step on one device, per transfer.
// Threads: ACTORFLOW_NUM_THREADS (default: cores).
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"

using namespace actorflow;

namespace {

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_devices: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

Tensor Filled(int64_t rows, int64_t cols, float v) {
  Tensor t(DT_FLOAT, TensorShape{rows, cols});
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = v;
  return t;
}

std::unique_ptr<Session> Open(Runtime* rt, const Scope& root, PlacementStrategy strategy) {
  proto::GraphDef def;
  Check(root.ToGraphDef(&def));
  SessionOptions o;
  o.runtime = rt;
  o.placement = strategy;
  auto s = std::make_unique<Session>(o);
  Check(s->Create(def));
  return s;
}

// Two chains of `depth` MatMuls of n x n, on devices d0 and d1 ("" = placer's choice).
Scope TwoBranches(int n, int depth, const std::string& d0, const std::string& d1) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{n, n}));
  // Different weights per branch: equal branches would be merged by CSE.
  Output wa = ops::Const(root.WithOpName("wa"), Filled(n, n, 1.0f / n));
  Output wb = ops::Const(root.WithOpName("wb"), Filled(n, n, 0.5f / n));
  Output a = x, b = x;
  for (int i = 0; i < depth; ++i) {
    a = ops::MatMul(root.WithOpName("a" + std::to_string(i)).WithDevice(d0), a, wa);
    b = ops::MatMul(root.WithOpName("b" + std::to_string(i)).WithDevice(d1), b, wb);
  }
  ops::Add(root.WithOpName("sum").WithDevice(d0), ops::Sum(root.WithDevice(d0), a, {0, 1}),
           ops::Sum(root.WithDevice(d1), b, {0, 1}));
  return root;
}

void TwoBranch(bool shared_pool) {
  const int n = 512, depth = 4;
  RuntimeOptions ro;
  ro.num_cpu_devices = 2;
  ro.intra_op_threads = 1;  // one core per kernel: the branches are the parallelism
  if (!shared_pool) ro.cpu_device_threads = 1;
  Runtime rt(ro);
  const std::string name = shared_pool ? "two_branch_shared" : "two_branch";
  auto one = Open(&rt, TwoBranches(n, depth, "/device:CPU:0", "/device:CPU:0"), PlacementStrategy::kCostModel);
  auto two = Open(&rt, TwoBranches(n, depth, "/device:CPU:0", "/device:CPU:1"), PlacementStrategy::kCostModel);
  Tensor x = Filled(n, n, 1.f);
  std::vector<Tensor> out;
  auto run = [&](Session& s) { return [&] { Check(s.Run({{"x", x}}, {"sum"}, {}, &out)); }; };
  auto stats = bench::MeasureInterleaved(9, 5, {run(*one), run(*two)});
  const std::string p = "\"n\":" + std::to_string(n) + ",\"depth\":" + std::to_string(depth) +
                        ",\"threads\":" + std::to_string(rt.num_threads()) + ",\"device_threads\":" +
                        (shared_pool ? "\"shared\"" : "1");
  bench::Print(name + "_steps", p + ",\"devices\":1,\"impl\":\"actorflow\"", "throughput", "steps/s", stats[0], 1.0,
               true);
  bench::Print(name + "_steps", p + ",\"devices\":2,\"impl\":\"actorflow\"", "throughput", "steps/s", stats[1], 1.0,
               true);
  std::printf("{\"bench\":\"%s_ratio\",\"params\":{%s},\"metric\":\"2 devices / 1 device\",\"unit\":\"ratio\","
              "\"median\":%.3f}\n",
              name.c_str(), p.c_str(), stats[0].median / stats[1].median);
}

// Two chains of `depth` Tanh on [n, n] (inline-sized kernels), on d0 and d1.
Scope TwoInlineBranches(int n, int depth, const std::string& d0, const std::string& d1) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{n, n}));
  Output a = ops::Mul(root.WithOpName("a_in").WithDevice(d0), x, 0.5f);
  Output b = ops::Mul(root.WithOpName("b_in").WithDevice(d1), x, 0.25f);
  for (int i = 0; i < depth; ++i) {
    a = ops::Tanh(root.WithOpName("a" + std::to_string(i)).WithDevice(d0), a);
    b = ops::Tanh(root.WithOpName("b" + std::to_string(i)).WithDevice(d1), b);
  }
  ops::Add(root.WithOpName("sum").WithDevice(d0), ops::Sum(root.WithDevice(d0), a, {0, 1}),
           ops::Sum(root.WithDevice(d1), b, {0, 1}));
  return root;
}

void TwoBranchInline() {
  const int n = 128, depth = 50;
  RuntimeOptions ro;
  ro.num_cpu_devices = 2;
  Runtime rt(ro);
  auto one = Open(&rt, TwoInlineBranches(n, depth, "/device:CPU:0", "/device:CPU:0"), PlacementStrategy::kCostModel);
  auto two = Open(&rt, TwoInlineBranches(n, depth, "/device:CPU:0", "/device:CPU:1"), PlacementStrategy::kCostModel);
  Tensor x = Filled(n, n, 1.f);
  std::vector<Tensor> out;
  auto run = [&](Session& s) { return [&] { Check(s.Run({{"x", x}}, {"sum"}, {}, &out)); }; };
  auto stats = bench::MeasureInterleaved(9, 10, {run(*one), run(*two)});
  const std::string p = "\"n\":" + std::to_string(n) + ",\"depth\":" + std::to_string(depth) + ",\"op\":\"Tanh\"" +
                        ",\"threads\":" + std::to_string(rt.num_threads());
  bench::Print("two_branch_inline_steps", p + ",\"devices\":1,\"impl\":\"actorflow\"", "throughput", "steps/s",
               stats[0], 1.0, true);
  bench::Print("two_branch_inline_steps", p + ",\"devices\":2,\"impl\":\"actorflow\"", "throughput", "steps/s",
               stats[1], 1.0, true);
  std::printf("{\"bench\":\"two_branch_inline_ratio\",\"params\":{%s},\"metric\":\"2 devices / 1 device\","
              "\"unit\":\"ratio\",\"median\":%.3f}\n",
              p.c_str(), stats[0].median / stats[1].median);
}

// One chain of `depth` cheap ops on [n, n] (placer's choice of device).
Scope CheapChain(int n, int depth) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{n, n}));
  for (int i = 0; i < depth; ++i) a = ops::Tanh(root.WithOpName("t" + std::to_string(i)), a);
  ops::Sum(root.WithOpName("sum"), a, {0, 1});
  return root;
}

// Each strategy on `graph`, 2 CPU devices of one thread each; steps/s.
void PlacementOn(const std::string& graph_name, const Scope& graph, int n, const std::string& params) {
  RuntimeOptions ro;
  ro.num_cpu_devices = 2;
  ro.cpu_device_threads = 1;
  Runtime rt(ro);
  Tensor x = Filled(n, n, 1.f);
  std::vector<Tensor> out;
  const char* names[] = {"cost_model", "round_robin", "single"};
  const PlacementStrategy strategies[] = {PlacementStrategy::kCostModel, PlacementStrategy::kRoundRobin,
                                          PlacementStrategy::kSingle};
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::function<void()>> fns;
  for (auto st : strategies) {
    sessions.push_back(Open(&rt, graph, st));
    Session* s = sessions.back().get();
    fns.push_back([s, &x, &out] { Check(s->Run({{"x", x}}, {"sum"}, {}, &out)); });
  }
  auto stats = bench::MeasureInterleaved(9, 5, fns);
  for (int i = 0; i < 3; ++i) {
    std::set<std::string> used;  // devices the strategy put nodes on
    if (std::getenv("AF_BENCH_SHOW_PLACEMENT"))  // which device each strategy chose, on stderr
      for (const auto& kv : sessions[static_cast<size_t>(i)]->LastPlacement())
        std::fprintf(stderr, "%s %s -> %s\n", names[i], kv.first.c_str(), kv.second.c_str());
    for (const auto& kv : sessions[static_cast<size_t>(i)]->LastPlacement()) used.insert(kv.second);
    const std::string p = "\"graph\":\"" + graph_name + "\"," + params +
                          ",\"devices_used\":" + std::to_string(used.size()) + ",\"devices\":2,\"device_threads\":1,\"strategy\":\"" + names[i] + "\",\"impl\":\"actorflow\"";
    bench::Print("placement_steps", p, "throughput", "steps/s", stats[static_cast<size_t>(i)], 1.0, true);
  }
  std::printf("{\"bench\":\"placement_ratio\",\"params\":{\"graph\":\"%s\"},\"metric\":\"cost_model / round_robin, "
              "cost_model / single\",\"unit\":\"ratio\",\"median\":%.3f,\"vs_single\":%.3f}\n",
              graph_name.c_str(), stats[1].median / stats[0].median, stats[2].median / stats[0].median);
}

void Placement() {
  PlacementOn("branches", TwoBranches(384, 4, "", ""), 384, "\"n\":384,\"depth\":4");
  PlacementOn("chain", CheapChain(32, 200), 32, "\"n\":32,\"depth\":200");
}

// `k` scalar adds whose inputs are produced on `src` and consumed on `dst`.
Scope Transfers(int k, const std::string& src, const std::string& dst) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x").WithDevice(src), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{}));
  std::vector<Input> sums;
  for (int i = 0; i < k; ++i) {
    // Distinct constants: equal nodes would be merged by CSE.
    auto v = ops::Add(root.WithOpName("p" + std::to_string(i)).WithDevice(src), x, static_cast<float>(i));
    sums.push_back(ops::Neg(root.WithOpName("c" + std::to_string(i)).WithDevice(dst), v));
  }
  ops::AddN(root.WithOpName("total").WithDevice(dst), sums);
  return root;
}

void SendRecv() {
  const int k = 1000;
  RuntimeOptions ro;
  ro.num_cpu_devices = 2;
  Runtime rt(ro);
  auto local = Open(&rt, Transfers(k, "/device:CPU:0", "/device:CPU:0"), PlacementStrategy::kCostModel);
  auto cross = Open(&rt, Transfers(k, "/device:CPU:0", "/device:CPU:1"), PlacementStrategy::kCostModel);
  Tensor x = Tensor::Scalar<float>(1.f);
  std::vector<Tensor> out;
  auto run = [&](Session& s) { return [&] { Check(s.Run({{"x", x}}, {"total"}, {}, &out)); }; };
  auto stats = bench::MeasureInterleaved(9, 20, {run(*local), run(*cross)});
  const double per = (stats[1].median - stats[0].median) / k * 1e6;
  std::printf("{\"bench\":\"send_recv_overhead\",\"params\":{\"transfers\":%d,\"bytes\":4,\"threads\":%d,"
              "\"impl\":\"actorflow\"},\"metric\":\"latency\",\"unit\":\"us/transfer\",\"median\":%.3f,"
              "\"one_device_step_us\":%.1f,\"two_device_step_us\":%.1f}\n",
              k, rt.num_threads(), per, stats[0].median * 1e6, stats[1].median * 1e6);
}

}  // namespace

// Arguments (optional): which figures: two_branch, two_branch_shared, two_branch_inline, placement, send_recv.
int main(int argc, char** argv) {
  auto wanted = [&](const char* name) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == name) return true;
    return false;
  };
  if (wanted("two_branch")) TwoBranch(false);
  if (wanted("two_branch_shared")) TwoBranch(true);
  if (wanted("two_branch_inline")) TwoBranchInline();
  if (wanted("placement")) Placement();
  if (wanted("send_recv")) SendRecv();
  return 0;
}
