#include "actorflow/ops/sendrecv/sendrecv_common.hpp"

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"

namespace actorflow {

RendezvousKey RendezvousKeyFromAttrs(OpKernelConstruction* c) {
  std::string tensor_name, send_device, recv_device;
  int64_t incarnation = 0;
  c->SetStatus(c->GetAttr("tensor_name", &tensor_name));
  c->SetStatus(c->GetAttr("send_device", &send_device));
  c->SetStatus(c->GetAttr("send_device_incarnation", &incarnation));
  c->SetStatus(c->GetAttr("recv_device", &recv_device));
  return MakeRendezvousKey(send_device, static_cast<uint64_t>(incarnation), recv_device, tensor_name);
}

TransferKey::TransferKey(OpKernelConstruction* c) {
  int64_t incarnation = 0;
  c->SetStatus(c->GetAttr("tensor_name", &tensor_name_));
  c->SetStatus(c->GetAttr("send_device", &send_device_));
  c->SetStatus(c->GetAttr("send_device_incarnation", &incarnation));
  c->SetStatus(c->GetAttr("recv_device", &recv_device_));
  incarnation_ = static_cast<uint64_t>(incarnation);
  root_ = MakeRendezvousKey(send_device_, incarnation_, recv_device_, tensor_name_);
}

RendezvousKey TransferKey::In(int64_t frame_id, int64_t iteration) const {
  if (frame_id == 0 && iteration == 0) return root_;
  return MakeRendezvousKey(send_device_, incarnation_, recv_device_, tensor_name_, frame_id, iteration);
}

RendezvousKey TransferKey::For(const OpKernelContext& ctx) const { return In(ctx.frame_id(), ctx.iteration()); }

Status NoRendezvous(const OpKernel& k) {
  return errors::Unavailable("node ", k.name(), " (", k.type_string(), ") runs where no rendezvous is reachable");
}

Status CheckReceived(const OpKernel& recv, const Status& s, const Tensor& value, bool is_dead) {
  if (!s.ok()) return s;
  if (is_dead) return Status::OK();  // no value: the _Recv's output is dead
  if (!value.IsInitialized() || value.dtype() != recv.output_type(0))
    return errors::Internal(recv.name(), " received ",
                            value.IsInitialized() ? DataTypeString(value.dtype()) : "no tensor", ", expected ",
                            DataTypeString(recv.output_type(0)));
  return Status::OK();
}

}  // namespace actorflow
