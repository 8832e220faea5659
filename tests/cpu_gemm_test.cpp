// The CPU MatMul's two GEMMs (ops/math/cpu_gemm.hpp): oneDNN's, where the
// machine has libdnnl (setup.sh installs it), gives Eigen's products for
// every transpose and for the row and column blocks the kernel shards over
// the pool; the per-shape choice is made once and kept.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/ops/math/cpu_gemm.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

Tensor RandomMatrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Tensor t(DT_FLOAT, TensorShape{rows, cols});
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// op(a) * op(b) in double precision.
std::vector<double> Reference(const Tensor& a, const Tensor& b, bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  auto A = [&](int64_t i, int64_t p) { return a.data<float>()[ta ? p * m + i : i * k + p]; };
  auto B = [&](int64_t p, int64_t j) { return b.data<float>()[tb ? j * k + p : p * n + j]; };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<double>(A(i, p)) * B(p, j);
      c[static_cast<size_t>(i * n + j)] = s;
    }
  return c;
}

}  // namespace

TEST_CASE("MatMul by oneDNN and by Eigen match a double-precision product, for every transpose and sharding") {
  REQUIRE(cpu_gemm::OneDnnAvailable());  // setup.sh installs libdnnl2: its absence is a finding, not a pass
  struct Case {
    int64_t m, n, k;
  };
  // Inline (small), sharded by rows (m >= n), sharded by columns (m < n and
  // m < 4 threads per pool thread, on up to 8 threads).
  const std::vector<Case> cases = {{64, 65, 129}, {300, 96, 200}, {4, 1200, 1000}};
  for (cpu_gemm::Policy policy : {cpu_gemm::Policy::kOneDnn, cpu_gemm::Policy::kEigen}) {
    cpu_gemm::SetPolicy(policy);
    for (const Case& c : cases) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          INFO((policy == cpu_gemm::Policy::kOneDnn ? "oneDNN " : "Eigen ")
               << c.m << "x" << c.n << "x" << c.k << " ta " << ta << " tb " << tb);
          const Tensor a = ta ? RandomMatrix(c.k, c.m, 1) : RandomMatrix(c.m, c.k, 1);
          const Tensor b = tb ? RandomMatrix(c.n, c.k, 2) : RandomMatrix(c.k, c.n, 2);
          Scope root = Scope::NewRootScope();
          auto pa = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
          auto pb = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
          auto product = ops::MatMul(root, pa, pb, ta, tb);
          const Tensor got = test::RunOk(root, {product}, {{"a", a}, {"b", b}})[0];
          REQUIRE(got.shape() == TensorShape{c.m, c.n});
          const std::vector<double> want = Reference(a, b, ta, tb, c.m, c.n, c.k);
          int bad = 0;
          for (size_t i = 0; i < want.size(); ++i)
            if (std::fabs(got.data<float>()[i] - want[i]) > 1e-4 * (1 + std::fabs(want[i])) && ++bad <= 3)
              UNSCOPED_INFO("element " << i << ": " << got.data<float>()[i] << " vs " << want[i]);
          CHECK(bad == 0);
          cpu_gemm::Impl impl;
          REQUIRE(2.0 * c.m * c.n * c.k >= cpu_gemm::kMinFlops);
          REQUIRE(cpu_gemm::Chosen(ta, tb, c.m, c.n, c.k, &impl));
          CHECK(impl == (policy == cpu_gemm::Policy::kOneDnn ? cpu_gemm::Impl::kOneDnn : cpu_gemm::Impl::kEigen));
        }
      }
    }
  }
  cpu_gemm::SetPolicy(cpu_gemm::Policy::kAuto);
}

TEST_CASE("tiny products stay Eigen's without a choice") {
  cpu_gemm::SetPolicy(cpu_gemm::Policy::kOneDnn);
  Scope root = Scope::NewRootScope();
  auto product = ops::MatMul(root, RandomMatrix(7, 3, 1), RandomMatrix(3, 5, 2));
  CHECK(test::RunOk(root, {product})[0].shape() == TensorShape{7, 5});
  cpu_gemm::Impl impl;
  CHECK_FALSE(cpu_gemm::Chosen(false, false, 7, 5, 3, &impl));
  cpu_gemm::SetPolicy(cpu_gemm::Policy::kAuto);
}

TEST_CASE("the per-shape choice is measured once and kept") {
  cpu_gemm::SetPolicy(cpu_gemm::Policy::kAuto);
  int timed = 0;
  auto run = [&](cpu_gemm::Impl, const float*, const float*, float*) { ++timed; };
  const cpu_gemm::Impl first = cpu_gemm::Choose(false, false, 64, 256, 784, run);
  CHECK(timed == 8);  // each implementation: one warm-up and three timed runs
  CHECK(cpu_gemm::Choose(false, false, 64, 256, 784, run) == first);
  CHECK(timed == 8);
  cpu_gemm::Impl kept;
  REQUIRE(cpu_gemm::Chosen(false, false, 64, 256, 784, &kept));
  CHECK(kept == first);
}
