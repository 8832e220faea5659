// The math of variable updates: Assign, AssignAdd/Sub and the optimizers'
// Apply* ops with TensorFlow's formulas (tensorflow/core/kernels/training_ops.cc),
// applied to a variable by the kernels of its process (ops/state/local_variable.hpp)
// or by its container actor (a request from another process). Vectorized
// (Eigen), one pass over memory (a formula's passes run a cache-sized chunk at a
// time), sharded over the compute pool when large.
#pragma once

#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/ops/state/variable_access.hpp"

namespace actorflow {

class ComputePool;

/// One variable as the update sees it.
struct VarSlot {
  std::string name;              // for messages: "container/name"
  DataType dtype = DT_INVALID;   // declared
  PartialTensorShape shape;      // declared
  Tensor value;                  // uninitialized when the variable has no value
};

/// The variables one update names, in VarUpdateKind's order (at most 3):
/// kept inline, a step's update allocates no list.
using VarSlots = boost::container::small_vector<VarSlot*, 3>;

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
/// `pool`, when given, shards the formula over the compute pool when the
/// update is large (ComputePool::For from one of its jobs, ParallelFor from a
/// waiting client's thread), the calling thread taking shards too.
Status ApplyVarUpdate(const VarUpdateRequest& req, VarSlots& vars, Tensor* answer = nullptr,
                      std::vector<Tensor>* sources = nullptr, ComputePool* pool = nullptr);

/// Whether updates of `kind` race each other when use_locking is false
/// (AssignAdd/Sub and the optimizers; Assign and CountUpTo are always whole).
bool MayRace(VarUpdateKind kind);

/// For an update that may race (MayRace, on the host): checks it against
/// `vars` as ApplyVarUpdate does and changes nothing.
Status CheckVarUpdate(const VarUpdateRequest& req, const VarSlots& vars);

/// Computes a checked racing update in place on `data`, the variables'
/// buffers of n elements of `dtype` in the request's order, sharded over
/// `pool` when given, as ApplyVarUpdate.
void ComputeVarUpdateInPlace(const VarUpdateRequest& req, DataType dtype, void* const* data, int64_t n,
                             ComputePool* pool);

/// Elements below which an update is cheaper than a hop to the compute pool.
constexpr int64_t kInlineUpdateElements = 1 << 15;

/// Element count of the request's largest argument: what an update costs
/// (an optimizer's gradient has its variable's size). Reads no variable, so
/// it needs no lock.
int64_t VarUpdateElements(const VarUpdateRequest& req);

}  // namespace actorflow
