// Element-wise unary ops on a GPU, float32: Relu, Neg, Abs, Sign, Square, Exp, Log,
// Sqrt, Rsqrt, Reciprocal, Tanh, Sigmoid. The output may reuse the input's
// buffer when nothing else holds it (each element is read before it is
// written, by the same thread).
#include "actorflow/ops/gpu/elementwise.cuh"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {
namespace {

#define AF_GPU_UNARY(NAME, EXPR) \
  struct NAME {                  \
    __device__ float operator()(float x) const { return EXPR; } \
  }

AF_GPU_UNARY(ReluF, x > 0.f ? x : 0.f);
AF_GPU_UNARY(NegF, -x);
AF_GPU_UNARY(AbsF, fabsf(x));
AF_GPU_UNARY(SignF, x > 0.f ? 1.f : x < 0.f ? -1.f : x);  // NaN stays NaN, -0 stays -0
AF_GPU_UNARY(SquareF, x * x);
AF_GPU_UNARY(ExpF, expf(x));
AF_GPU_UNARY(LogF, logf(x));
AF_GPU_UNARY(SqrtF, sqrtf(x));
AF_GPU_UNARY(RsqrtF, 1.f / sqrtf(x));
AF_GPU_UNARY(ReciprocalF, 1.f / x);
AF_GPU_UNARY(TanhF, tanhf(x));
AF_GPU_UNARY(SigmoidF, 1.f / (1.f + expf(-x)));

template <class F>
class GpuUnaryOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const int64_t n = x.NumElements();
    if (n == 0) return;
    LaunchMap1(gpu->compute_stream(), x.data<float>(), out->data<float>(), n, F());
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};

#define AF_REGISTER_GPU_UNARY(OP, F) \
  AF_REGISTER_KERNEL(KernelDefBuilder(OP).Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuUnaryOp<F>)

AF_REGISTER_GPU_UNARY("Relu", ReluF);
AF_REGISTER_GPU_UNARY("Neg", NegF);
AF_REGISTER_GPU_UNARY("Abs", AbsF);
AF_REGISTER_GPU_UNARY("Sign", SignF);
AF_REGISTER_GPU_UNARY("Square", SquareF);
AF_REGISTER_GPU_UNARY("Exp", ExpF);
AF_REGISTER_GPU_UNARY("Log", LogF);
AF_REGISTER_GPU_UNARY("Sqrt", SqrtF);
AF_REGISTER_GPU_UNARY("Rsqrt", RsqrtF);
AF_REGISTER_GPU_UNARY("Reciprocal", ReciprocalF);
AF_REGISTER_GPU_UNARY("Tanh", TanhF);
AF_REGISTER_GPU_UNARY("Sigmoid", SigmoidF);

}  // namespace
}  // namespace actorflow
