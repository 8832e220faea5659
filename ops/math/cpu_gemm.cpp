#include "ops/math/cpu_gemm.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace actorflow {
namespace cpu_gemm {

namespace {

// dnnl_sgemm (oneapi/dnnl/dnnl.h, oneDNN 2.x and 3.x): row-major, returns a
// dnnl_status_t (0: success). Declared here so that building needs no oneDNN
// headers.
using SgemmFn = int (*)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                        int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
using SetThreadsFn = void (*)(int);

struct OneDnn {
  SgemmFn sgemm = nullptr;
  SetThreadsFn omp_set_num_threads = nullptr;  // from the OpenMP runtime oneDNN brings
};

const OneDnn* Load() {
  static const OneDnn* loaded = [] {
    const char* env = std::getenv("ACTORFLOW_CPU_GEMM");
    if (env && std::strcmp(env, "eigen") == 0) return static_cast<const OneDnn*>(nullptr);  // not even loaded
    for (const char* name : {"libdnnl.so.3", "libdnnl.so.2"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);  // never closed
      if (!lib) continue;
      auto* api = new OneDnn();
      api->sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "dnnl_sgemm"));
      // Searched in oneDNN's dependencies too (its OpenMP runtime). Without
      // it oneDNN would start a team of threads beside the compute pool.
      api->omp_set_num_threads = reinterpret_cast<SetThreadsFn>(dlsym(lib, "omp_set_num_threads"));
      if (api->sgemm && api->omp_set_num_threads) return static_cast<const OneDnn*>(api);
      delete api;
    }
    return static_cast<const OneDnn*>(nullptr);
  }();
  return loaded;
}

Policy PolicyFromEnv() {
  const char* env = std::getenv("ACTORFLOW_CPU_GEMM");
  if (!env) return Policy::kAuto;
  if (std::strcmp(env, "eigen") == 0) return Policy::kEigen;
  if (std::strcmp(env, "onednn") == 0) return Policy::kOneDnn;
  return Policy::kAuto;
}

using Shape = std::tuple<bool, bool, int64_t, int64_t, int64_t>;

struct Table {
  std::mutex mu;
  Policy policy = PolicyFromEnv();
  std::map<Shape, Impl> chosen;  // guarded by mu
};
Table& table() {
  static Table* t = new Table();  // never destroyed: MatMuls may run during exit
  return *t;
}

// oneDNN must beat Eigen by this much to be chosen: a near tie keeps Eigen,
// so that noise does not make two processes choose differently.
constexpr double kMargin = 1.15;
// Products above this are Eigen's parallel contraction anyway (matmul_op.cpp).
constexpr double kMaxTimedFlops = 4.0e9;

double Seconds(const Runner& run, Impl impl, const float* a, const float* b, float* c) {
  run(impl, a, b, c);  // warm: packing buffers, oneDNN's JIT
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run(impl, a, b, c);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

Impl Measure(int64_t m, int64_t n, int64_t k, const Runner& run) {
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (flops > kMaxTimedFlops || flops <= 0) return Impl::kEigen;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.5f - 1.f;
  const double eigen = Seconds(run, Impl::kEigen, a.data(), b.data(), c.data());
  const double onednn = Seconds(run, Impl::kOneDnn, a.data(), b.data(), c.data());
  return onednn * kMargin < eigen ? Impl::kOneDnn : Impl::kEigen;
}

}  // namespace

void SetPolicy(Policy policy) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.policy = policy;
  t.chosen.clear();
}

bool OneDnnAvailable() { return Load() != nullptr; }

void OneDnnSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc) {
  const OneDnn* api = Load();
  thread_local bool single_threaded = false;
  if (!single_threaded) {  // this thread's OpenMP team: itself alone
    api->omp_set_num_threads(1);
    single_threaded = true;
  }
  api->sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc);
}

bool Chosen(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Impl* impl) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.chosen.find(Shape{ta, tb, m, n, k});
  if (it == t.chosen.end()) return false;
  *impl = it->second;
  return true;
}

Impl Choose(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const Runner& run) {
  Table& t = table();
  const Shape shape{ta, tb, m, n, k};
  Policy policy;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.chosen.find(shape);
    if (it != t.chosen.end()) return it->second;
    policy = t.policy;
  }
  Impl impl = Impl::kEigen;
  if (policy != Policy::kEigen && OneDnnAvailable())
    impl = policy == Policy::kOneDnn ? Impl::kOneDnn : Measure(m, n, k, run);
  std::lock_guard<std::mutex> lock(t.mu);
  return t.chosen.emplace(shape, impl).first->second;  // a concurrent first call may have chosen already
}

}  // namespace cpu_gemm
}  // namespace actorflow
