// _Send and _Recv on a GPU: the edges between a GPU partition and the host.
//
// A _Send on the GPU copies a tensor in device memory to the host (into a
// pinned staging buffer, then into an ordinary host tensor) on the GPU's
// device-to-host stream, after an event on the compute stream (behind the
// kernel that produced it, not behind the kernels queued after it), and
// hands it to the rendezvous once the copy has run: the one place a step
// waits for the GPU besides its end. So a fetch of a variable updated in
// place later in the same step may see the update (as in TensorFlow; a step
// that needs the old value reads it through a copy, e.g. Identity before the
// update in the graph's order). A _Recv on the GPU takes the host tensor from
// the rendezvous; a small float32 tensor is copied (through pinned staging)
// on the compute stream and the node is done once the copy is enqueued, its
// consumers behind it; a large one (kCopyStreamBytes) is copied on the
// host-to-device stream into copy-in memory (devices/cuda/gpu_device.hpp)
// and the node is done once the copy has run. Tensors of other dtypes stay in
// host memory on both sides (the GPU device's convention). So a tensor
// between two GPUs goes through the host. The actor thread never waits.
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
    // On the device-to-host stream, behind the work enqueued so far (the
    // producer's kernel) but not behind the kernels enqueued after.
    cudaStream_t d2h = gpu ? gpu->device_to_host_stream() : nullptr;
    if (s.ok() && in.TotalBytes() > 0) s = gpu->WaitFor(d2h, gpu->compute_stream());
    if (s.ok() && in.TotalBytes() > 0)
      s = CudaStatus(cudaMemcpyAsync(staging.raw_data(), in.raw_data(), in.TotalBytes(), cudaMemcpyDeviceToHost, d2h),
                     gpu->short_name() + ": cudaMemcpyAsync (device to host) of " + name());
    if (!s.ok()) {  // nothing was enqueued
      ctx->SetStatus(s);
      done();
      return;
    }
    // After the copy, on a pool thread: an ordinary host tensor (pinned memory
    // stays with the staging pool) goes to the rendezvous.
    // `in` is the context's input until done: its buffer is not reused before the copy ran.
    gpu->ThenRunWithStatus(d2h, [this, ctx, gpu, staging = std::move(staging), done = std::move(done)](cudaError_t e) {
      Status copied = CudaStatus(e, gpu->short_name() + ": the copy of " + name() + "'s tensor to the host");
      if (!copied.ok()) {
        ctx->SetStatus(copied);
        return done();
      }
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
    const bool small = value.TotalBytes() < kCopyStreamBytes;
    Status s = gpu->Activate();
    if (s.ok() && small) s = ctx->allocate_output(0, value.shape(), &out);
    if (!s.ok()) {
      ctx->SetStatus(s.WithContext("receiving into " + name() + " on " + gpu->short_name()));
      done();
      return;
    }
    if (small) {
      // A small value rides the compute stream: the node is done once its
      // copy is enqueued, and its consumers run behind it.
      CopyHostToDeviceAsync(gpu, gpu->compute_stream(), value, out->raw_data(),
                            [this, ctx, gpu, done = std::move(done)](const Status& copied) {
                              if (!copied.ok())
                                ctx->SetStatus(copied.WithContext("receiving into " + name() + " on " +
                                                                  gpu->short_name()));
                              done();
                            });
      return;
    }
    // A large one goes on the host-to-device stream, into copy-in memory,
    // beside the kernels already queued (the previous step's, when the next
    // feed arrives early: a prefetch); the node is done once the copy has
    // run, so its consumers need no order against that stream.
    Tensor dst;
    s = Tensor::Create(gpu->copy_in_allocator(), DT_FLOAT, value.shape(), &dst);
    if (!s.ok()) {
      ctx->SetStatus(s.WithContext("receiving into " + name() + " on " + gpu->short_name()));
      done();
      return;
    }
    void* bytes = dst.raw_data();
    CopyHostToDeviceAsync(
        gpu, gpu->host_to_device_stream(), value, bytes,
        [this, ctx, gpu, dst = std::move(dst), done = std::move(done)](const Status& copied) mutable {
          if (!copied.ok()) {  // slices enqueued before the failure may still write dst
            gpu->ThenRun(gpu->host_to_device_stream(), [dst = std::move(dst)] {});
            ctx->SetStatus(copied.WithContext("receiving into " + name() + " on " + gpu->short_name()));
            return done();
          }
          gpu->ThenRunWithStatus(gpu->host_to_device_stream(), [this, ctx, gpu, dst = std::move(dst),
                                                                done = std::move(done)](cudaError_t e) {
            Status s = CudaStatus(e, gpu->short_name() + ": the copy into " + name());
            if (s.ok()) {
              ctx->set_output(0, dst);
            } else {
              ctx->SetStatus(s);
            }
            done();
          });
        });
  }

  const TransferKey key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Recv").Device(DEVICE_GPU), GpuRecvOp);

}  // namespace
}  // namespace actorflow
