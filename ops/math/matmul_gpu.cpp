// MatMul on a GPU: cuBLAS SGEMM on the device's compute stream, float32.
//
// cuBLAS is column-major and our tensors row-major. A row-major [m, n] matrix
// is, byte for byte, its column-major transpose, so C = op(A) op(B) is
// computed as C^T = op(B)^T op(A)^T: SGEMM with the operands swapped, m and n
// swapped, and each operand's transpose flag kept. cuBLAS's default math mode
// is used (full float32; no TF32 tensor cores).
#include "devices/cuda/cublas_api.hpp"
#include "ops/gpu/gpu_kernel.hpp"
#include "ops/math/math_shapes.hpp"
#include "ops/op_kernel.hpp"

namespace actorflow {
namespace {

class GpuMatMulOp : public GpuOpKernel {
 public:
  explicit GpuMatMulOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    c->SetStatus(c->GetAttr("transpose_a", &ta_));
    c->SetStatus(c->GetAttr("transpose_b", &tb_));
  }

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    int64_t m, k, n;
    AF_REQUIRES_OK(ctx, MatMulDims(a, b, ta_, tb_, &m, &k, &n));
    constexpr int64_t kMaxDim = 0x7fffffff;  // cuBLAS takes int dimensions
    AF_REQUIRES(ctx, m <= kMaxDim && n <= kMaxDim && k <= kMaxDim,
                errors::InvalidArgument("MatMul dimensions over 2^31 on the GPU: ", a.shape().DebugString(), " x ",
                                        b.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{m, n}, &out));
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum: zeros
      AF_REQUIRES_OK(ctx, CudaStatus(cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu->compute_stream()),
                                     gpu->short_name() + ": zeroing the output of " + name()));
      return;
    }
    const CublasApi* blas;
    cublasHandle_t handle;
    AF_REQUIRES_OK(ctx, gpu->Blas(&blas, &handle));
    const float alpha = 1.f, beta = 0.f;
    const cublasStatus_t s =
        blas->sgemm(handle, tb_ ? CUBLAS_OP_T : CUBLAS_OP_N, ta_ ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
                    static_cast<int>(m), static_cast<int>(k), &alpha, b.data<float>(), static_cast<int>(tb_ ? k : n),
                    a.data<float>(), static_cast<int>(ta_ ? m : k), &beta, out->data<float>(), static_cast<int>(n));
    AF_REQUIRES(ctx, s == CUBLAS_STATUS_SUCCESS,
                errors::Internal("cublasSgemm of node '", name(), "' on ", gpu->short_name(), ": ",
                                 blas->status_string(s)));
  }

 private:
  bool ta_ = false, tb_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("MatMul").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuMatMulOp);

}  // namespace
}  // namespace actorflow
