// A GPU kernel that faults fails its step; it never leaves the step waiting.
//
// The device's event poller (devices/cuda/gpu_event_poller.hpp) watches the
// events of ThenRun and Sync; a kernel that faults makes every later event
// report the device's error, which fails the step waiting at its end.
// A fault leaves the process's CUDA context unusable, so this suite runs in a
// process of its own, after which the GPU is not used again.
//
// Needs a GPU: without one (or in a build without CUDA) it exits 77, which
// CTest reports as skipped, never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "gpu_util.hpp"
#include "test_util.hpp"

#ifdef AF_CUDA
#include "actorflow/devices/cuda/gpu_device.hpp"
cudaError_t LaunchFaultingKernelForTest(cudaStream_t stream);  // tests/gpu_fault_kernel.cu
#endif

using namespace actorflow;

namespace {
Runtime* g_runtime = nullptr;
}  // namespace

#ifdef AF_CUDA
TEST_CASE("a kernel that faults fails the device's sync and the next step with the GPU's error") {
  Device* device = nullptr;
  REQUIRE(g_runtime->device_manager().Lookup("GPU:0", &device).ok());
  auto* gpu = dynamic_cast<GpuDevice*>(device);
  REQUIRE(gpu != nullptr);

  // A healthy stream first: Sync answers OK.
  auto healthy = std::make_shared<std::promise<Status>>();
  gpu->Sync([healthy](const Status& s) { healthy->set_value(s); });
  auto answer = healthy->get_future();
  REQUIRE(answer.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  REQUIRE(answer.get().ok());

  REQUIRE(gpu->Activate().ok());
  REQUIRE(LaunchFaultingKernelForTest(gpu->compute_stream()) == cudaSuccess);  // the fault comes later
  auto faulted = std::make_shared<std::promise<Status>>();
  gpu->Sync([faulted](const Status& s) { faulted->set_value(s); });
  answer = faulted->get_future();
  REQUIRE(answer.wait_for(std::chrono::seconds(30)) == std::future_status::ready);  // never waits for ever
  const Status s = answer.get();
  INFO(s.ToString());
  CHECK(s.code() == Code::kInternal);
  CHECK_THAT(s.message(), Catch::Contains("GPU:0"));

  // A step on the GPU now fails, with a Status, within its bound.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Relu(root.WithDevice("/device:GPU:0").WithOpName("relu_after_fault"), x);
  SessionOptions so;
  so.runtime = g_runtime;
  Session session(so);
  REQUIRE(session.Create(test::ToDef(root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 60000;
  std::vector<Tensor> out;
  const Status step = session.Run(ro, {{"x", test::Random({64, 64}, 1)}}, {y.name()}, {}, &out);
  INFO(step.ToString());
  CHECK_FALSE(step.ok());
  CHECK(step.code() != Code::kDeadlineExceeded);  // the error came back, not the step's bound
  session.Close();
}
#endif

int main(int argc, char** argv) {
  RuntimeOptions options;
  options.num_gpu_devices = 1;
  Runtime runtime(options);
  if (!test::HasGpuOrSaySkipped(runtime, "gpu_fault_test")) return test::kSkipped;
  g_runtime = &runtime;
  return test::RunTests(argc, argv);  // failed, skipped (77) or passed (skip.hpp)
}
