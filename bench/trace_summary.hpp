// One traced step of a benchmark's session, summarized (AF_BENCH_TRACE=1 in
// bench_train and bench_gpu_train): where its time went per op type and
// device (host time from start to end of each kernel: for an enqueueing GPU
// kernel that is its launch; "pool" kernels ran sharded on the compute pool),
// the step's span, when the feeds reached the GPU and the first MatMul (or
// _FusedMatMul) began,
// and the nodes per device.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/client/session.hpp"

namespace bench {

using actorflow::RunMetadata;
using actorflow::RunOptions;
using actorflow::Session;
using actorflow::Status;
using actorflow::Tensor;
using actorflow::TraceLevel;

inline void TraceStep(Session& session, const std::vector<std::pair<std::string, Tensor>>& feeds,
                      const std::string& target) {
  RunOptions opts;
  opts.trace_level = TraceLevel::kFullTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  // The first traced step of a session pays one-time costs in its first nodes
  // (15-20 us before the second node starts): it is run untold, and the
  // second one reported.
  Status s = session.Run(opts, feeds, {}, {target}, &out, &md);
  md = RunMetadata();
  if (s.ok()) s = session.Run(opts, feeds, {}, {target}, &out, &md);
  if (!s.ok()) {
    std::fprintf(stderr, "trace: %s\n", s.ToString().c_str());
    return;
  }
  std::map<std::string, std::pair<int64_t, int>> per_op;
  std::map<std::string, int> per_device;
  int64_t first = INT64_MAX, last = 0;
  for (const auto& n : md.step_stats) {
    auto& [us, count] = per_op[n.op + "@" + (n.device.find("GPU") != std::string::npos ? "GPU" : "CPU") + "/" + n.where];
    us += n.end_us - n.start_us;
    ++count;
    ++per_device[n.device];
    first = std::min(first, n.start_us);
    last = std::max(last, n.end_us);
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [op, v] : per_op) order.emplace_back(v.first, op);
  std::sort(order.rbegin(), order.rend());
  // When the feeds' _Recvs ended (a GPU step's) and the first MatMul began.
  int64_t recv_end = -1, first_matmul = -1;
  for (const auto& n : md.step_stats) {
    if (n.op == "_Recv") recv_end = std::max(recv_end, n.end_us - first);
    // A MatMul fused with its bias and activation (graph/remapper.hpp) counts: the first layer's usually is.
    const bool matmul = n.op == "MatMul" || n.op == "_FusedMatMul";
    if (matmul && (first_matmul < 0 || n.start_us - first < first_matmul)) first_matmul = n.start_us - first;
  }
  std::printf("trace: %zu nodes, span %lld us", md.step_stats.size(), static_cast<long long>(last - first));
  if (recv_end >= 0) std::printf(", feeds on the GPU at %lld us", static_cast<long long>(recv_end));
  if (first_matmul >= 0) std::printf(", first MatMul at %lld us", static_cast<long long>(first_matmul));
  std::printf(";");
  for (const auto& [d, c] : per_device) std::printf(" %s: %d", d.c_str(), c);
  std::printf("\n");
  if (std::getenv("AF_BENCH_TRACE_NODES") != nullptr) {  // every node, in start order
    auto nodes = md.step_stats;
    std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
    for (const auto& n : nodes)
      std::printf("    %6lld %6lld  %-22s %s %s\n", static_cast<long long>(n.start_us - first),
                  static_cast<long long>(n.end_us - first), n.op.c_str(), n.where.c_str(), n.node.c_str());
  }
  for (const auto& [us, op] : order) std::printf("  %-40s %4d nodes %8lld us\n", op.c_str(), per_op[op].second, static_cast<long long>(us));
  std::fflush(stdout);
}

}  // namespace bench
