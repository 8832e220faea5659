// MatMul: [m,k] x [k,n] -> [m,n], with transpose_a / transpose_b.
//
// float and double call OpenBLAS (single-threaded: BLAS threads would be a
// second pool); large products are split into row (or column) blocks run in
// parallel on the compute pool. int32/int64 use Eigen.
#include <cblas.h>

#include "core/tensor_eigen.hpp"
#include "devices/compute_pool.hpp"
#include "ops/op_kernel.hpp"
#include "ops/op_registry.hpp"
#include "ops/shape_inference.hpp"

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

template <class T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, TA, TB, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("transpose_a", &ta_));
    c->SetStatus(c->GetAttr("transpose_b", &tb_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    AF_REQUIRES(ctx, a.dims() == 2, errors::InvalidArgument("In[0] is not a matrix: shape ", a.shape().DebugString()));
    AF_REQUIRES(ctx, b.dims() == 2, errors::InvalidArgument("In[1] is not a matrix: shape ", b.shape().DebugString()));
    const int64_t m = a.dim_size(ta_ ? 1 : 0), k = a.dim_size(ta_ ? 0 : 1);
    const int64_t kb = b.dim_size(tb_ ? 1 : 0), n = b.dim_size(tb_ ? 0 : 1);
    AF_REQUIRES(ctx, k == kb,
                errors::InvalidArgument("Matrix size-incompatible: In[0]: ", a.shape().DebugString(), ", In[1]: ",
                                        b.shape().DebugString(), ta_ ? " (transpose_a)" : "",
                                        tb_ ? " (transpose_b)" : ""));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{m, n}, &out));
    if (m == 0 || n == 0) return;
    switch (a.dtype()) {
      case DT_FLOAT: Blas<float>(ctx, a, b, out, m, n, k); break;
      case DT_DOUBLE: Blas<double>(ctx, a, b, out, m, n, k); break;
      case DT_INT32: EigenProduct<int32_t>(a, b, out); break;
      case DT_INT64: EigenProduct<int64_t>(a, b, out); break;
      default: ctx->SetStatus(errors::Unimplemented("MatMul on ", DataTypeString(a.dtype())));
    }
  }

 private:
  template <class T>
  void Blas(OpKernelContext* ctx, const Tensor& a, const Tensor& b, Tensor* out, int64_t m, int64_t n,
            int64_t k) const {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out->data<T>();
    if (k == 0) {
      std::fill(pc, pc + m * n, T(0));
      return;
    }
    const int64_t lda = a.dim_size(1), ldb = b.dim_size(1);
    ComputePool* pool = ctx->device()->compute_pool();
    const int64_t cost_per_row = 2 * n * k;  // flops of one row of the product
    if (m >= n || m >= 4 * pool->NumThreads()) {
      pool->ParallelFor(m, cost_per_row, [&](int64_t r0, int64_t r1) {
        const T* a_blk = ta_ ? pa + r0 : pa + r0 * lda;
        Gemm<T>(ta_, tb_, r1 - r0, n, k, a_blk, lda, pb, ldb, pc + r0 * n, n);
      });
    } else {  // few rows: split the columns instead
      pool->ParallelFor(n, 2 * m * k, [&](int64_t c0, int64_t c1) {
        const T* b_blk = tb_ ? pb + c0 * ldb : pb + c0;
        Gemm<T>(ta_, tb_, m, c1 - c0, k, pa, lda, b_blk, ldb, pc + c0, n);
      });
    }
  }

  template <class T>
  void EigenProduct(const Tensor& a, const Tensor& b, Tensor* out) const {
    auto A = MatrixView<T>(a, a.dim_size(0), a.dim_size(1));
    auto B = MatrixView<T>(b, b.dim_size(0), b.dim_size(1));
    auto C = MatrixView<T>(*out, out->dim_size(0), out->dim_size(1));
    if (!ta_ && !tb_) C.noalias() = A * B;
    else if (ta_ && !tb_) C.noalias() = A.transpose() * B;
    else if (!ta_ && tb_) C.noalias() = A * B.transpose();
    else C.noalias() = A.transpose() * B.transpose();
  }

  bool ta_ = false, tb_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("MatMul").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}),
                   MatMulOp);

}  // namespace
}  // namespace actorflow
