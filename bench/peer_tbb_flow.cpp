// Peer for the executor benchmarks: oneTBB flow_graph with bare continue_nodes
// (no tensors), the same chain and fan-out/fan-in shapes as bench_executor.
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "bench_util.hpp"

using namespace tbb::flow;

int main() {
  const char* env = std::getenv("ACTORFLOW_NUM_THREADS");
  const int threads = env ? std::atoi(env) : 2;
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
  const std::string th = ",\"threads\":" + std::to_string(threads);
  {
    const int n = 100000;
    graph g;
    std::vector<std::unique_ptr<continue_node<continue_msg>>> nodes;
    volatile int sink = 0;
    for (int i = 0; i < n; ++i) {
      nodes.push_back(std::make_unique<continue_node<continue_msg>>(g, [&sink](const continue_msg&) { sink = sink + 1; }));
      if (i) make_edge(*nodes[i - 1], *nodes[i]);
    }
    auto s = bench::Measure(2, 15, [&] {
      nodes[0]->try_put(continue_msg());
      g.wait_for_all();
    });
    bench::Print("executor_chain", "\"nodes\":100000" + th + ",\"impl\":\"tbb_flow_graph\"", "time_per_node", "us", s, 1e6 / n);
  }
  {
    const int n = 10000;
    graph g;
    continue_node<continue_msg> src(g, [](const continue_msg&) {});
    continue_node<continue_msg> join(g, [](const continue_msg&) {});
    std::vector<std::unique_ptr<continue_node<continue_msg>>> mids;
    for (int i = 0; i < n; ++i) {
      mids.push_back(std::make_unique<continue_node<continue_msg>>(g, [](const continue_msg&) {}));
      make_edge(src, *mids.back());
      make_edge(*mids.back(), join);
    }
    auto s = bench::Measure(2, 25, [&] {
      src.try_put(continue_msg());
      g.wait_for_all();
    });
    bench::Print("executor_fanout", "\"width\":10000" + th + ",\"impl\":\"tbb_flow_graph\"", "time_per_node", "us", s,
                 1e6 / (n + 2));
  }
  return 0;
}
