// The collective ops on a GPU: CollectiveReduce, CollectiveBcastSend,
// CollectiveBcastRecv and CollectiveBcastFirst over GPU tensors, staged
// through pinned host memory over the collective executor's transport (the
// same executor, ring and data path as on a CPU: comm/collective_executor.hpp).
//
// A float32 input lives in device memory: the kernel enqueues its copy into a
// pinned buffer on the compute stream (behind the kernels that computed it)
// and returns; once the copy has run (GpuDevice::ThenRun, on a pool thread)
// the collective starts on the pinned tensor, reducing into a pinned output.
// The result is copied back into a device tensor on the compute stream, and
// the node is done once that copy is enqueued: its consumers run behind it.
// So the device actor's thread never waits, neither for the GPU nor for the
// other members. A broadcast's sender outputs its own device input (no copy
// back). A collective's answer is handed to a pool thread before its
// device output is allocated (the executor's own thread never waits for the
// GPU). Tensors of other dtypes are in host memory on a GPU too (the
// device's convention, devices/cuda/gpu_device.hpp) and go to the executor
// as they are. Cancellation, timeouts and errors are the CPU kernels'
// (ops/collective/collective_kernel.hpp); a failed copy names the node.
#include <utility>

#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/pool_allocator.hpp"
#include "actorflow/ops/collective/collective_kernel.hpp"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {
namespace {

class GpuCollectiveOp : public CollectiveKernelBase {
 public:
  GpuCollectiveOp(OpKernelConstruction* c, CollectiveKind kind) : CollectiveKernelBase(c, kind) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    if (!gpu) return done();  // GpuDeviceOf set the status
    if (params().kind == CollectiveKind::kBroadcastRecv) {
      StartOnHost(ctx, Tensor(), Tensor(), [this, ctx, gpu, done](const Status& s, Tensor result) {
        DeliverOnPool(ctx, gpu, s, std::move(result), Tensor(), nullptr, done);
      });
      return;
    }
    const Tensor& input = ctx->input(0);
    Status s = CheckInput(input);
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    if (params().group_size == 1) {  // a group of one outputs its input, staged nowhere
      ctx->set_output(0, input);
      return done();
    }
    if (input.InHostMemory()) {  // not float32: the executor takes it as it is
      Tensor output;
      if (NeedsOutputBuffer()) s = Tensor::Create(nullptr, input.dtype(), input.shape(), &output);
      AF_REQUIRES_ASYNC(ctx, s.ok(), s.WithContext("the output of " + name()), done);
      StartOnHost(ctx, input, std::move(output), [this, ctx, gpu, done](const Status& s, Tensor result) {
        Deliver(ctx, gpu, s, std::move(result), Tensor(), nullptr, done);
      });
      return;
    }
    // Device memory: staged into pinned memory behind the kernels that wrote it.
    Tensor staged, output;
    s = gpu->Activate();
    if (s.ok()) s = Tensor::Create(gpu->host_allocator(), input.dtype(), input.shape(), &staged);
    if (s.ok() && NeedsOutputBuffer()) s = Tensor::Create(gpu->host_allocator(), input.dtype(), input.shape(), &output);
    if (s.ok() && input.TotalBytes() > 0)
      s = CudaStatus(cudaMemcpyAsync(staged.raw_data(), input.raw_data(), input.TotalBytes(), cudaMemcpyDeviceToHost,
                                     gpu->compute_stream()),
                     gpu->short_name() + ": cudaMemcpyAsync (device to host) of " + name());
    AF_REQUIRES_ASYNC(ctx, s.ok(), s.WithContext("staging the input of " + name()), done);
    gpu->ThenRunWithStatus(gpu->compute_stream(), [this, ctx, gpu, input, staged = std::move(staged),
                                                   output = std::move(output), done](cudaError_t e) mutable {
      Status copied = CudaStatus(e, gpu->short_name() + ": the copy of " + name() + "'s input to the host");
      if (!copied.ok()) {
        ctx->SetStatus(copied);
        return done();
      }
      const void* staged_bytes = staged.raw_data();
      StartOnHost(ctx, staged, std::move(output),
                  [this, ctx, gpu, input, staged_bytes, done](const Status& s, Tensor result) {
                    DeliverOnPool(ctx, gpu, s, std::move(result), input, staged_bytes, done);
                  });
    });
  }

 private:
  // Deliver on a pool thread: the collective executor's one thread (where a
  // collective may finish) must not allocate device memory, which can wait
  // for the GPU, nor copy into staging.
  void DeliverOnPool(OpKernelContext* ctx, GpuDevice* gpu, const Status& s, Tensor result,
                     const Tensor& device_input, const void* staged_bytes, const DoneCallback& done) {
    auto job = [this, ctx, gpu, s, result = std::move(result), device_input, staged_bytes, done]() mutable {
      Deliver(ctx, gpu, s, std::move(result), device_input, staged_bytes, done);
    };
    ComputePool* pool = gpu->compute_pool();
    try {
      if (pool) return pool->Schedule(std::move(job));
    } catch (...) {  // no memory for a pool job: delivered here
    }
    job();
  }

  // Sets the collective's result as the output: `device_input` itself when
  // the result is the staged copy of it (a broadcast's sender), a host
  // tensor as it is when not float32, else a copy into device memory.
  void Deliver(OpKernelContext* ctx, GpuDevice* gpu, const Status& s, Tensor result, const Tensor& device_input,
               const void* staged_bytes, const DoneCallback& done) {
    if (!s.ok()) {
      ctx->SetStatus(s);
      return done();
    }
    if (staged_bytes != nullptr && result.raw_data() == staged_bytes) {
      ctx->set_output(0, device_input);
      return done();
    }
    if (result.dtype() != DT_FLOAT || !result.InHostMemory()) {
      ctx->set_output(0, std::move(result));
      return done();
    }
    Tensor* out = nullptr;
    Status st = gpu->Activate();
    if (st.ok()) st = ctx->allocate_output(0, result.shape(), &out);
    if (!st.ok()) {
      ctx->SetStatus(st.WithContext("the output of " + name() + " on " + gpu->short_name()));
      return done();
    }
    if (result.TotalBytes() == 0) return done();
    // A pinned result (the reduction's output) is one transfer, staged nowhere.
    CopyHostToDeviceAsync(gpu, gpu->compute_stream(), std::move(result), out->raw_data(),
                          [this, ctx, done](const Status& copied) {
                            if (!copied.ok()) ctx->SetStatus(copied.WithContext("the output of " + name()));
                            done();
                          });
  }
};

template <CollectiveKind kKind>
class GpuCollectiveKernel : public GpuCollectiveOp {
 public:
  explicit GpuCollectiveKernel(OpKernelConstruction* c) : GpuCollectiveOp(c, kKind) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveReduce").Device(DEVICE_GPU),
                   GpuCollectiveKernel<CollectiveKind::kReduce>);
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveBcastSend").Device(DEVICE_GPU),
                   GpuCollectiveKernel<CollectiveKind::kBroadcastSend>);
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveBcastRecv").Device(DEVICE_GPU),
                   GpuCollectiveKernel<CollectiveKind::kBroadcastRecv>);
AF_REGISTER_KERNEL(KernelDefBuilder("CollectiveBcastFirst").Device(DEVICE_GPU),
                   GpuCollectiveKernel<CollectiveKind::kBroadcastFirst>);

}  // namespace
}  // namespace actorflow
