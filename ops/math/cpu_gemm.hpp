// The float32 GEMM behind the CPU's MatMul: Eigen's, or oneDNN's sgemm
// (Debian's libdnnl, opened with dlopen when the machine has it: nothing is
// linked, and without it everything runs on Eigen), chosen per shape by
// measurement.
//
// Measured on this project's 2-core machine (one thread, GFLOP/s): oneDNN
// 1.5-1.8x Eigen on the MLP's shapes (64x784x256: 212 vs 142), but 0.4x on
// others (256x256x784 with B transposed): neither wins everywhere, so the
// first product of each shape (m, n, k, transposes) in a process times both
// on scratch buffers and keeps the faster, oneDNN only by a clear margin.
// The choice is process-wide, so every MatMul of a shape computes the same
// bits for the rest of the process; it is not reproducible across processes
// (two runs, two workers) when the two are close: ACTORFLOW_CPU_GEMM=eigen
// (or =onednn) makes results bit-reproducible.
//
// oneDNN runs single-threaded on the calling thread (its OpenMP team is set to
// one thread there): the MatMul kernel shards products over the compute pool
// itself, as it does Eigen's.
//
// ACTORFLOW_CPU_GEMM=eigen or =onednn fixes the choice (benchmarks, tests);
// unset or "auto" measures. SetPolicy does the same from code.
#pragma once

#include <cstdint>
#include <functional>

namespace actorflow {
namespace cpu_gemm {

enum class Impl { kEigen, kOneDnn };

/// Products below this many flops (a few microseconds) stay Eigen's without
/// asking: oneDNN's per-call dispatch costs about as much as their work.
constexpr double kMinFlops = 1 << 20;
enum class Policy { kAuto, kEigen, kOneDnn };

/// Overrides ACTORFLOW_CPU_GEMM for products whose shape was not chosen yet
/// (and forgets the choices made: the next product of each shape chooses again).
void SetPolicy(Policy policy);

/// Whether oneDNN's sgemm could be loaded (once per process).
bool OneDnnAvailable();

/// C = op(A) * op(B) for row-major float32 blocks: op(A) is m x k (A is k x m
/// when ta, leading dimension lda), op(B) is k x n (n x k when tb), C is m x n
/// with leading dimension ldc. Single-threaded, on the calling thread. Only
/// after OneDnnAvailable() said true. False when oneDNN did not compute it
/// (its error, no single-threaded team on this thread, the process exiting):
/// the caller computes the block itself.
bool OneDnnSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc);

/// The implementation for products of this shape. The first call for a shape
/// (with the policy kAuto and oneDNN loaded) times `run(impl, a, b, c)` for
/// both implementations on scratch operands of the shape, single-threaded;
/// later calls answer from the process-wide table. Thread-safe.
using Runner = std::function<void(Impl impl, const float* a, const float* b, float* c)>;
Impl Choose(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const Runner& run);
/// The choice already made for this shape, if any (no Runner to build: the
/// hot path).
bool Chosen(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Impl* impl);

}  // namespace cpu_gemm
}  // namespace actorflow
