// A kernel that faults on purpose, for gpu_fault_test: it writes through a
// null pointer, which the GPU reports as an illegal address, asynchronously,
// at the next stream query or synchronisation.
#include <cuda_runtime_api.h>

namespace {
__global__ void WriteThroughNull(int* p) { p[threadIdx.x] = 1; }
}  // namespace

cudaError_t LaunchFaultingKernelForTest(cudaStream_t stream) {
  WriteThroughNull<<<1, 32, 0, stream>>>(nullptr);
  return cudaGetLastError();
}
