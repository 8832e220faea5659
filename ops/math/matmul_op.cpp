// MatMul: [m,k] x [k,n] -> [m,n], with transpose_a / transpose_b; and
// _FusedMatMul, TensorFlow's MatMul + BiasAdd [+ activation] in one kernel
// (what graph/remapper.hpp fuses on CPUs; grappler's remapper makes it too).
//
// An asynchronous kernel, by size:
//  - small products are computed at once, on the device actor's thread;
//  - medium ones run as one pool job: Eigen's dense GEMM (integers: tensor
//    contractions) on row (or column) blocks, sharded over the pool from
//    kShardFlops on;
//  - large float/double ones run Eigen's parallel contraction asynchronously
//    on the compute pool (an Eigen::ThreadPoolInterface over it): its tasks
//    share packed blocks, and no thread waits for another.
// Float32 blocks use Eigen's or oneDNN's GEMM, whichever measured faster for
// the shape (ops/math/cpu_gemm.hpp); measured here, Eigen built for the
// machine's CPU beats OpenBLAS (bench/bench_matmul.cpp prints all three).
// int32 and int64 products wrap in two's complement: they are computed on the
// tensors' elements viewed as uint32 / uint64.
//
// _FusedMatMul (float32) adds the bias, then applies the activation, to each
// block of the product as soon as the block is computed
// (ops/math/fused_epilogue.hpp): no second and third pass over the output,
// no hand-off to the pool between them.
#define EIGEN_USE_THREADS
#include <Eigen/Dense>
#include <type_traits>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/math/cpu_gemm.hpp"
#include "actorflow/ops/math/fused_epilogue.hpp"
#include "actorflow/ops/math/math_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("MatMul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(shape_fns::MatMul)
    .Doc("Matrix product of a and b, each optionally transposed.");

AF_REGISTER_OP("_FusedMatMul")
    .Input("a: T")
    .Input("b: T")
    .Input("args: num_args * T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {bfloat16, float}")
    .Attr("num_args: int >= 0")
    .Attr("fused_ops: list(string) = []")
    .Attr("epsilon: float = 0.0001")
    .Attr("leakyrelu_alpha: float = 0.2")
    .SetShapeFn(shape_fns::MatMul)
    .Doc("MatMul followed by fused_ops in order, each taking the previous result as its first input: "
         "[\"BiasAdd\"], optionally followed by \"Relu\", \"Relu6\", \"LeakyRelu\" or \"Elu\"; the bias is args[0]. "
         "Made by graph optimization (graph/remapper.hpp), not written by hand.");

// Eigen's thread pool interface over the process's compute pool.
class EigenPool final : public Eigen::ThreadPoolInterface {
 public:
  explicit EigenPool(ComputePool* pool) : pool_(pool) {}
  void Schedule(std::function<void()> fn) override { pool_->Schedule(std::move(fn)); }
  int NumThreads() const override { return pool_->MaxParallelism(); }
  int CurrentThreadId() const override { return -1; }

 private:
  ComputePool* pool_;
};

constexpr double kInlineFlops = 1 << 20;  // ~10 us: cheaper than a pool hop
// From here on (~70 us on one core) the product is split over the pool's
// threads: waking a second one costs a few microseconds. Measured here on 2
// threads: 64x784x256 (the MLP's first layer at batch 64) 247 -> 125 us,
// 256^3 110 -> 160-210 GFLOP/s.
constexpr double kShardFlops = 1 << 23;
// Eigen schedules many small tasks through the pool; measured here, that pays
// only for the largest products (it won at 2048^3, lost at 1024^3).
constexpr double kEigenParallelFlops = 4.0e9;

class MatMulOp : public AsyncOpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* c)
      : AsyncOpKernel(c),
        eigen_pool_(c->device()->compute_pool()),
        eigen_device_(&eigen_pool_, c->device()->compute_pool()->MaxParallelism()) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("transpose_a", &ta_));
    c->SetStatus(c->GetAttr("transpose_b", &tb_));
    if (type_string() == "_FusedMatMul") {
      fused_ = true;
      c->SetStatus(epilogue_.Read(*c));
    }
  }

  // Small products (and bad ranks, and empty products: ComputeSync reports
  // or fills) run on the executor's thread.
  bool RunsInline(const Tensor* inputs, int num_inputs) const override {
    return num_inputs < 2 || Flops(inputs[0], inputs[1]) < kInlineFlops;
  }
  void ComputeInline(OpKernelContext* ctx) override { ComputeSync(ctx); }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const double flops = Flops(a, b);
    ComputePool* pool = ctx->device()->compute_pool();
    if (flops < kInlineFlops) {
      ComputeSync(ctx);
      done();
      return;
    }
    const bool eigen_parallel = (a.dtype() == DT_FLOAT || a.dtype() == DT_DOUBLE) && pool->MaxParallelism() > 1 &&
                                flops >= kEigenParallelFlops;
    pool->Schedule([this, ctx, done = std::move(done), eigen_parallel]() mutable {
      try {
        // Eigen calls its copy of done; ours stays for when it threw before starting.
        if (eigen_parallel && StartParallel(ctx, DoneCallback(done))) return;
        ComputeSync(ctx);
      } catch (const std::bad_alloc&) {
        ctx->SetStatus(errors::ResourceExhausted("out of memory in MatMul"));
      } catch (...) {
        ctx->SetStatus(errors::Internal("MatMul threw"));
      }
      done();
    });
  }

  void ComputeSync(OpKernelContext* ctx) {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    int64_t m, k, n;
    AF_REQUIRES_OK(ctx, MatMulDims(a, b, ta_, tb_, &m, &k, &n));
    AF_REQUIRES_OK(ctx, CheckBias(ctx, n));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{m, n}, &out));
    if (m == 0 || n == 0) return;
    switch (a.dtype()) {
      case DT_FLOAT: Product<float>(ctx, a, b, out, m, n, k); break;
      case DT_DOUBLE: Product<double>(ctx, a, b, out, m, n, k); break;
      // Integers multiply and add in the unsigned type (the same bits as
      // two's complement, without signed overflow): products wrap.
      case DT_INT32: Product<uint32_t>(ctx, a, b, out, m, n, k); break;
      case DT_INT64: Product<uint64_t>(ctx, a, b, out, m, n, k); break;
      default: ctx->SetStatus(errors::Unimplemented("MatMul on ", DataTypeString(a.dtype())));
    }
  }

 private:
  // A _FusedMatMul's bias: a vector of the product's n columns.
  Status CheckBias(OpKernelContext* ctx, int64_t n) const {
    return fused_ ? FusedEpilogue::CheckBias(ctx->input(2), n) : Status::OK();
  }

  double Flops(const Tensor& a, const Tensor& b) const {
    if (a.dims() != 2 || b.dims() != 2) return 0;
    return 2.0 * static_cast<double>(a.NumElements()) * static_cast<double>(b.dim_size(tb_ ? 0 : 1));
  }

  // Validates, allocates and starts Eigen's asynchronous parallel contraction;
  // false (with a status set, or nothing started) when the caller must finish.
  bool StartParallel(OpKernelContext* ctx, DoneCallback done) {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const int64_t m = a.dim_size(ta_ ? 1 : 0), k = a.dim_size(ta_ ? 0 : 1);
    const int64_t kb = b.dim_size(tb_ ? 1 : 0), n = b.dim_size(tb_ ? 0 : 1);
    // Eigen returns early for empty products without calling back.
    if (k != kb || m == 0 || n == 0 || k == 0) return false;  // ComputeSync reports the error or fills zeros
    Tensor* out;
    Status s = CheckBias(ctx, n);
    if (s.ok()) s = ctx->allocate_output(0, TensorShape{m, n}, &out);
    if (!s.ok()) {
      ctx->SetStatus(s);
      return false;
    }
    if (fused_) {  // float32 only: the bias and activation over the whole product once it is done
      const float* bias = ctx->input(2).data<float>();
      ComputePool* pool = ctx->device()->compute_pool();
      done = [this, pool, bias, c = out->data<float>(), m, n, done = std::move(done)] {
        pool->For(m, 2 * n, [&](int64_t r0, int64_t r1) { epilogue_.Apply(bias, c, n, r0, r1, 0, n); });
        done();
      };
    }
    if (a.dtype() == DT_FLOAT) StartParallel<float>(a, b, out, std::move(done));
    else StartParallel<double>(a, b, out, std::move(done));
    return true;
  }

  template <class T>
  void StartParallel(const Tensor& a, const Tensor& b, Tensor* out, DoneCallback done) {
    using Idx = Eigen::DenseIndex;
    using In = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Idx>>;
    using Out = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Idx>>;
    In A(a.data<T>(), a.dim_size(0), a.dim_size(1)), B(b.data<T>(), b.dim_size(0), b.dim_size(1));
    Out C(out->data<T>(), out->dim_size(0), out->dim_size(1));
    const Eigen::array<Eigen::IndexPair<Idx>, 1> dims = {Eigen::IndexPair<Idx>(ta_ ? 0 : 1, tb_ ? 1 : 0)};
    C.device(eigen_device_, std::move(done)) = A.contract(B, dims);
  }

  // C[r0:r1, c0:c1] = op(A)[r0:r1, :] * op(B)[:, c0:c1] by Eigen's dense GEMM,
  // for op(A) m x k and op(B) k x n (row-major; A is k x m when ta_, B n x k when tb_).
  template <class T>
  void DenseBlock(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k, int64_t r0, int64_t r1, int64_t c0,
                  int64_t c1) const {
    using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const M> A(a, ta_ ? k : m, ta_ ? m : k), B(b, tb_ ? n : k, tb_ ? k : n);
    Eigen::Map<M> C(c, m, n);
    auto Cb = C.block(r0, c0, r1 - r0, c1 - c0);
    if (!ta_ && !tb_) Cb.noalias() = A.middleRows(r0, r1 - r0) * B.middleCols(c0, c1 - c0);
    else if (ta_ && !tb_) Cb.noalias() = A.middleCols(r0, r1 - r0).transpose() * B.middleCols(c0, c1 - c0);
    else if (!ta_ && tb_) Cb.noalias() = A.middleRows(r0, r1 - r0) * B.middleRows(c0, c1 - c0).transpose();
    else Cb.noalias() = A.middleCols(r0, r1 - r0).transpose() * B.middleRows(c0, c1 - c0).transpose();
  }

  // The same block of a float32 product by `impl` (ops/math/cpu_gemm.hpp).
  void FloatBlock(cpu_gemm::Impl impl, const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                  int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    if (impl == cpu_gemm::Impl::kOneDnn) {
      // Rows r0.. of op(A): rows of A, or columns of A^T; columns c0.. of
      // op(B): columns of B, or rows of B^T.
      const float* ab = ta_ ? a + r0 : a + r0 * k;
      const float* bb = tb_ ? b + c0 * k : b + c0;
      if (cpu_gemm::OneDnnSgemm(ta_, tb_, r1 - r0, c1 - c0, k, ab, ta_ ? m : k, bb, tb_ ? k : n, c + r0 * n + c0, n))
        return;
    }
    DenseBlock<float>(a, b, c, m, n, k, r0, r1, c0, c1);
  }

  // C[rows] = op(A)[rows] * op(B), or C[:, cols] = op(A) * op(B)[:, cols]:
  // floats by DenseBlock, integers as single-threaded Eigen tensor
  // contractions (the transposes are which dimensions contract, so one
  // instantiation per dtype and split covers all).
  template <class T>
  void Product(OpKernelContext* ctx, const Tensor& a, const Tensor& b, Tensor* out, int64_t m, int64_t n,
               int64_t k) const {
    using Idx = Eigen::DenseIndex;
    using In = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Idx>>;
    using Out = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Idx>>;
    In A(a.data<T>(), a.dim_size(0), a.dim_size(1)), B(b.data<T>(), b.dim_size(0), b.dim_size(1));
    Out C(out->data<T>(), m, n);
    if (k == 0) {
      C.setZero();
      if constexpr (std::is_same_v<T, float>)
        if (fused_) epilogue_.Apply(ctx->input(2).data<float>(), out->data<float>(), n, 0, m, 0, n);
      return;
    }
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    ComputePool* pool = ctx->device()->compute_pool();
    if constexpr (std::is_floating_point_v<T>) {
      // Floats: Eigen's dense GEMM (or oneDNN's, for float32 shapes where it
      // measured faster), on row (or column) blocks. Measured here against
      // the tensor contraction: as fast or faster at every size (the MLP's
      // transposed-input gradient 201 -> 185 us), and small products keep
      // their packing buffers on the stack instead of the heap (32x64x10:
      // 1.7 -> 1.3 us in a training step).
      auto sharded = [&](auto block) {  // block(r0, r1, c0, c1)
        auto rows = [&](int64_t r0, int64_t r1) { block(r0, r1, 0, n); };
        auto cols = [&](int64_t c0, int64_t c1) { block(0, m, c0, c1); };
        if (flops < kShardFlops) rows(0, m);
        else if (m >= n || m >= 4 * pool->MaxParallelism()) pool->For(m, 2 * n * k, rows);
        else pool->For(n, 2 * m * k, cols);
      };
      if constexpr (std::is_same_v<T, float>) {
        cpu_gemm::Impl impl = cpu_gemm::Impl::kEigen;
        if (flops >= cpu_gemm::kMinFlops && !cpu_gemm::Chosen(ta_, tb_, m, n, k, &impl))
          impl = cpu_gemm::Choose(ta_, tb_, m, n, k, [&](cpu_gemm::Impl i, const float* pa, const float* pb, float* pc) {
            FloatBlock(i, pa, pb, pc, m, n, k, 0, m, 0, n);
          });
        const float* bias = fused_ ? ctx->input(2).data<float>() : nullptr;
        sharded([&, impl, bias](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
          FloatBlock(impl, a.data<float>(), b.data<float>(), out->data<float>(), m, n, k, r0, r1, c0, c1);
          if (bias) epilogue_.Apply(bias, out->data<float>(), n, r0, r1, c0, c1);
        });
      } else {
        sharded([&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
          DenseBlock<T>(a.data<T>(), b.data<T>(), out->data<T>(), m, n, k, r0, r1, c0, c1);
        });
      }
      return;
    }
    const Eigen::array<Eigen::IndexPair<Idx>, 1> dims = {Eigen::IndexPair<Idx>(ta_ ? 0 : 1, tb_ ? 1 : 0)};
    // Contiguous operands as plain maps: Eigen packs them much faster than
    // slices (measured: 1.4x at 256x256).
    auto rows = [&](int64_t r0, int64_t r1) {
      Out Cb(out->data<T>() + r0 * n, r1 - r0, n);
      if (r0 == 0 && r1 == m) {
        C = A.contract(B, dims);
        return;
      }
      if (!ta_) {  // rows of A are contiguous
        Cb = In(a.data<T>() + r0 * k, r1 - r0, k).contract(B, dims);
        return;
      }
      const Eigen::array<Idx, 2> off = ta_ ? Eigen::array<Idx, 2>{0, r0} : Eigen::array<Idx, 2>{r0, 0};
      const Eigen::array<Idx, 2> ext = ta_ ? Eigen::array<Idx, 2>{k, r1 - r0} : Eigen::array<Idx, 2>{r1 - r0, k};
      Cb = A.slice(off, ext).contract(B, dims);
    };
    auto cols = [&](int64_t c0, int64_t c1) {
      if (c0 == 0 && c1 == n) {
        C = A.contract(B, dims);
        return;
      }
      const Eigen::array<Idx, 2> off = tb_ ? Eigen::array<Idx, 2>{c0, 0} : Eigen::array<Idx, 2>{0, c0};
      const Eigen::array<Idx, 2> ext = tb_ ? Eigen::array<Idx, 2>{c1 - c0, k} : Eigen::array<Idx, 2>{k, c1 - c0};
      C.slice(Eigen::array<Idx, 2>{0, c0}, Eigen::array<Idx, 2>{m, c1 - c0}) = A.contract(B.slice(off, ext), dims);
    };
    if (flops < kShardFlops) rows(0, m);
    else if (m >= n || m >= 4 * pool->MaxParallelism()) pool->For(m, 2 * n * k, rows);
    else pool->For(n, 2 * m * k, cols);
  }

  bool ta_ = false, tb_ = false;
  bool fused_ = false;  // a _FusedMatMul: bias (input 2) and activation after the product
  FusedEpilogue epilogue_;
  EigenPool eigen_pool_;
  Eigen::ThreadPoolDevice eigen_device_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("MatMul").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}),
                   MatMulOp);
AF_REGISTER_KERNEL(KernelDefBuilder("_FusedMatMul").Device(DEVICE_CPU).TypeConstraint<float>("T"), MatMulOp);

}  // namespace
}  // namespace actorflow
