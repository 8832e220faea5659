// Array ops of a training step on a GPU, float32: Fill, ZerosLike, OnesLike,
// Tile, AddN, and Cast to float32 (from a tensor in host memory: every other
// dtype lives there on a GPU, devices/cuda/gpu_device.hpp).
//
// Shapes, multiples and dims are int32/int64 tensors in host memory, read at
// launch. Cast converts on the host into pinned staging and enqueues the copy
// to the device: the conversion of a batch of uint8 images or int64 counts to
// float32 costs one copy, and the step never waits for it.
#include <cstdint>

#include "actorflow/devices/pool_allocator.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {
namespace {

__global__ void FillFromDevice(float* out, const float* value, int64_t n) {
  const float v = *value;
  AF_GPU_GRID_STRIDE(i, n) out[i] = v;
}

__global__ void FillConstant(float* out, float value, int64_t n) { AF_GPU_GRID_STRIDE(i, n) out[i] = value; }

constexpr int kMaxTileRank = 8;

struct TileIndex {
  int rank;
  int64_t out_dims[kMaxTileRank];
  int64_t in_dims[kMaxTileRank];
  int64_t in_strides[kMaxTileRank];
};

__global__ void TileKernel(const float* in, float* out, int64_t n, TileIndex ix) {
  AF_GPU_GRID_STRIDE(i, n) {
    int64_t rest = i, offset = 0;
    for (int d = ix.rank - 1; d >= 0; --d) {
      const int64_t k = rest % ix.out_dims[d];
      rest /= ix.out_dims[d];
      offset += (k % ix.in_dims[d]) * ix.in_strides[d];
    }
    out[i] = in[offset];
  }
}

constexpr int kAddNPerLaunch = 8;
struct AddNInputs {
  const float* in[kAddNPerLaunch];
  int count;
};

// out = (accumulate ? out : 0) + the inputs.
__global__ void AddNKernel(float* out, AddNInputs ins, bool accumulate, int64_t n) {
  AF_GPU_GRID_STRIDE(i, n) {
    float sum = accumulate ? out[i] : 0.f;
    for (int k = 0; k < ins.count; ++k) sum += ins.in[k][i];
    out[i] = sum;
  }
}

class GpuFillOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& value = ctx->input(1);
    TensorShape shape;
    AF_REQUIRES_OK(ctx, FillOutputShape(ctx->input(0), value, &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    FillFromDevice<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(out->data<float>(), value.data<float>(), n);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Fill").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuFillOp);

template <int kValue>
class GpuConstantLikeOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    if (kValue == 0) {
      AF_REQUIRES_OK(ctx, CudaStatus(cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu->compute_stream()),
                                     gpu->short_name() + ": zeroing the output of " + name()));
      return;
    }
    FillConstant<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(out->data<float>(),
                                                                          static_cast<float>(kValue), n);
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ZerosLike").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuConstantLikeOp<0>);
AF_REGISTER_KERNEL(KernelDefBuilder("OnesLike").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuConstantLikeOp<1>);

class GpuTileOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& in = ctx->input(0);
    AF_REQUIRES(ctx, in.dims() <= kMaxTileRank,
                errors::Unimplemented("Tile on the GPU takes at most ", kMaxTileRank, " dimensions, got ",
                                      in.shape().DebugString()));
    std::vector<int64_t> out_dims;
    bool identity;
    AF_REQUIRES_OK(ctx, TileOutputDims(in, ctx->input(1), &out_dims, &identity));
    if (identity) {
      ctx->set_output(0, in);
      return;
    }
    TensorShape out_shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(out_dims, &out_shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    if (in.NumElements() == 1) {  // a scalar's gradient tiled over a batch: a fill
      FillFromDevice<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(out->data<float>(), in.data<float>(),
                                                                              n);
    } else {
      TileIndex ix{};
      ix.rank = in.dims();
      int64_t stride = 1;
      for (int d = in.dims() - 1; d >= 0; --d) {
        ix.out_dims[d] = out_dims[d];
        ix.in_dims[d] = in.dim_size(d);
        ix.in_strides[d] = stride;
        stride *= in.dim_size(d);
      }
      TileKernel<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(in.data<float>(), out->data<float>(), n, ix);
    }
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Tile").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuTileOp);

class GpuAddNOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < ctx->num_inputs(); ++i)
      AF_REQUIRES(ctx, ctx->input(i).shape() == first.shape(),
                  errors::InvalidArgument("Inputs to operation ", name(), " of type AddN must have the same size "
                                          "and shape.  Input 0: ", first.shape().DebugString(), " != input ", i,
                                          ": ", ctx->input(i).shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, first.shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    for (int start = 0; start < ctx->num_inputs(); start += kAddNPerLaunch) {
      AddNInputs ins{};
      ins.count = 0;
      for (int i = start; i < ctx->num_inputs() && ins.count < kAddNPerLaunch; ++i)
        ins.in[ins.count++] = ctx->input(i).data<float>();
      AddNKernel<<<GpuBlocks(n), kGpuThreads, 0, gpu->compute_stream()>>>(out->data<float>(), ins, start > 0, n);
    }
    AF_REQUIRES_OK(ctx, LaunchStatus(*this));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("AddN").Device(DEVICE_GPU).TypeConstraint<float>("T"), GpuAddNOp);

template <class T>
void ConvertToFloat(const Tensor& in, float* out) {
  const T* src = in.data<T>();
  for (int64_t i = 0; i < in.NumElements(); ++i) out[i] = static_cast<float>(src[i]);
}

// Cast to float32: a float32 input is forwarded; any other dtype is in host
// memory, converted into pinned staging and copied to the device.
class GpuCastToFloatOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;

 protected:
  void Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<Tensor>* keep) override {
    const Tensor& in = ctx->input(0);
    if (in.dtype() == DT_FLOAT) {
      ctx->set_output(0, in);
      return;
    }
    AF_REQUIRES(ctx, in.InHostMemory(),
                errors::Internal("input of node '", name(), "' is ", DataTypeString(in.dtype()),
                                 " in device memory; the GPU keeps it in host memory"));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (in.NumElements() == 0) return;
    Tensor staging;
    AF_REQUIRES_OK(ctx, Tensor::Create(gpu->host_allocator(), DT_FLOAT, in.shape(), &staging)
                            .WithContext("pinned staging buffer on " + gpu->short_name()));
    float* dst = staging.data<float>();
    switch (in.dtype()) {
      case DT_INT32: ConvertToFloat<int32_t>(in, dst); break;
      case DT_INT64: ConvertToFloat<int64_t>(in, dst); break;
      case DT_UINT8: ConvertToFloat<uint8_t>(in, dst); break;
      case DT_INT8: ConvertToFloat<int8_t>(in, dst); break;
      case DT_INT16: ConvertToFloat<int16_t>(in, dst); break;
      case DT_UINT16: ConvertToFloat<uint16_t>(in, dst); break;
      case DT_DOUBLE: ConvertToFloat<double>(in, dst); break;
      case DT_BOOL: ConvertToFloat<bool>(in, dst); break;
      default:
        ctx->SetStatus(errors::Unimplemented("Cast from ", DataTypeString(in.dtype()), " to float on the GPU"));
        return;
    }
    AF_REQUIRES_OK(ctx, CudaStatus(cudaMemcpyAsync(out->raw_data(), staging.raw_data(), staging.TotalBytes(),
                                                   cudaMemcpyHostToDevice, gpu->compute_stream()),
                                   gpu->short_name() + ": cudaMemcpyAsync (host to device) of " + name()));
    keep->push_back(std::move(staging));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Cast").Device(DEVICE_GPU).TypeConstraint<float>("DstT"), GpuCastToFloatOp);

}  // namespace
}  // namespace actorflow
