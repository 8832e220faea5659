// _Send and _Recv: the two ends of an edge that the partitioner cut between
// devices (graph/partition.hpp). They meet in the rendezvous actor under the
// key made of their shared attrs (ops/sendrecv/rendezvous_access.hpp). The GPU
// kernels, which copy between host and device memory, are in sendrecv_gpu.cpp.
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"
#include "actorflow/ops/sendrecv/sendrecv_common.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("_Send")
    .Input("tensor: T")
    .Attr("T: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .Attr("client_terminated: bool = false")
    .SetIsStateful()
    .Doc("Sends the input to the _Recv of the same tensor name and devices, in this step.");

AF_REGISTER_OP("_Recv")
    .Output("tensor: tensor_type")
    .Attr("tensor_type: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .Attr("client_terminated: bool = false")
    .SetIsStateful()
    .Doc("Receives the tensor that the _Send of the same tensor name and devices sends in this step.");

class SendOp : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* c) : OpKernel(c), key_(c) {
    if (c->HasAttr("_wire_truncate16") && !c->GetAttr("_wire_truncate16", &truncate16_).ok()) truncate16_ = false;
  }
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES(ctx, ctx->rendezvous() != nullptr, NoRendezvous(*this));
    // A dead input is sent as dead: the _Recv's output is dead too.
    ctx->rendezvous()->Send(ctx->step_id(), key_.For(*ctx), ctx->is_input_dead() ? Tensor() : ctx->input(0),
                            ctx->is_input_dead(), truncate16_);
  }

 private:
  const TransferKey key_;
  bool truncate16_ = false;  // to another task: float32 as 16 bits (graph/partition.hpp)
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Send").Device(DEVICE_CPU), SendOp);

// Device actors serve it directly (DirectRecvKernel); ComputeAsync is for
// executors that do not.
class RecvOp : public AsyncOpKernel, public DirectRecvKernel {
 public:
  explicit RecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(c) {}
  const RendezvousKey& rendezvous_key() const override { return key_.root(); }
  RendezvousKey rendezvous_key_in(int64_t frame_id, int64_t iteration) const override {
    return key_.In(frame_id, iteration);
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr, NoRendezvous(*this), done);
    ctx->rendezvous()->Recv(ctx->step_id(), key_.For(*ctx),
                            [this, ctx, done = std::move(done)](const Status& s, Tensor value, bool is_dead) {
                              Status checked = CheckReceived(*this, s, value, is_dead);
                              if (checked.ok() && !is_dead) ctx->set_output(0, std::move(value));
                              else ctx->SetStatus(checked);
                              done();
                            });
  }

 private:
  const TransferKey key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Recv").Device(DEVICE_CPU), RecvOp);

AF_REGISTER_NO_GRADIENT("_Send");
AF_REGISTER_NO_GRADIENT("_Recv");

}  // namespace
}  // namespace actorflow
