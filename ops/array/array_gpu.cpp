// Const, Identity and NoOp on a GPU.
//
// A float32 Const is copied into device memory once, when its kernel is built
// (graph registration, on the compute pool: waiting for the copy there holds
// no actor); a Const of another dtype stays in host memory, the GPU device's
// convention for non-float tensors (devices/cuda/gpu_device.hpp). Identity
// forwards its input, wherever it lives; NoOp (a target of control edges)
// does nothing, as on the CPU.
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {
namespace {

class GpuConstOp : public OpKernel {
 public:
  explicit GpuConstOp(OpKernelConstruction* c) : OpKernel(c) {
    Tensor host;
    Status s = c->GetAttr("value", &host);
    if (s.ok() && host.dtype() != BaseType(c->output_types()[0]))
      s = errors::InvalidArgument("Type mismatch between value (", DataTypeString(host.dtype()), ") and dtype (",
                                  DataTypeString(BaseType(c->output_types()[0])), ")");
    if (s.ok()) s = ToDevice(c->device(), std::move(host));
    c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, tensor_); }

 private:
  Status ToDevice(Device* device, Tensor host) {
    auto* gpu = dynamic_cast<GpuDevice*>(device);
    if (host.dtype() != DT_FLOAT || !gpu) {
      tensor_ = std::move(host);
      return Status::OK();
    }
    AF_RETURN_IF_ERROR(gpu->Activate());
    // Copy-in memory, written on the host-to-device stream and waited for
    // here (graph registration, a pool thread): its blocks are reused only
    // once the compute stream passed their free, so no queued kernel still
    // reads this one, and the compute stream (which a capture may be
    // recording meanwhile: actors/device/step_capture.hpp) is not touched.
    AF_RETURN_IF_ERROR(Tensor::Create(gpu->copy_in_allocator(), DT_FLOAT, host.shape(), &tensor_));
    if (host.TotalBytes() == 0) return Status::OK();
    AF_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(tensor_.raw_data(), host.raw_data(), host.TotalBytes(),
                                                  cudaMemcpyHostToDevice, gpu->host_to_device_stream()),
                                  gpu->short_name() + ": copying Const " + name() + " to the device"));
    return CudaStatus(cudaStreamSynchronize(gpu->host_to_device_stream()),
                      gpu->short_name() + ": copying Const " + name() + " to the device");
  }

  Tensor tensor_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Const").Device(DEVICE_GPU), GpuConstOp);

class GpuIdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Identity").Device(DEVICE_GPU), GpuIdentityOp);
AF_REGISTER_KERNEL(KernelDefBuilder("StopGradient").Device(DEVICE_GPU), GpuIdentityOp);

class GpuNoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("NoOp").Device(DEVICE_GPU), GpuNoOp);

}  // namespace
}  // namespace actorflow
