// CollectiveAccess: how collective kernels (ops/collective/) reach the
// process's collective executor (comm/collective_executor.hpp, a layer above
// ops/), as RendezvousAccess is how _Send and _Recv reach the rendezvous: the
// kernel describes the collective (CollectiveParams, with the arithmetic of
// its merge_op and final_op as a CollectiveReduction built from the ops'
// math: ops/collective/collective_reduction.hpp) and the executor runs it.
//
// Contract: Start never blocks and calls `done` exactly once (on the
// executor's thread, or the caller's for a group of one or invalid
// parameters); Cancel ends a collective that has not finished; all three are
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

/// kBroadcastFirst: every member runs the same op with a tensor; one member
/// sends its tensor and every member outputs it: in an elastic group the
/// first (by name) of the members whose last sync is the latest (never a
/// joiner or a member that was dropped while another trained on), else
/// rank 0 of the group as formed.
enum class CollectiveKind : uint8_t { kReduce, kBroadcastSend, kBroadcastRecv, kBroadcastFirst };

/// The arithmetic of an all-reduce: TensorFlow's merge_op and final_op. The
/// executor owns no arithmetic of its own: the op's kernel gives it the ops'
/// math (ops/collective/collective_reduction.hpp builds it from the Add, Mul,
/// Minimum, Maximum and Div kernels' functors), so a collective computes what
/// those kernels compute (integers wrap in two's complement), as TensorFlow's
/// CollectiveReduce runs its merge and final ops as kernels.
///
/// Contract: const and thread-safe (the executor's thread calls it; one
/// instance is shared by every run of the op); tensors of one dtype the
/// reduction accepts (Accepts) and equal element counts.
class CollectiveReduction {
 public:
  virtual ~CollectiveReduction() = default;
  /// Whether it can reduce tensors of `dtype`.
  virtual bool Accepts(DataType dtype) const = 0;
  /// out = merge_op(a, b), elementwise; `out` may be `a` or `b`. Commutative,
  /// so two ranks merging each other's tensors get the same bits.
  virtual void Merge(const Tensor& a, const Tensor& b, Tensor* out) const = 0;
  /// t = final_op(t, group_size), elementwise, in place (nothing for Id).
  virtual void Finalize(Tensor* t, int64_t group_size) const = 0;
  /// "Add/Id", "Add/Div", ...: for messages.
  virtual std::string DebugString() const = 0;
};

struct CollectiveParams {
  CollectiveKind kind = CollectiveKind::kReduce;
  std::string node;  // the op's node name, for messages
  int64_t group_size = 1;  // 0: elastic (kReduce, kBroadcastFirst): the job's tasks not known to have failed
  int64_t group_key = 0;
  int64_t instance_key = 0;
  /// kReduce: merge_op and final_op (required; shared by every run of the op).
  std::shared_ptr<const CollectiveReduction> reduction;
  /// The bucket plan this op belongs to (client/train/all_reduce.hpp), null
  /// none: shared, not copied, by every run of the op.
  std::shared_ptr<const std::string> plan;
  /// CollectivePlanHash(*plan), computed once by the op's kernel (0: the
  /// executor computes it).
  uint64_t plan_hash = 0;
  /// What a kBroadcastRecv expects (the sender's must match).
  DataType dtype = DT_FLOAT;
  TensorShape shape;
  /// 0: the executor's default.
  std::chrono::milliseconds timeout{0};
};

class CollectiveAccess {
 public:
  using Done = std::function<void(const Status& status, Tensor result)>;
  virtual ~CollectiveAccess() = default;
  /// Starts a collective; never blocks. `done` runs exactly once with the
  /// result: for kReduce, `output` (allocated by the caller: the input's dtype
  /// and shape) filled in; for kBroadcastSend the input; for kBroadcastRecv
  /// the tensor received (`input` and `output` are unused). `id` (from NewId)
  /// names it for Cancel.
  virtual void Start(uint64_t id, CollectiveParams params, Tensor input, Tensor output, Done done) = 0;
  virtual uint64_t NewId() = 0;
  /// Ends collective `id` with `why` if it has not finished.
  virtual void Cancel(uint64_t id, Status why) = 0;
};

/// The hash ranks compare for bucket plans (FNV-1a 64 of the text; never 0
/// for a plan that is not empty).
uint64_t CollectivePlanHash(const std::string& plan);

}  // namespace actorflow
