#include "actorflow/ops/math/cpu_gemm.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
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
using GetThreadsFn = int (*)();

struct OneDnn {
  SgemmFn sgemm = nullptr;
  // From the OpenMP runtime oneDNN brings: without one thread per call there,
  // oneDNN would start a team of threads beside the compute pool.
  SetThreadsFn omp_set_num_threads = nullptr;
  GetThreadsFn omp_get_max_threads = nullptr;
};

// Calls inside oneDNN, and whether the process is exiting: oneDNN's static
// destructors (its JIT'd kernels among them) must not run under a pool thread
// still in a call (Runtime::Default's pool lives until exit).
std::atomic<int> g_in_flight{0};
std::atomic<bool> g_exiting{false};

void WaitForCallsAtExit() {
  g_exiting.store(true);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (g_in_flight.load() > 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

const OneDnn* Open() {
  for (const char* name : {"libdnnl.so.3", "libdnnl.so.2"}) {
    // Loading OpenMP may pin the loading thread (OMP_PROC_BIND, GOMP_CPU_AFFINITY):
    // a pool thread keeps the CPUs it had.
    cpu_set_t cpus;
    const bool saved = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0;
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);  // never closed
    if (saved) pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
    if (!lib) continue;
    auto* api = new OneDnn();
    api->sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "dnnl_sgemm"));
    api->omp_set_num_threads = reinterpret_cast<SetThreadsFn>(dlsym(lib, "omp_set_num_threads"));
    api->omp_get_max_threads = reinterpret_cast<GetThreadsFn>(dlsym(lib, "omp_get_max_threads"));
    if (api->sgemm && api->omp_set_num_threads && api->omp_get_max_threads) {
      // A first call creates oneDNN's statics; the exit handler registered
      // after it runs before their destructors.
      float a[4] = {1, 2, 3, 4}, c[4];
      api->omp_set_num_threads(1);
      if (api->sgemm('N', 'N', 2, 2, 2, 1.f, a, 2, a, 2, 0.f, c, 2) == 0 && std::atexit(WaitForCallsAtExit) == 0)
        return api;
    }
    delete api;
  }
  return nullptr;
}

const OneDnn* Load() {
  static const OneDnn* loaded = [] {
    const char* env = std::getenv("ACTORFLOW_CPU_GEMM");
    if (env && std::strcmp(env, "eigen") == 0) return static_cast<const OneDnn*>(nullptr);  // not even loaded
    return Open();
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
// Nor is a shape timed whose scratch operands would take more than 64 MiB
// (skinny products): Eigen, rather than memory the budget does not count.
constexpr int64_t kMaxTimedElements = int64_t{1} << 24;

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
  if (flops > kMaxTimedFlops || flops <= 0 || m * k + k * n + m * n > kMaxTimedElements) return Impl::kEigen;
  std::vector<float> a, b, c;
  try {
    a.resize(static_cast<size_t>(m * k));
    b.resize(static_cast<size_t>(k * n));
    c.resize(static_cast<size_t>(m * n));
  } catch (const std::bad_alloc&) {
    return Impl::kEigen;
  }
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

bool OneDnnSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc) {
  const OneDnn* api = Load();
  // This thread's OpenMP team: itself alone, for this call (the thread may be
  // a client's, running its step's first kernels: its own OpenMP setting is
  // given back). Where that does not hold (another OpenMP runtime answers
  // oneDNN), this thread keeps to Eigen.
  const int before = api->omp_get_max_threads();
  if (before != 1) api->omp_set_num_threads(1);
  struct Restore {
    const OneDnn* api;
    int before;
    ~Restore() {
      if (before != 1) api->omp_set_num_threads(before);
    }
  } restore{api, before};
  thread_local int single_threaded = -1;
  if (single_threaded < 0) single_threaded = api->omp_get_max_threads() == 1;
  if (!single_threaded) return false;
  g_in_flight.fetch_add(1);
  const bool ok = !g_exiting.load() &&
                  api->sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc) == 0;
  g_in_flight.fetch_sub(1);
  return ok;
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
