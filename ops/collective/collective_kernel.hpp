// CollectiveKernelBase: what the CPU and GPU kernels of the collective ops
// (ops/collective/collective_ops.cpp, collective_gpu.cpp) share: their attrs
// read once into CollectiveParams, the input's check, and the start of the
// collective on host tensors, tied to the step's cancellation.
//
// Contract: StartOnHost never blocks; `finish` runs exactly once, with the
// collective's status and its result (a host tensor), from the executor's
// thread or the caller's; a cancelled step (an error elsewhere, a deadline, a
// closed session) ends the collective Cancelled. The kernels set the output.
#pragma once

#include <functional>

#include "actorflow/ops/collective_access.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

class CollectiveKernelBase : public AsyncOpKernel {
 public:
  CollectiveKernelBase(OpKernelConstruction* c, CollectiveKind kind);

 protected:
  const CollectiveParams& params() const { return p_; }
  /// InvalidArgument naming the node when a CollectiveBcastSend's input does
  /// not have the shape its attr says (OK otherwise).
  Status CheckInput(const Tensor& input) const;
  /// Whether the executor wants an output buffer of the input's dtype and
  /// shape (an all-reduce of more than one member).
  bool NeedsOutputBuffer() const { return p_.kind == CollectiveKind::kReduce && p_.group_size != 1; }
  /// Starts the collective on host tensors `input` and `output` (either
  /// empty where the kind takes none). FailedPrecondition without a
  /// collective executor, Cancelled for a step already cancelled: both
  /// through `finish`.
  void StartOnHost(OpKernelContext* ctx, Tensor input, Tensor output,
                   std::function<void(const Status&, Tensor)> finish) const;

 private:
  CollectiveParams p_;
};

}  // namespace actorflow
