// Helpers of the GPU suites (gpu_test, gpu_training_test): inputs whose
// sums are exact in float32, and a comparison of a GPU result with the CPU's.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "test_util.hpp"

namespace actorflow {
namespace test {

// Uniform in [lo, hi], in steps of 1/64: sums and products of such values
// (MatMul, BiasAddGrad, Sum) are exact in float32 at these sizes, so the GPU's
// order of summation cannot differ from the CPU's; exp and division still can.
inline Tensor Random(const TensorShape& shape, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = std::round(dist(gen) * 64.f) / 64.f;
  return t;
}

// |gpu - cpu| <= tol * (1 + |cpu|) everywhere, same shapes.
inline void ExpectClose(const Tensor& gpu, const Tensor& cpu, float tol = 1e-5f) {
  REQUIRE(gpu.dtype() == cpu.dtype());
  REQUIRE(gpu.shape() == cpu.shape());
  REQUIRE(gpu.InHostMemory());
  int bad = 0;
  for (int64_t i = 0; i < cpu.NumElements(); ++i) {
    const float g = gpu.data<float>()[i], c = cpu.data<float>()[i];
    const bool both_nan = std::isnan(g) && std::isnan(c);
    if (!both_nan && !(std::fabs(g - c) <= tol * (1.f + std::fabs(c)))) {
      if (++bad <= 5) UNSCOPED_INFO("element " << i << ": GPU " << g << ", CPU " << c);
    }
  }
  CHECK(bad == 0);
}

// A session of `runtime` with the scope's graph; REQUIREs that it was created.
inline std::unique_ptr<Session> NewSession(Runtime* runtime, const Scope& root, bool capture_gpu_steps = true) {
  SessionOptions so;
  so.runtime = runtime;
  so.graph_options.capture_gpu_steps = capture_gpu_steps;
  auto session = std::make_unique<Session>(so);
  Status s = session->Create(ToDef(root));
  INFO(s.ToString());
  REQUIRE(s.ok());
  return session;
}

// Whether `runtime` has a GPU; when not, says why `program` is skipped. The
// GPU suites then exit 77, which CTest reports as skipped, never as passed.
inline bool HasGpuOrSaySkipped(Runtime& runtime, const char* program) {
  if (!runtime.device_manager().OfType(DEVICE_GPU).empty()) return true;
#ifdef AF_CUDA
  std::printf("%s: skipped: no usable GPU on this machine\n", program);
#else
  std::printf("%s: skipped: this build has no CUDA (nvcc was not found or AF_ENABLE_CUDA=OFF)\n", program);
#endif
  return false;
}

}  // namespace test
}  // namespace actorflow
