// The base of kernels that change variables (Assign*, Apply*): they send one
// VarUpdateRequest to the container actor and output their first input, the
// variable's reference, once it is applied.
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/resource_handle.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/state/variable_access.hpp"

namespace actorflow {

/// The handle of the variable a VariableV2 or VarHandleOp node names, from its
/// attrs: (container, shared_name), "" meaning the default container and the
/// node's own name; dtype and shape as declared. Errors go to `c`.
ResourceHandle DeclaredVariableHandle(OpKernelConstruction* c);

/// The request an update kernel of `kind` sends, its attrs read once:
/// use_nesterov, validate_shape (`validate_shape` when the op has none), and
/// update_slots, whose false is Unimplemented. Errors go to `c`.
VarUpdateRequest UpdateRequestFromAttrs(OpKernelConstruction* c, VarUpdateKind kind, bool validate_shape);

class VariableUpdateKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

 protected:
  /// The encoded handles of the first `n` inputs (ref inputs).
  static Status Handles(OpKernelContext* ctx, int n, std::vector<std::string>* out);
  /// Sends `req`; on success output 0 is input 0. Calls done unless it
  /// returns an error (then the caller reports it and calls done).
  static Status Start(OpKernelContext* ctx, VarUpdateRequest req, DoneCallback done);
};

}  // namespace actorflow
