#include "ops/gpu/gpu_kernel.hpp"

#include <cstring>
#include <new>

#include "devices/pool_allocator.hpp"

namespace actorflow {

GpuDevice* GpuDeviceOf(OpKernelContext* ctx) {
  auto* gpu = dynamic_cast<GpuDevice*>(ctx->device());
  if (!gpu)
    ctx->SetStatus(errors::Internal("GPU kernel of node '", ctx->op_kernel().name(), "' runs on ",
                                    ctx->device() ? ctx->device()->name() : std::string("no device"),
                                    ", which is not a GPU"));
  return gpu;
}

void GpuOpKernel::ComputeInline(OpKernelContext* ctx) {
  GpuDevice* gpu = GpuDeviceOf(ctx);
  if (!gpu) return;
  Status s = gpu->Activate();
  for (int i = 0; i < ctx->num_inputs() && s.ok(); ++i) {
    const Tensor& t = ctx->input(i);
    if (t.dtype() == DT_FLOAT && t.NumElements() > 0 && t.InHostMemory())
      s = errors::Internal("input ", i, " of node '", name(), "' (op '", type_string(), "') on ", gpu->short_name(),
                           " is a float tensor in host memory; GPU kernels take float tensors in device memory");
  }
  if (!s.ok()) {
    ctx->SetStatus(s);
    return;
  }
  std::vector<Tensor> keep;
  try {
    Launch(ctx, gpu, &keep);
  } catch (const std::bad_alloc&) {
    ctx->SetStatus(errors::ResourceExhausted("out of host memory launching ", name(), " on ", gpu->short_name()));
  } catch (const std::exception& e) {
    ctx->SetStatus(errors::Internal("launching ", name(), " on ", gpu->short_name(), " threw: ", e.what()));
  }
  // Even after an error: host buffers that enqueued work reads live until it ran.
  if (!keep.empty()) gpu->ThenRun(gpu->compute_stream(), [keep = std::move(keep)]() mutable { keep.clear(); });
}

void GpuOpKernel::ComputeAsync(OpKernelContext* ctx, DoneCallback done) {
  ComputeInline(ctx);
  done();
}

Status CopyHostToDevice(GpuDevice* gpu, cudaStream_t stream, const void* src, void* dst, size_t bytes,
                        std::vector<Tensor>* keep) {
  if (bytes == 0) return Status::OK();
  Tensor staging;
  AF_RETURN_IF_ERROR(Tensor::Create(gpu->host_allocator(), DT_UINT8, TensorShape{static_cast<int64_t>(bytes)},
                                    &staging)
                         .WithContext("pinned staging buffer on " + gpu->short_name()));
  std::memcpy(staging.raw_data(), src, bytes);
  AF_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, staging.raw_data(), bytes, cudaMemcpyHostToDevice, stream),
                                gpu->short_name() + ": cudaMemcpyAsync (host to device)"));
  keep->push_back(std::move(staging));
  return Status::OK();
}

Status LaunchStatus(const OpKernel& kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::OK();
  return errors::Internal("launching the GPU kernel of node '", kernel.name(), "' (op '", kernel.type_string(),
                          "'): ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

}  // namespace actorflow
