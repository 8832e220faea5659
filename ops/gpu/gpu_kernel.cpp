#include "actorflow/ops/gpu/gpu_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "actorflow/devices/compute_pool.hpp"

#include "actorflow/devices/pool_allocator.hpp"

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
  if (gpu->capturing() && stream == gpu->compute_stream())
    return errors::Unimplemented(gpu->short_name(), ": a copy of host memory into the GPU cannot be captured (its ",
                                 "source would be read again, unchanged, at each launch)");
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

namespace {

// One sliced copy: the slices' jobs share it; the last one to enqueue its
// transfer releases the buffers behind them and answers.
struct SlicedCopy {
  GpuDevice* gpu;
  cudaStream_t stream;
  Tensor source, staging;
  char* dst;
  size_t bytes, slice;
  std::function<void(const Status&)> done;
  std::atomic<int64_t> left{0};
  std::mutex mu;
  Status status;  // guarded by mu: the first failure

  void CopySlice(int64_t i) {
    const size_t begin = static_cast<size_t>(i) * slice, len = std::min(slice, bytes - begin);
    char* staged = static_cast<char*>(staging.raw_data()) + begin;
    std::memcpy(staged, static_cast<const char*>(source.raw_data()) + begin, len);
    Status s = gpu->Activate();
    if (s.ok())
      s = CudaStatus(cudaMemcpyAsync(dst + begin, staged, len, cudaMemcpyHostToDevice, stream),
                     gpu->short_name() + ": cudaMemcpyAsync (host to device)");
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (status.ok()) status = s;
    }
  }
};

}  // namespace

void CopyHostToDeviceAsync(GpuDevice* gpu, cudaStream_t stream, Tensor source, void* dst,
                           std::function<void(const Status&)> done) {
  const size_t bytes = source.TotalBytes();
  if (bytes > 0 && gpu->capturing() && stream == gpu->compute_stream()) {
    done(errors::Unimplemented(gpu->short_name(), ": a copy of host memory into the GPU cannot be captured"));
    return;
  }
  ComputePool* pool = gpu->compute_pool();
  const int threads = pool ? pool->NumThreads() : 1;
  const bool pinned = source.buffer() != nullptr && source.buffer()->allocator() == gpu->host_allocator();
  if (pinned || bytes < kSlicedCopyBytes || threads < 2) {  // one transfer, staged once at most
    done(gpu->CopyFromHostOn(stream, source, dst));
    return;
  }
  // Slices of at least 256 KiB (smaller ones cost more in jobs than they save),
  // at most one per thread and 16 in all (memory bandwidth is shared).
  constexpr size_t kMinSlice = size_t{256} << 10;
  const int64_t slices =
      std::min<int64_t>({threads, 16, static_cast<int64_t>((bytes + kMinSlice - 1) / kMinSlice)});
  auto copy = std::make_shared<SlicedCopy>();
  Status s = Tensor::Create(gpu->host_allocator(), DT_UINT8, TensorShape{static_cast<int64_t>(bytes)}, &copy->staging)
                 .WithContext("pinned staging buffer on " + gpu->short_name());
  if (!s.ok()) {
    done(s);
    return;
  }
  copy->gpu = gpu;
  copy->stream = stream;
  copy->source = std::move(source);
  copy->dst = static_cast<char*>(dst);
  copy->bytes = bytes;
  copy->slice = ((bytes + slices - 1) / slices + 4095) / 4096 * 4096;
  copy->done = std::move(done);
  const int64_t n = static_cast<int64_t>((bytes + copy->slice - 1) / copy->slice);
  copy->left.store(n);
  for (int64_t i = 0; i < n; ++i) {
    auto job = [copy, i] {
      copy->CopySlice(i);
      if (copy->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      // Every slice's transfer is enqueued: the buffers live until they ran.
      copy->gpu->ThenRun(copy->stream, [source = std::move(copy->source), staging = std::move(copy->staging)] {});
      Status status;
      {
        std::lock_guard<std::mutex> lock(copy->mu);
        status = copy->status;
      }
      copy->done(status);
    };
    try {
      pool->Schedule(job);
    } catch (...) {  // no memory for a pool job: this slice is copied here
      job();
    }
  }
}

Status LaunchStatus(const OpKernel& kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::OK();
  return errors::Internal("launching the GPU kernel of node '", kernel.name(), "' (op '", kernel.type_string(),
                          "'): ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

}  // namespace actorflow
