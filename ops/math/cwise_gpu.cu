// Element-wise binary ops on a GPU, float32: Add, AddV2, Sub, Mul, RealDiv,
// Div, Maximum, Minimum, Pow, and the activations' gradients (ReluGrad,
// SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad) with the CPU
// kernels' numpy broadcasting (ops/math/bcast.hpp). The unary ops (Relu
// among them) are in cwise_unary_gpu.cu.
//
// Broadcasting uses BCast's collapsed dims: each output element finds its two
// inputs' offsets from its index and the per-input strides (0 along a
// broadcast dim). Same-shape inputs take a plain loop. An output may reuse the
// buffer of an input of its size that nothing else holds (each element is read
// before it is written, by the same thread).
#include "actorflow/ops/gpu/elementwise.cuh"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/math/bcast.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {
namespace {

struct AddF {
  __device__ float operator()(float x, float y) const { return x + y; }
};
struct SubF {
  __device__ float operator()(float x, float y) const { return x - y; }
};
struct MulF {
  __device__ float operator()(float x, float y) const { return x * y; }
};
struct DivF {
  __device__ float operator()(float x, float y) const { return x / y; }
};
struct ReluGradF {  // (gradients, features)
  __device__ float operator()(float g, float f) const { return f > 0.f ? g : 0.f; }
};
struct MaximumF {
  __device__ float operator()(float x, float y) const { return x > y ? x : y; }
};
struct MinimumF {
  __device__ float operator()(float x, float y) const { return x < y ? x : y; }
};
struct PowF {
  __device__ float operator()(float x, float y) const { return powf(x, y); }
};
// The activations' gradients, of (y, dy) with y the activation's output.
struct SigmoidGradF {
  __device__ float operator()(float y, float dy) const { return dy * y * (1.f - y); }
};
struct TanhGradF {
  __device__ float operator()(float y, float dy) const { return dy * (1.f - y * y); }
};
struct SqrtGradF {
  __device__ float operator()(float y, float dy) const { return dy * 0.5f / y; }
};
struct RsqrtGradF {
  __device__ float operator()(float y, float dy) const { return dy * -0.5f * y * y * y; }
};
struct ReciprocalGradF {
  __device__ float operator()(float y, float dy) const { return -dy * y * y; }
};

constexpr int kMaxRank = 8;  // collapsed dims of a broadcast; more is Unimplemented

struct BroadcastIndex {
  int rank;
  int64_t dims[kMaxRank];
  int64_t a_strides[kMaxRank];
  int64_t b_strides[kMaxRank];
};

template <class F>
__global__ void BinaryBroadcast(const float* a, const float* b, float* out, int64_t n, BroadcastIndex ix, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t rest = i, ao = 0, bo = 0;
    for (int d = ix.rank - 1; d >= 0; --d) {
      const int64_t k = rest % ix.dims[d];
      rest /= ix.dims[d];
      ao += k * ix.a_strides[d];
      bo += k * ix.b_strides[d];
    }
    out[i] = f(a[ao], b[bo]);
  }
}

template <class F>
class GpuBinaryOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    BCast bc(a.shape(), b.shape());
    AF_REQUIRES(ctx, bc.valid(), bc.IncompatibleError(a.shape(), b.shape()));
    const int rank = static_cast<int>(bc.dims().size());
    AF_REQUIRES(ctx, rank <= kMaxRank,
                errors::Unimplemented(type_string(), " on the GPU broadcasts at most ", kMaxRank,
                                      " collapsed dimensions: ", a.shape().DebugString(), " vs. ",
                                      b.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0, 1}, 0, bc.output_shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out->data<float>();
    if (bc.same_shape()) {
      LaunchMap2(gpu->compute_stream(), pa, pb, po, n, F());
    } else {
      BroadcastIndex ix{};
      ix.rank = rank;
      for (int d = 0; d < rank; ++d) {
        ix.dims[d] = bc.dims()[d];
        ix.a_strides[d] = bc.a_strides()[d];
        ix.b_strides[d] = bc.b_strides()[d];
      }
      BinaryBroadcast<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(pa, pb, po, n, ix, F());
    }
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};

AF_REGISTER_KERNEL(KernelDefBuilder("Add").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<AddF>);
AF_REGISTER_KERNEL(KernelDefBuilder("AddV2").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<AddF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sub").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<SubF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Mul").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<MulF>);
AF_REGISTER_KERNEL(KernelDefBuilder("RealDiv").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<DivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Div").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<DivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("ReluGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<ReluGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Maximum").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<MaximumF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Minimum").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<MinimumF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Pow").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<PowF>);
AF_REGISTER_KERNEL(KernelDefBuilder("SigmoidGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"),
                   GpuBinaryOp<SigmoidGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("TanhGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<TanhGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("SqrtGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuBinaryOp<SqrtGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("RsqrtGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"),
                   GpuBinaryOp<RsqrtGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("ReciprocalGrad").Device(DEVICE_GPU).TypeConstraint<float>("T"),
                   GpuBinaryOp<ReciprocalGradF>);

}  // namespace
}  // namespace actorflow
