// The base of kernels that change variables (Assign*, Apply*): they ask for
// one VarUpdateRequest (VariableAccess: applied in place when the variable is
// of this process) and output their first input, the variable's reference,
// once it is applied.
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
  /// Reads the use_locking attr (true when the op has none).
  explicit VariableUpdateKernel(OpKernelConstruction* c);

 protected:
  /// The encoded handles of the first `n` inputs (ref inputs).
  static Status Handles(OpKernelContext* ctx, int n, std::vector<std::string>* out);
  /// Applies `req` (its args set) to the variables of the first `num_refs`
  /// inputs (ref inputs): at once when VariableAccess::UpdateNow can, with
  /// no handle copied, else sent with their handles. On success output 0 is
  /// input 0. Calls done unless it returns an error (then the caller reports
  /// it and calls done).
  Status Start(OpKernelContext* ctx, int num_refs, VarUpdateRequest req, DoneCallback done) const;

  bool use_locking_ = true;
};

/// The use_locking attr of `c`'s op; true when it has none.
bool UseLockingAttr(OpKernelConstruction* c);

}  // namespace actorflow
