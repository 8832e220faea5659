// What the _Send and _Recv kernels of every device share: the rendezvous key
// from their attrs and the checks of a received tensor. The CPU kernels are in
// sendrecv_ops.cpp, the GPU ones (which copy between host and device memory)
// in sendrecv_gpu.cpp.
#pragma once

#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/net/rendezvous_key.hpp"

namespace actorflow {

class OpKernel;
class OpKernelConstruction;
class OpKernelContext;

/// The key both ends compute from their attrs (tensor_name, send_device,
/// send_device_incarnation, recv_device); a missing attr is set on `c`.
RendezvousKey RendezvousKeyFromAttrs(OpKernelConstruction* c);

/// A transfer's key in every frame and iteration: built once for the root
/// frame, per iteration inside loops (frame and iteration are part of the key).
class TransferKey {
 public:
  explicit TransferKey(OpKernelConstruction* c);
  const RendezvousKey& root() const { return root_; }
  /// The key in `iteration` of the frame instance `frame_id` (0, 0: the root's).
  RendezvousKey In(int64_t frame_id, int64_t iteration) const;
  /// The key for the iteration `ctx` runs in.
  RendezvousKey For(const OpKernelContext& ctx) const;

 private:
  std::string send_device_, recv_device_, tensor_name_;
  uint64_t incarnation_ = 0;
  RendezvousKey root_;
};

/// Unavailable: `k` runs where no rendezvous actor is reachable.
Status NoRendezvous(const OpKernel& k);

/// The Status of a _Recv given what the rendezvous answered: its error, or
/// Unimplemented for a dead tensor, or Internal for a missing tensor or one
/// of another dtype than the kernel's output.
Status CheckReceived(const OpKernel& recv, const Status& s, const Tensor& value, bool is_dead);

}  // namespace actorflow
