// Executor overhead and step latency through Session::Run:
//  - chain: 100,000 scalar Neg nodes in a line (each waits for the previous)
//  - fanout: one source, 10,000 scalar Neg nodes, one NoOp joining them
//  (both without graph optimizations: they measure the executor)
//  - one_node: feed a scalar, run one Identity, fetch it
//  - concurrent: steps/s of independent 512x512 MatMul steps from 1 and 2 client threads
// `bench_executor one_node` runs only one_node; AF_BENCH_PROFILE_RUNS=N runs
// N more of its steps first (a loop long enough for perf record).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"

using namespace actorflow;

namespace {
void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_executor: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}
// The executor's own overhead: no graph optimizations (CSE would merge the
// fan-out's 10,000 equal nodes into one).
SessionOptions Unoptimized() {
  SessionOptions o;
  o.graph_options.do_common_subexpression_elimination = false;
  o.graph_options.do_constant_folding = false;
  return o;
}
proto::GraphDef Def(const Scope& root) {
  proto::GraphDef def;
  Check(root.ToGraphDef(&def));
  return def;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string threads = std::to_string(Runtime::Default()->num_threads());
  const bool concurrent = argc > 1 && std::string(argv[1]) == "concurrent";
  const bool one_node_only = argc > 1 && std::string(argv[1]) == "one_node";
  if (!concurrent && !one_node_only) {
    const int n = 100000;
    Scope root = Scope::NewRootScope();
    Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    for (int i = 0; i < n; ++i) x = ops::Neg(root, x);
    ops::Identity(root.WithOpName("out"), x);
    Session session(Unoptimized());
    Check(session.Create(Def(root)));
    std::vector<Tensor> out;
    auto s = bench::Measure(2, 15, [&] { Check(session.Run({{"x", Tensor::Scalar<float>(1)}}, {"out"}, {}, &out)); });
    bench::Print("executor_chain", "\"nodes\":100000,\"threads\":" + threads + ",\"impl\":\"actorflow\"", "time_per_node",
                 "us", s, 1e6 / n);
  }
  if (!concurrent && !one_node_only) {
    const int n = 10000;
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    std::vector<Operation> deps;
    for (int i = 0; i < n; ++i) deps.push_back(ops::Neg(root, x).op());
    ops::NoOp(root.WithOpName("join").WithControlDependencies(deps));
    Session session(Unoptimized());
    Check(session.Create(Def(root)));
    std::vector<Tensor> out;
    auto s = bench::Measure(2, 25, [&] { Check(session.Run({{"x", Tensor::Scalar<float>(1)}}, {}, {"join"}, &out)); });
    bench::Print("executor_fanout", "\"width\":10000,\"threads\":" + threads + ",\"impl\":\"actorflow\"",
                 "time_per_node", "us", s, 1e6 / (n + 2));
  }
  if (!concurrent) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    ops::Identity(root.WithOpName("y"), x);
    Session session;
    Check(session.Create(Def(root)));
    std::vector<Tensor> out;
    Tensor v = Tensor::Scalar<float>(3);
    if (const char* runs = std::getenv("AF_BENCH_PROFILE_RUNS"))
      for (long i = std::atol(runs); i > 0; --i) Check(session.Run({{"x", v}}, {"y"}, {}, &out));
    auto s = bench::Measure(200, 5000, [&] { Check(session.Run({{"x", v}}, {"y"}, {}, &out)); });
    bench::Print("session_run_one_node", "\"threads\":" + threads + ",\"impl\":\"actorflow\"", "latency", "us", s, 1e6);
  }
  if (concurrent) {
    Scope root = Scope::NewRootScope();
    auto a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
    ops::MatMul(root.WithOpName("c"), a, a);
    Session session;
    Check(session.Create(Def(root)));
    Tensor m(DT_FLOAT, TensorShape{512, 512});
    for (int64_t i = 0; i < m.NumElements(); ++i) m.data<float>()[i] = 0.001f * static_cast<float>(i % 13);
    const int steps = 40;
    for (int clients : {1, 2}) {
      auto s = bench::Measure(1, 5, [&] {
        std::vector<std::thread> ts;
        for (int c = 0; c < clients; ++c)
          ts.emplace_back([&] {
            std::vector<Tensor> out;
            for (int i = 0; i < steps / clients; ++i) Check(session.Run({{"a", m}}, {"c"}, {}, &out));
          });
        for (auto& t : ts) t.join();
      });
      bench::Print("concurrent_matmul_steps",
                   "\"n\":512,\"intra_op_threads\":1,\"clients\":" + std::to_string(clients) + ",\"threads\":" + threads + ",\"impl\":\"actorflow\"",
                   "throughput", "steps/s", s, steps, true);
    }
  }
  return 0;
}
