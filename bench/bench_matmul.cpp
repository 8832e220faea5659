// MatMul float32 n x n through Session::Run, beside Eigen (Tensor contraction)
// and OpenBLAS (cblas_sgemm) called directly with the same number of threads.
// Threads: ACTORFLOW_NUM_THREADS (default: cores).
//   bench_matmul [N [IMPL[,IMPL]...]]   IMPL: actorflow, eigen, openblas (default: all)
// The implementations named together are measured interleaved, a block of
// back-to-back calls each per round, so the machine's slow spells hit them
// alike; "reps" in the output counts rounds. bench/run_all.sh
// runs OpenBLAS in a process of its own: its threads keep spinning long after
// a call and would slow whatever runs next.
#include <cblas.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <sstream>

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace actorflow;

int main(int argc, char** argv) {
  const int threads = Runtime::Default()->num_threads();
  std::vector<int> sizes = {256, 1024, 2048};
  if (argc > 1) sizes = {std::atoi(argv[1])};
  std::vector<std::string> impls = {"actorflow", "eigen", "openblas"};
  if (argc > 2) {
    impls.clear();
    std::stringstream list(argv[2]);
    for (std::string item; std::getline(list, item, ',');) {
      if (item != "actorflow" && item != "eigen" && item != "openblas") {
        std::fprintf(stderr, "unknown implementation %s (actorflow, eigen, openblas)\n", item.c_str());
        return 2;
      }
      impls.push_back(item);
    }
  }
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  ops::MatMul(root.WithOpName("c"), a, b);
  proto::GraphDef def;
  if (!root.ToGraphDef(&def).ok()) return 1;
  Session session;
  if (!session.Create(def).ok()) return 1;
  std::unique_ptr<Eigen::ThreadPool> eigen_pool;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_device;
  if (threads > 1) {
    eigen_pool = std::make_unique<Eigen::ThreadPool>(threads);
    eigen_device = std::make_unique<Eigen::ThreadPoolDevice>(eigen_pool.get(), threads);
  }
  // OpenBLAS starts its threads when the library loads and they spin for a
  // while after each call: run_all.sh sets OPENBLAS_NUM_THREADS=1 for the
  // processes that do not measure it, so they do not compete.
  if (std::find(impls.begin(), impls.end(), "openblas") != impls.end()) openblas_set_num_threads(threads);

  for (int n : sizes) {
    Tensor ta(DT_FLOAT, TensorShape{n, n}), tb(DT_FLOAT, TensorShape{n, n}), tc(DT_FLOAT, TensorShape{n, n});
    for (int64_t i = 0; i < ta.NumElements(); ++i) {
      ta.data<float>()[i] = 0.001f * static_cast<float>(i % 17);
      tb.data<float>()[i] = 0.002f * static_cast<float>(i % 11);
    }
    using Map = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
    Map A(ta.data<float>(), n, n), B(tb.data<float>(), n, n), C(tc.data<float>(), n, n);
    const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
    std::vector<Tensor> out;
    std::vector<std::function<void()>> fns;
    for (const auto& impl : impls) {
      if (impl == "actorflow") {
        fns.push_back([&] {
          if (!session.Run({{"a", ta}, {"b", tb}}, {"c"}, {}, &out).ok()) std::abort();
        });
      } else if (impl == "eigen") {
        fns.push_back([&] {
          if (!eigen_device) C = A.contract(B, dims);
          else C.device(*eigen_device) = A.contract(B, dims);
        });
      } else {
        fns.push_back([&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, ta.data<float>(), n,
                      tb.data<float>(), n, 0.f, tc.data<float>(), n);
        });
      }
    }
    const double flops = 2.0 * n * n * n;
    // Rounds of back-to-back calls, ~10 ms or more per implementation each.
    const int block = n <= 256 ? 40 : n <= 1024 ? 2 : 1;
    const int rounds = n <= 256 ? 21 : n <= 1024 ? 21 : 9;
    auto stats = bench::MeasureInterleaved(rounds, block, fns);
    const std::string params = "\"n\":" + std::to_string(n) + ",\"threads\":" + std::to_string(threads);
    for (size_t i = 0; i < impls.size(); ++i)
      bench::Print("matmul_f32", params + ",\"impl\":\"" + impls[i] + "\"", "throughput", "GFLOP/s", stats[i],
                   flops / 1e9, true);
  }
  return 0;
}
