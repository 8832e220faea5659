// Reductions across the threads of one CUDA block, for the GPU kernels that
// reduce rows (Sum, Mean, BiasAddGrad, Softmax, the cross-entropy ops).
//
// Every thread of the block must call them, with blockDim.x a multiple of 32
// (at most 1024), and `scratch` a __shared__ array of at least 32 floats;
// each thread gets the block's result. Consecutive calls may share `scratch`.
#pragma once

#include <cuda_runtime.h>

namespace actorflow {

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ float WarpReduce(float v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// `identity`: the value that changes nothing (0 for a sum, -inf for a max).
template <class Op>
__device__ float BlockReduce(float v, Op op, float identity, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = WarpReduce(v, op);
  __syncthreads();  // the previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = WarpReduce(lane < warps ? scratch[lane] : identity, op);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

}  // namespace actorflow
