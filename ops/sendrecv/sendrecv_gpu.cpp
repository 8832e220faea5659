// _Send and _Recv on a GPU: the edges between a GPU partition and the host.
//
// A _Send on the GPU copies a tensor in device memory to the host (into a
// pinned staging buffer, then into an ordinary host tensor) and hands that to
// the rendezvous once the copy has run: the one place a step waits for the
// GPU besides its end. A _Recv on the GPU takes the host tensor from the
// rendezvous and enqueues the copy of a float32 tensor into device memory
// (through pinned staging); it is done as soon as the copy is enqueued, since
// its consumers run behind it on the same stream. Tensors of other dtypes
// stay in host memory on both sides (the GPU device's convention,
// devices/cuda/gpu_device.hpp). So a tensor between two GPUs goes through the
// host. Both copies run on the compute stream, in order with the kernels
// (ops/gpu/gpu_kernel.hpp says why that keeps reused buffers safe). The actor
// thread never waits.
#include <cstring>

#include "actorflow/devices/pool_allocator.hpp"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"
#include "actorflow/ops/sendrecv/sendrecv_common.hpp"

namespace actorflow {
namespace {

class GpuSendOp : public AsyncOpKernel {
 public:
  explicit GpuSendOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(c) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr, NoRendezvous(*this), done);
    if (ctx->is_input_dead()) {  // sent dead: the _Recv's output is dead too
      ctx->rendezvous()->Send(ctx->step_id(), key_.For(*ctx), Tensor(), /*is_dead=*/true);
      done();
      return;
    }
    const Tensor& in = ctx->input(0);
    if (in.InHostMemory()) {
      ctx->rendezvous()->Send(ctx->step_id(), key_.For(*ctx), in, /*is_dead=*/false);
      done();
      return;
    }
    GpuDevice* gpu = GpuDeviceOf(ctx);
    Tensor staging;
    Status s = gpu ? gpu->Activate() : ctx->status();
    if (s.ok()) s = Tensor::Create(gpu->host_allocator(), in.dtype(), in.shape(), &staging);
    if (s.ok() && in.TotalBytes() > 0)
      s = CudaStatus(cudaMemcpyAsync(staging.raw_data(), in.raw_data(), in.TotalBytes(), cudaMemcpyDeviceToHost,
                                     gpu->compute_stream()),
                     gpu->short_name() + ": cudaMemcpyAsync (device to host) of " + name());
    if (!s.ok()) {  // nothing was enqueued
      ctx->SetStatus(s);
      done();
      return;
    }
    // After the copy, on a pool thread: an ordinary host tensor (pinned memory
    // stays with the staging pool) goes to the rendezvous.
    gpu->ThenRun(gpu->compute_stream(), [this, ctx, staging = std::move(staging), done = std::move(done)] {
      Tensor host;
      Status s = Tensor::Create(nullptr, staging.dtype(), staging.shape(), &host);
      if (s.ok()) {
        if (staging.TotalBytes() > 0) std::memcpy(host.raw_data(), staging.raw_data(), staging.TotalBytes());
        ctx->rendezvous()->Send(ctx->step_id(), key_.For(*ctx), host, /*is_dead=*/false);
      } else {
        ctx->SetStatus(s);
      }
      done();
    });
  }

 private:
  const TransferKey key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Send").Device(DEVICE_GPU), GpuSendOp);

class GpuRecvOp : public AsyncOpKernel {
 public:
  explicit GpuRecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(c) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr, NoRendezvous(*this), done);
    GpuDevice* gpu = GpuDeviceOf(ctx);
    if (!gpu) {
      done();
      return;
    }
    // Called on the device actor's thread.
    ctx->rendezvous()->Recv(ctx->step_id(), key_.For(*ctx),
                            [this, ctx, gpu, done = std::move(done)](const Status& s, Tensor value, bool is_dead) {
                              Status checked = CheckReceived(*this, s, value, is_dead);
                              if (!checked.ok() || is_dead) {  // dead: no output
                                ctx->SetStatus(checked);
                                done();
                              } else if (value.dtype() != DT_FLOAT || !value.InHostMemory()) {
                                ctx->set_output(0, std::move(value));  // stays in host memory
                                done();
                              } else {
                                CopyIn(ctx, gpu, value, std::move(done));
                              }
                            });
  }

 private:
  void CopyIn(OpKernelContext* ctx, GpuDevice* gpu, const Tensor& value, DoneCallback done) {
    Tensor* out = nullptr;
    Status s = gpu->Activate();
    if (s.ok()) s = ctx->allocate_output(0, value.shape(), &out);
    if (!s.ok()) {
      ctx->SetStatus(s.WithContext("receiving into " + name() + " on " + gpu->short_name()));
      done();
      return;
    }
    // A large value is staged by several pool jobs (CopyHostToDeviceAsync);
    // the node is done once its transfer is enqueued.
    CopyHostToDeviceAsync(gpu, gpu->compute_stream(), value, out->raw_data(),
                          [this, ctx, gpu, done = std::move(done)](const Status& copied) {
                            if (!copied.ok())
                              ctx->SetStatus(copied.WithContext("receiving into " + name() + " on " +
                                                                gpu->short_name()));
                            done();
                          });
  }

  const TransferKey key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Recv").Device(DEVICE_GPU), GpuRecvOp);

}  // namespace
}  // namespace actorflow
