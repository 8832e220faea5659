// The math of variable updates, applied by the container actor that owns the
// variables: Assign, AssignAdd/Sub and the optimizers' Apply* ops with
// TensorFlow's formulas (tensorflow/core/kernels/training_ops.cc).
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/ops/state/variable_access.hpp"

namespace actorflow {

/// One variable as the update sees it.
struct VarSlot {
  std::string name;              // for messages: "container/name"
  DataType dtype = DT_INVALID;   // declared
  PartialTensorShape shape;      // declared
  Tensor value;                  // uninitialized when the variable has no value
};

/// Checks `req` against `vars` (in VarUpdateKind's order) and replaces their
/// values with the updated ones. A value no one else holds is updated in
/// place; one a reader still holds (a step that read it) is left intact and
/// replaced by a new buffer — copy on write. On error nothing changes.
/// `answer`, when not null, gets what the update answers (kCountUpTo).
/// On the device (req.on_device) it checks the update and computes nothing:
/// an Assign takes the value's buffer; other updates give each variable the
/// buffer the device's kernel writes (its own, or a new one of the same
/// device memory when a reader holds it: copy on write) and `sources`, when
/// not null, the values that kernel reads.
Status ApplyVarUpdate(const VarUpdateRequest& req, std::vector<VarSlot*>& vars, Tensor* answer = nullptr,
                      std::vector<Tensor>* sources = nullptr);

/// Elements below which an update is cheaper than a hop to the compute pool.
constexpr int64_t kInlineUpdateElements = 1 << 15;

/// Element count of the largest tensor the update touches.
int64_t VarUpdateSize(const VarUpdateRequest& req, const std::vector<VarSlot*>& vars);

}  // namespace actorflow
