// _Send and _Recv: the two ends of an edge that the partitioner cut between
// devices (graph/partition.hpp). They meet in the rendezvous actor under the
// key made of their shared attrs (ops/sendrecv/rendezvous_access.hpp).
#include "graph/gradients.hpp"
#include "ops/op_kernel.hpp"
#include "ops/op_registry.hpp"
#include "ops/sendrecv/rendezvous_access.hpp"

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

// The key both ends compute from their attrs.
std::string KeyFromAttrs(OpKernelConstruction* c) {
  std::string tensor_name, send_device, recv_device;
  int64_t incarnation = 0;
  c->SetStatus(c->GetAttr("tensor_name", &tensor_name));
  c->SetStatus(c->GetAttr("send_device", &send_device));
  c->SetStatus(c->GetAttr("send_device_incarnation", &incarnation));
  c->SetStatus(c->GetAttr("recv_device", &recv_device));
  return RendezvousKey(send_device, static_cast<uint64_t>(incarnation), recv_device, tensor_name);
}

Status NoRendezvous(const OpKernel& k) {
  return errors::Unavailable("node ", k.name(), " (", k.type_string(), ") runs where no rendezvous is reachable");
}

class SendOp : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* c) : OpKernel(c), key_(KeyFromAttrs(c)) {}
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES(ctx, ctx->rendezvous() != nullptr, NoRendezvous(*this));
    ctx->rendezvous()->Send(ctx->step_id(), key_, ctx->input(0), /*is_dead=*/false);
  }

 private:
  const std::string key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Send").Device(DEVICE_CPU), SendOp);

class RecvOp : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(KeyFromAttrs(c)) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    AF_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr, NoRendezvous(*this), done);
    ctx->rendezvous()->Recv(ctx->step_id(), key_,
                            [this, ctx, done = std::move(done)](const Status& s, Tensor value, bool is_dead) {
                              if (!s.ok()) {
                                ctx->SetStatus(s);
                              } else if (is_dead) {
                                ctx->SetStatus(errors::Unimplemented("dead tensors (control flow) reached ", name()));
                              } else if (!value.IsInitialized() || value.dtype() != output_type(0)) {
                                ctx->SetStatus(errors::Internal(
                                    name(), " received ",
                                    value.IsInitialized() ? DataTypeString(value.dtype()) : "no tensor",
                                    ", expected ", DataTypeString(output_type(0))));
                              } else {
                                ctx->set_output(0, std::move(value));
                              }
                              done();
                            });
  }

 private:
  const std::string key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("_Recv").Device(DEVICE_CPU), RecvOp);

AF_REGISTER_NO_GRADIENT("_Send");
AF_REGISTER_NO_GRADIENT("_Recv");

}  // namespace
}  // namespace actorflow
