// LocalVar: one variable as the kernels of its own process reach it.
//
// The container actor (actors/container_actor.hpp) owns every variable: it
// creates it, keeps the directory of names, shares it across sessions, drops
// it on ResetContainers, and serves reads and updates that come by message
// (from another process). A kernel on a device of the same process resolves
// a variable once (VariableAccess) and then reads and updates its buffer
// directly, with TensorFlow's semantics:
//   - a read takes the value under the variable's lock: it shares the buffer
//     (no copy) and sees the value between two locked updates, never a torn
//     tensor; the variables of one read (a step's reads, a checkpoint's) are
//     taken under all their locks at once: a snapshot;
//   - a locked update (use_locking=true, Assign, CountUpTo, every update
//     that comes by message) holds the lock while it computes: updates of one
//     variable are serialized, those of different variables run in parallel.
//     A value a reader still holds is never written: the update computes
//     into a new buffer (copy on write);
//   - an update with use_locking=false (AssignAdd/Sub, Apply*) checks under
//     the lock, then computes in place without it, racing other such updates
//     of the variable as TensorFlow's do (an update may be lost, a reader that
//     took the value meanwhile may see it half updated). When a reader holds
//     the value it computes into a new buffer under the lock instead.
//   - a GPU kernel's update (on_device) is checked and its buffers chosen
//     (copy on write) under the lock, which is held until the kernel that
//     writes them is enqueued on the device's stream: a read after it is
//     enqueued behind that kernel.
// Several variables (Apply* with slots, a step's reads) are locked in
// address order.
//
// Memory: an update whose new buffer does not fit fails with the allocator's
// Status (or a TensorAllocationError the caller turns into one); the
// variables keep their values.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "actorflow/ops/state/variable_updates.hpp"

namespace actorflow {

class ComputePool;
struct LocalVar;

/// The variables of one read or update (a name may repeat), kept inline for
/// the few an update names.
using LocalVars = boost::container::small_vector<LocalVar*, 4>;

/// Buffers that use_locking=false updates write in place now, each kept
/// alive while they do (the variable may have moved on to another value).
struct RacingWrite {
  const void* data = nullptr;  // the buffer written
  int writers = 0;
  Tensor keep;  // the value, once the variable no longer holds it
};

struct LocalVar {
  std::mutex mu;  // guards slot.value and racing
  VarSlot slot;   // name, dtype and shape never change after creation
  /// Dropped from the container's directory (ResetContainers): a kernel
  /// holding it resolves the name again.
  std::atomic<bool> dropped{false};
  std::vector<RacingWrite> racing;  // one entry per buffer being written: as many as racing updates at most
};

/// Reads `vars` (a name may repeat) under all their locks at once: a
/// snapshot between locked updates. `check_only`: whether each has a value
/// (bool scalars). FailedPrecondition naming the first uninitialized one.
Status ReadLocalVars(const LocalVars& vars, bool check_only, std::vector<Tensor>* out);
/// ReadLocalVars for a caller that holds the locks of `vars` already.
Status ReadLockedVars(const LocalVars& vars, bool check_only, std::vector<Tensor>* out);
/// ReadLockedVars into out[0, vars.size()) (left unspecified on failure).
Status ReadLockedVars(const LocalVars& vars, bool check_only, Tensor* out);

/// The locks of some variables, taken in address order (each once) by Lock
/// or TryLock and given back by Unlock or when it goes. Making one allocates
/// only for more than 4 variables (LocalVars); locking and unlocking never do.
class VarLocks {
 public:
  explicit VarLocks(const LocalVars& vars);
  ~VarLocks() {
    if (held_) Unlock();
  }
  VarLocks(const VarLocks&) = delete;
  VarLocks& operator=(const VarLocks&) = delete;
  void Lock();
  /// All or none; true when it took them.
  bool TryLock();
  void Unlock();

 private:
  LocalVars order_;
  bool held_ = false;
};

/// Applies `req` whole (ApplyVarUpdate) to `vars`, whose locks the caller
/// holds; a value replaced while racing updates still write it is kept alive
/// until they end. `answer` and `sources` as ApplyVarUpdate's.
Status ApplyLocked(const VarUpdateRequest& req, const LocalVars& vars, Tensor* answer,
                   std::vector<Tensor>* sources, ComputePool* pool) noexcept;

/// ApplyLocked into the answer of a request by message (or a device's
/// kernel): its status, CountUpTo's value and, on a device (on_device), the
/// buffers the kernel writes (`vars`) and those it reads (`sources`).
void ApplyLockedAnswer(const VarUpdateRequest& req, const LocalVars& vars, VarUpdateResponse* r,
                       ComputePool* pool) noexcept;

/// Applies `req` to `vars` from this thread: whole under their locks, or,
/// when `use_locking` is false and the kind may race (MayRace), racing in
/// place (see above). `pool` shards the formula (from a pool job).
Status UpdateLocalVars(const VarUpdateRequest& req, const LocalVars& vars, bool use_locking,
                       Tensor* answer, ComputePool* pool) noexcept;

}  // namespace actorflow
