// Reductions across the threads of one CUDA block, for the GPU kernels that
// reduce rows (Sum, Mean, BiasAddGrad, Softmax, the cross-entropy ops), and
// the column sums of a row-major matrix (ColumnSumKernel).
//
// Every thread of the block must call them, with blockDim.x a multiple of 32
// (at most 1024), and `scratch` a __shared__ array of at least 32 floats;
// each thread gets the block's result. Consecutive calls may share `scratch`.
#pragma once

#include <cstdint>

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

/// Column sums: out[o * inner + k] = (sum over j < r of
/// x[(o * r + j) * inner + k]) / divisor, for every o < outer and k < inner (a bias
/// gradient is outer = 1, r = rows, inner = columns, divisor = 1; a mean's is r). A block of
/// kColumnTile x kColumnLanes threads takes kColumnTile adjacent columns: a
/// warp reads 32 adjacent floats of a row (one coalesced load) and its
/// kColumnLanes row lanes interleave, then the lanes' sums are added in
/// shared memory, always in the same order (deterministic). Launch with
/// ColumnSumGrid(outer, inner) blocks of dim3(kColumnTile, kColumnLanes).
constexpr int kColumnTile = 32;
constexpr int kColumnLanes = 32;

inline dim3 ColumnSumGrid(int64_t outer, int64_t inner) {
  return dim3(static_cast<unsigned>((inner + kColumnTile - 1) / kColumnTile),
              static_cast<unsigned>(outer < 65535 ? outer : 65535));
}

template <class T>
__global__ void ColumnSumKernel(const T* x, T* out, int64_t outer, int64_t r, int64_t inner, float divisor) {
  __shared__ float lanes[kColumnLanes][kColumnTile + 1];
  const int64_t k = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    float sum = 0.f;
    if (k < inner) {
      const T* p = x + o * r * inner + k;
#pragma unroll 4
      for (int64_t j = threadIdx.y; j < r; j += kColumnLanes) sum += static_cast<float>(p[j * inner]);
    }
    lanes[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0) {
      float total = 0.f;
      for (int lane = 0; lane < kColumnLanes; ++lane) total += lanes[lane][threadIdx.x];
      if (k < inner) out[o * inner + k] = static_cast<T>(total / divisor);
    }
    __syncthreads();  // lanes is reused by the next o
  }
}

}  // namespace actorflow
