// Loops (issue 6's figures), each beside its peer in the same run:
//  - loop_overhead: time per iteration of `while (i < n) i = i + 1` with
//    scalar tensors, one step of n iterations; peer: the same loop as plain
//    C++ (the floor) in this run, and PyTorch's Python loop over scalar
//    tensors (bench/peer_torch_loop.py, printed by run_all.sh);
//  - loop_parallel: iterations/s of a loop whose body is an independent
//    256x256 MatMul (the iteration counter is its only carried state) with
//    parallel_iterations 10 against 1, interleaved;
//  - loop_memory: the process's peak resident memory after a loop of 100k
//    and then of 1M iterations (a loop's state must not grow with its length).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"

using namespace actorflow;

namespace {

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_control_flow: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// while (i < n) i = i + 1; fetches the final i.
std::string CountingLoop(const Scope& root, int64_t parallel) {
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  OutputList out;
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  Check(ops::WhileLoop(
      root, {ops::Const(root, 0)},
      [n](const Scope& s, const OutputList& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [](const Scope& s, const OutputList& v, OutputList* next) {
        *next = {ops::Add(s, v[0], 1)};
        return s.status();
      },
      &out, o));
  return out[0].name();
}

// while (i < n) { i = i + 1; acc = acc + (a @ b)[0][0] }: the MatMuls of
// different iterations depend on nothing but the counter.
std::string MatMulLoop(const Scope& root, int64_t parallel) {
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  auto a = ops::RandomUniform(root.WithOpName("a"), {256, 256}, DT_FLOAT, 1);
  auto b = ops::RandomUniform(root.WithOpName("b"), {256, 256}, DT_FLOAT, 2);
  auto a_const = ops::Identity(root.WithOpName("a_value"), a);
  auto b_const = ops::Identity(root.WithOpName("b_value"), b);
  OutputList out;
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  Check(ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 0.f)},
      [n](const Scope& s, const OutputList& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [&](const Scope& s, const OutputList& v, OutputList* next) {
        // The product waits for nothing carried: a control edge from the
        // counter only puts it in this iteration.
        auto prod = ops::MatMul(s.WithControlDependencies({v[0].op()}), a_const, b_const);
        // One element of the product is carried on: the MatMul is the body's work.
        auto corner = ops::Sum(s, ops::Slice(s, prod, {0, 0}, {1, 1}), {0, 1});
        *next = {ops::Add(s, v[0], 1), ops::Add(s, v[1], corner)};
        return s.status();
      },
      &out, o));
  return out[1].name();
}

struct Loop {
  Session session;
  std::string fetch;
  Loop(Runtime* rt, const std::function<std::string(const Scope&)>& build) : session(Options(rt)) {
    Scope root = Scope::NewRootScope();
    fetch = build(root);
    proto::GraphDef def;
    Check(root.ToGraphDef(&def));
    Check(session.Create(def));
  }
  static SessionOptions Options(Runtime* rt) {
    SessionOptions so;
    so.runtime = rt;
    return so;
  }
  void Run(int n) {
    std::vector<Tensor> out;
    Check(session.Run({{"n", Tensor::Scalar<int32_t>(n)}}, {fetch}, {}, &out));
  }
};

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  RuntimeOptions ro;
  ro.num_threads = 2;
  Runtime rt(ro);
  if (argc > 1 && std::string(argv[1]) == "overhead") {  // only the counting loop, for profiling
    RuntimeOptions oo;
    oo.num_threads = argc > 2 ? std::atoi(argv[2]) : 2;
    Runtime ort(oo);
    Loop loop(&ort, [](const Scope& s) { return CountingLoop(s, 10); });
    const auto t0 = std::chrono::steady_clock::now();
    loop.Run(2000000);
    std::printf("%.3f us per iteration\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2e6 * 1e6);
    return 0;
  }

  // Per-iteration overhead, beside the same loop in plain C++.
  {
    const int n = 100000;
    Loop loop(&rt, [](const Scope& s) { return CountingLoop(s, 10); });
    volatile int sink = 0;
    auto plain = [&] {
      int i = 0;
      while (i < n) i = i + 1 + sink;
      sink = i - n;
    };
    auto stats = bench::MeasureInterleaved(7, 1, {[&] { loop.Run(n); }, plain});
    const std::string p = "\"iterations\":" + std::to_string(n) + ",\"body\":\"i = i + 1 (int32 scalar)\"";
    bench::Print("loop_overhead", p + ",\"impl\":\"actorflow WhileLoop, parallel_iterations 10\"", "time per iteration",
                 "us", stats[0], 1e6 / n);
    bench::Print("loop_overhead", p + ",\"impl\":\"plain C++ loop\"", "time per iteration", "us", stats[1], 1e6 / n);
  }

  // Independent MatMul iterations: parallel_iterations 10 against 1, with
  // each MatMul on one thread (TensorFlow's intra_op_parallelism_threads=1:
  // the loop's iterations are then what can use the second core) and with
  // MatMuls split over both threads (the default).
  for (int intra : {1, 0}) {
    RuntimeOptions po;
    po.num_threads = 2;
    po.intra_op_threads = intra;
    Runtime prt(po);
    const int n = 200;
    Loop serial(&prt, [](const Scope& s) { return MatMulLoop(s, 1); });
    Loop parallel(&prt, [](const Scope& s) { return MatMulLoop(s, 10); });
    auto stats = bench::MeasureInterleaved(5, 1, {[&] { serial.Run(n); }, [&] { parallel.Run(n); }});
    const std::string p = "\"iterations\":" + std::to_string(n) +
                          ",\"body\":\"256x256 MatMul\",\"threads\":2,\"intra_op_threads\":" +
                          (intra ? std::string("1") : std::string("\"2 (default)\""));
    bench::Print("loop_parallel", p + ",\"parallel_iterations\":1", "throughput", "iterations/s", stats[0], n, true);
    bench::Print("loop_parallel", p + ",\"parallel_iterations\":10", "throughput", "iterations/s", stats[1], n, true);
    std::printf("{\"bench\":\"loop_parallel_ratio\",\"params\":{%s},\"metric\":\"parallel_iterations 10 / 1\","
                "\"unit\":\"ratio\",\"median\":%.3f}\n",
                p.c_str(), stats[0].median / stats[1].median);
    std::fflush(stdout);
  }

  // Memory: a loop ten times longer must not need more.
  {
    Loop loop(&rt, [](const Scope& s) { return CountingLoop(s, 10); });
    loop.Run(1000);
    const double base = PeakRssMiB();
    loop.Run(100000);
    const double after_100k = PeakRssMiB();
    const auto t0 = std::chrono::steady_clock::now();
    loop.Run(1000000);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double after_1m = PeakRssMiB();
    std::printf("{\"bench\":\"loop_memory\",\"params\":{\"body\":\"i = i + 1\"},\"metric\":\"peak RSS\","
                "\"unit\":\"MiB\",\"before\":%.1f,\"after_100k_iterations\":%.1f,\"after_1m_iterations\":%.1f,"
                "\"growth_100k_to_1m\":%.1f,\"seconds_1m\":%.2f}\n",
                base, after_100k, after_1m, after_1m - after_100k, secs);
  }
  return 0;
}
