// MatMul: [m,k] x [k,n] -> [m,n], with transpose_a / transpose_b.
//
// Eigen's GEMM (single-threaded: its own threads would be a second pool) on
// row blocks of the product, or column blocks when it has few rows, run in
// parallel on the compute pool. Measured here, Eigen's GEMM built for the
// machine's CPU beats OpenBLAS (bench/bench_matmul.cpp prints both).
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
      case DT_FLOAT: Product<float>(ctx, a, b, out, m, n, k); break;
      case DT_DOUBLE: Product<double>(ctx, a, b, out, m, n, k); break;
      case DT_INT32: Product<int32_t>(ctx, a, b, out, m, n, k); break;
      case DT_INT64: Product<int64_t>(ctx, a, b, out, m, n, k); break;
      default: ctx->SetStatus(errors::Unimplemented("MatMul on ", DataTypeString(a.dtype())));
    }
  }

 private:
  // C[rows] = op(A)[rows] * op(B), or C[:, cols] = op(A) * op(B)[:, cols], as
  // single-threaded Eigen tensor contractions; the transposes are which
  // dimensions contract, so one instantiation per dtype and split covers all.
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
      return;
    }
    const Eigen::array<Eigen::IndexPair<Idx>, 1> dims = {Eigen::IndexPair<Idx>(ta_ ? 0 : 1, tb_ ? 1 : 0)};
    auto rows = [&](int64_t r0, int64_t r1) {
      const Eigen::array<Idx, 2> off = ta_ ? Eigen::array<Idx, 2>{0, r0} : Eigen::array<Idx, 2>{r0, 0};
      const Eigen::array<Idx, 2> ext = ta_ ? Eigen::array<Idx, 2>{k, r1 - r0} : Eigen::array<Idx, 2>{r1 - r0, k};
      Out Cb(out->data<T>() + r0 * n, r1 - r0, n);
      Cb = A.slice(off, ext).contract(B, dims);
    };
    auto cols = [&](int64_t c0, int64_t c1) {
      const Eigen::array<Idx, 2> off = tb_ ? Eigen::array<Idx, 2>{c0, 0} : Eigen::array<Idx, 2>{0, c0};
      const Eigen::array<Idx, 2> ext = tb_ ? Eigen::array<Idx, 2>{c1 - c0, k} : Eigen::array<Idx, 2>{k, c1 - c0};
      C.slice(Eigen::array<Idx, 2>{0, c0}, Eigen::array<Idx, 2>{m, c1 - c0}) = A.contract(B.slice(off, ext), dims);
    };
    ComputePool* pool = ctx->device()->compute_pool();
    if (m >= n || m >= 4 * pool->MaxParallelism()) pool->For(m, 2 * n * k, rows);
    else pool->For(n, 2 * m * k, cols);
  }

  bool ta_ = false, tb_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("MatMul").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}),
                   MatMulOp);

}  // namespace
}  // namespace actorflow
