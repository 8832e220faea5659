// MatMul float32 n x n through Session::Run, beside OpenBLAS (cblas_sgemm) and
// Eigen (Tensor contraction) called directly with the same number of threads.
// Threads: ACTORFLOW_NUM_THREADS (default: cores).
//   bench_matmul [N [IMPL]]   IMPL: actorflow, openblas or eigen (default: all)
// bench/run_all.sh runs each (N, IMPL) in its own process: BLAS and Eigen
// pools keep spinning after a call and would slow whatever is measured next.
#include <cblas.h>

#include <memory>

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

#include "actors/runtime.hpp"
#include "actors/session.hpp"
#include "bench_util.hpp"
#include "graph/cc_ops.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace actorflow;

int main(int argc, char** argv) {
  const int threads = Runtime::Default()->num_threads();
  std::vector<int> sizes = {256, 1024, 2048};
  if (argc > 1) sizes = {std::atoi(argv[1])};
  const std::string only = argc > 2 ? argv[2] : "";
  auto run = [&](const char* impl) { return only.empty() || only == impl; };
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
  if (run("eigen") && threads > 1) {
    eigen_pool = std::make_unique<Eigen::ThreadPool>(threads);
    eigen_device = std::make_unique<Eigen::ThreadPoolDevice>(eigen_pool.get(), threads);
  }

  for (int n : sizes) {
    Tensor ta(DT_FLOAT, TensorShape{n, n}), tb(DT_FLOAT, TensorShape{n, n}), tc(DT_FLOAT, TensorShape{n, n});
    for (int64_t i = 0; i < ta.NumElements(); ++i) {
      ta.data<float>()[i] = 0.001f * static_cast<float>(i % 17);
      tb.data<float>()[i] = 0.002f * static_cast<float>(i % 11);
    }
    const double flops = 2.0 * n * n * n;
    const int reps = n <= 256 ? 200 : n <= 1024 ? 20 : 5;
    const std::string params = "\"n\":" + std::to_string(n) + ",\"threads\":" + std::to_string(threads);

    if (run("actorflow")) {
      std::vector<Tensor> out;
      auto s = bench::Measure(2, reps, [&] { session.Run({{"a", ta}, {"b", tb}}, {"c"}, {}, &out); });
      bench::Print("matmul_f32", params + ",\"impl\":\"actorflow\"", "throughput", "GFLOP/s", s, flops / 1e9, true);
    }
    if (run("openblas")) {
      openblas_set_num_threads(threads);
      auto s = bench::Measure(2, reps, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, ta.data<float>(), n, tb.data<float>(), n,
                    0.f, tc.data<float>(), n);
      });
      openblas_set_num_threads(1);
      bench::Print("matmul_f32", params + ",\"impl\":\"openblas\"", "throughput", "GFLOP/s", s, flops / 1e9, true);
    }
    if (run("eigen")) {
      using Map = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
      Map A(ta.data<float>(), n, n), B(tb.data<float>(), n, n), C(tc.data<float>(), n, n);
      Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
      auto s = bench::Measure(2, reps, [&] {
        if (!eigen_device) C = A.contract(B, dims);
        else C.device(*eigen_device) = A.contract(B, dims);
      });
      bench::Print("matmul_f32", params + ",\"impl\":\"eigen\"", "throughput", "GFLOP/s", s, flops / 1e9, true);
    }
  }
  return 0;
}
