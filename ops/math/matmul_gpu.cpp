// MatMul on a GPU: cuBLAS SGEMM on the device's compute stream, float32.
//
// cuBLAS is column-major and our tensors row-major. A row-major [m, n] matrix
// is, byte for byte, its column-major transpose, so C = op(A) op(B) is
// computed as C^T = op(B)^T op(A)^T: SGEMM with the operands swapped, m and n
// swapped, and each operand's transpose flag kept. cuBLAS's default math mode
// is used (full float32; no TF32 tensor cores).
//
// The product goes through cuBLASLt with a plan kept per node: descriptors and
// the heuristic's algorithm for the last shape the node saw, so a step that
// repeats its shapes pays one cublasLtMatmul per product instead of
// cublasSgemm's lookup on every call (about 17 us of host time each: the
// launch cost that bounds small training steps). A shape the heuristic finds
// nothing for, or ACTORFLOW_GPU_GEMM=cublas, uses cublasSgemm.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "actorflow/devices/cuda/cublas_api.hpp"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/math/math_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {
namespace {

bool SgemmOnly() {
  static const bool only = [] {
    const char* v = std::getenv("ACTORFLOW_GPU_GEMM");
    return v != nullptr && std::strcmp(v, "cublas") == 0;
  }();
  return only;
}

// One shape's cuBLASLt plan. A kernel runs on its device actor's thread only,
// so its plan needs no lock.
class LtPlan {
 public:
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() { Reset(); }

  bool Matches(int64_t m, int64_t k, int64_t n) const { return api_ != nullptr && m == m_ && k == k_ && n == n_; }
  bool usable() const { return usable_; }

  /// Plans C[m, n] = op(A) op(B) (row-major; see the file's comment): OK with
  /// usable() false when cuBLASLt has no algorithm for it.
  Status Make(const CublasLtApi* api, cublasLtHandle_t handle, size_t workspace_bytes, int64_t m, int64_t k, int64_t n,
              bool ta, bool tb) {
    Reset();
    api_ = api;
    m_ = m;
    k_ = k;
    n_ = n;
    auto check = [&](cublasStatus_t s, const char* what) {
      return s == CUBLAS_STATUS_SUCCESS ? Status::OK()
                                        : errors::Internal(what, " failed (cuBLAS status ", static_cast<int>(s), ")");
    };
    AF_RETURN_IF_ERROR(check(api->desc_create(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"));
    // cuBLAS's A is our B, its B our A (C^T = op(B)^T op(A)^T).
    const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    AF_RETURN_IF_ERROR(check(api->desc_set(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)), "TRANSA"));
    AF_RETURN_IF_ERROR(check(api->desc_set(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)), "TRANSB"));
    // Column-major layouts as stored: rows, columns, leading dimension.
    const uint64_t a_rows = tb ? k : n, a_cols = tb ? n : k;  // our B
    const uint64_t b_rows = ta ? m : k, b_cols = ta ? k : m;  // our A
    AF_RETURN_IF_ERROR(check(api->layout_create(&a_, CUDA_R_32F, a_rows, a_cols, static_cast<int64_t>(a_rows)),
                             "cublasLtMatrixLayoutCreate"));
    AF_RETURN_IF_ERROR(check(api->layout_create(&b_, CUDA_R_32F, b_rows, b_cols, static_cast<int64_t>(b_rows)),
                             "cublasLtMatrixLayoutCreate"));
    AF_RETURN_IF_ERROR(check(api->layout_create(&c_, CUDA_R_32F, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n),
                             "cublasLtMatrixLayoutCreate"));
    cublasLtMatmulPreference_t pref = nullptr;
    AF_RETURN_IF_ERROR(check(api->pref_create(&pref), "cublasLtMatmulPreferenceCreate"));
    const uint64_t ws = workspace_bytes;
    cublasStatus_t s = api->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    cublasLtMatmulHeuristicResult_t result;
    std::memset(&result, 0, sizeof(result));
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) s = api->heuristic(handle, desc_, a_, b_, c_, c_, pref, 1, &result, &found);
    api->pref_destroy(pref);
    usable_ = s == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
              result.workspaceSize <= workspace_bytes;
    if (usable_) algo_ = result.algo;
    return Status::OK();
  }

  cublasStatus_t Run(cublasLtHandle_t handle, const float* a, const float* b, float* c, void* workspace,
                     size_t workspace_bytes, cudaStream_t stream) const {
    const float alpha = 1.f, beta = 0.f;
    return api_->matmul(handle, desc_, &alpha, b, a_, a, b_, &beta, c, c_, c, c_, &algo_, workspace, workspace_bytes,
                        stream);
  }

 private:
  void Reset() {
    if (api_ == nullptr) return;
    if (a_) api_->layout_destroy(a_);
    if (b_) api_->layout_destroy(b_);
    if (c_) api_->layout_destroy(c_);
    if (desc_) api_->desc_destroy(desc_);
    a_ = b_ = c_ = nullptr;
    desc_ = nullptr;
    api_ = nullptr;
    usable_ = false;
  }

  const CublasLtApi* api_ = nullptr;
  int64_t m_ = -1, k_ = -1, n_ = -1;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;  // cuBLAS's A (our B), B (our A), C
  cublasLtMatmulAlgo_t algo_;
  bool usable_ = false;
};

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
    if (!SgemmOnly()) {
      const CublasLtApi* lt;
      cublasLtHandle_t lt_handle;
      void* workspace;
      size_t workspace_bytes;
      // Without cuBLASLt (not loaded, no memory for its workspace) or a plan
      // (a descriptor refused), the product goes to cublasSgemm below; a
      // shape whose planning failed stays on it.
      const bool have_lt = gpu->BlasLt(&lt, &lt_handle, &workspace, &workspace_bytes).ok();
      if (have_lt && !plan_.Matches(m, k, n))
        (void)plan_.Make(lt, lt_handle, workspace_bytes, m, k, n, ta_, tb_);  // failed: !usable()
      // The heuristic assumed operands aligned to 256 bytes (its default), as
      // the allocator's blocks are; a view at an offset goes to cublasSgemm.
      auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 256 == 0; };
      if (have_lt && plan_.usable() && aligned(a.raw_data()) && aligned(b.raw_data()) && aligned(out->raw_data())) {
        const cublasStatus_t s = plan_.Run(lt_handle, a.data<float>(), b.data<float>(), out->data<float>(), workspace,
                                           workspace_bytes, gpu->compute_stream());
        if (s == CUBLAS_STATUS_SUCCESS) return;
        // Refused before anything was enqueued: cublasSgemm below computes it.
      }
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
  LtPlan plan_;  // the last shape's; used on the device actor's thread only
};
AF_REGISTER_KERNEL(KernelDefBuilder("MatMul").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuMatMulOp);

}  // namespace
}  // namespace actorflow
