// CollectiveExecutor: one process's side of TensorFlow's collective ops
// (CollectiveReduce, CollectiveBcastSend/Recv; ops/collective/), run over the
// tensor transport (comm/tensor_transport.hpp), so collectives get what every
// tensor between tasks gets: the same-host path (cross-memory reads), TCP
// with TCP_NODELAY between machines, and mutual TLS where the cluster has it.
//
// A group is every task of this task's job that the process's membership
// has with an address (comm/membership.hpp; a session finds them:
// docs/distributed-design.md section 5): with `group_size` of them, ranked
// by task name. One member per task.
//
// All-reduce is a ring (reduce-scatter, then all-gather): the tensor is cut
// into group_size chunks, each rank sends one chunk and receives one per
// phase, 2 (group_size - 1) phases, so each process sends and receives about
// 2 (n-1)/n of the tensor whatever n is (the bandwidth-optimal schedule gloo
// and NCCL use). `final_op` Div divides each reduced chunk once, before it is
// gathered, so every rank ends with the same bits. A broadcast is one send
// from the source to every other member.
//
// Across machines with several tasks each, the all-reduce is hierarchical
// (comm/collective_layout.hpp, chosen from the membership's hosts when the
// group forms): the tasks of a host give their tensors to the host's leader
// over the same-host path, the leaders run the ring across hosts, and each
// leader shares the result back on its host (or, asked for, the host's tasks
// reduce a shard each and run a ring per shard); every rank still ends with
// the same bits. So each host's link carries 2 (H-1)/H of the tensor each
// way (H hosts) instead of that much per task.
// CollectiveExecutorOptions::algorithm (ACTORFLOW_ALLREDUCE) forces the flat
// ring or asks for the sharded layout.
//
// No negotiation per step and no order between collectives: every message
// names its (group, epoch, instance, execution, phase, sender), so instances
// may run in any order and at once on different ranks (buckets reduced as
// their gradients are ready), and a message that comes early waits in the
// group's inbox. Each execution of an instance is numbered per rank; ranks
// that run the same graph number them alike.
//
// Membership (epochs): before its first collective a group forms: every
// member sends JOIN(epoch) to the others and waits for theirs. A member whose
// collective was abandoned mid-way (cancelled, timed out) forms again at
// epoch + 1 at once; a member that sees a higher epoch drops what it had in
// flight (Aborted: "re-formed") and joins it. A member the membership says
// failed (its connection lost, as the transport saw it, or down by CAF's
// heartbeats as a session of this process watches it:
// master/local_master.cpp), replaced (a new incarnation or address, unless
// the group already met that incarnation) or removed fails the group's
// collectives with Unavailable, and the group forms again at its next
// collective. A member's JOIN counts only from the incarnation the
// membership knows. So a killed peer is an error within milliseconds, a hung one at
// the heartbeat timeout (the collective's own timeout where no session
// watches it), and a restarted one meets the others at a fresh epoch.
//
// Why not gloo (docs/distributed-design.md section 5): this path runs over
// mutual TLS, which Debian's gloo cannot, and shares the transport's same-host
// path (the peer's memory read, not copied through loopback TCP). Its speed
// beside gloo and torch.distributed, like for like over TCP and as it runs on
// one host, is what bench/bench_allreduce.cpp measures (bench/run_all.sh
// --only allreduce, allreduce_3: 2 ranks, and a ring of 3). On 2 shared cores
// (2026-11-28) it was far faster for small tensors (Debian's gloo pays about
// 4 ms a call here) and slower over TCP for the largest ring (64 MiB among 3:
// 0.43x gloo's).
//
// Checks: every data message carries its op's dtype, element count and
// bucket-plan hash; a mismatch is InvalidArgument on both sides, naming the
// instance and both values (and the first differing line of the two plans,
// whose text goes to every peer once per epoch): never a wrong sum, never a
// hang.
//
// Threading: one thread of its own (never a CAF worker: merging a 32 MiB
// chunk is milliseconds of compute), fed by a queue; it owns all state.
// Start, Cancel, the transport's callbacks and the membership's changes only
// enqueue.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/comm/collective_layout.hpp"
#include "actorflow/ops/collective_access.hpp"

namespace actorflow {

class Membership;
class TensorTransport;

struct CollectiveExecutorOptions {
  /// A collective with no timeout of its own fails with DeadlineExceeded
  /// after this (a hung peer); TensorFlow's default waits for ever.
  std::chrono::milliseconds default_timeout{60000};
  /// kAuto: the layout the hosts call for; kRing: always the flat ring;
  /// kSharded: a shard per task of a host where hierarchical (comm/collective_layout.hpp).
  /// A group runs hierarchically only when every member asks for the same.
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  /// An elastic group (group_size 0) forms only with at least this many
  /// members (a quorum): a task cut off from the others (one that was hung,
  /// or behind a partition) fails its collectives with Unavailable instead of
  /// training alone; its supervisor then finds the others again.
  int64_t elastic_min_members = 1;

  /// The options a process takes from its environment: ACTORFLOW_ALLREDUCE
  /// "auto" (or unset), "ring" or "sharded"; ACTORFLOW_MIN_WORKERS, the
  /// elastic quorum (1 to 100000; `actorflow launch --min-workers` sets it);
  /// anything else is InvalidArgument naming the variable.
  static Status FromEnvironment(CollectiveExecutorOptions* options);
};

class CollectiveExecutor final : public CollectiveAccess {
 public:
  /// `transport` null: only groups of one member (a process outside a
  /// cluster). `membership` (required with a transport; it outlives the
  /// executor): who the members are and which fail; `task` is its self().
  CollectiveExecutor(TensorTransport* transport, Membership* membership, std::string task,
                     CollectiveExecutorOptions options = {});
  ~CollectiveExecutor() override;  // Stop()
  CollectiveExecutor(const CollectiveExecutor&) = delete;
  CollectiveExecutor& operator=(const CollectiveExecutor&) = delete;

  /// Starts a collective; never blocks. `done` runs exactly once, on the
  /// executor's thread (or the caller's for a group of one or invalid
  /// parameters), with the result: for kReduce, `output` (allocated by the
  /// caller: the input's dtype and shape) filled in; for kBroadcastSend the
  /// input; for kBroadcastRecv the tensor received (`input` and `output` are
  /// unused). `id` (from NewId) names it for Cancel.
  void Start(uint64_t id, CollectiveParams params, Tensor input, Tensor output, Done done) override;
  uint64_t NewId() override;
  /// Ends collective `id` with `why` if it has not finished.
  void Cancel(uint64_t id, Status why) override;
  /// Fails what is pending with Cancelled and joins the thread. Idempotent.
  void Stop();

  // The handler of the transport's collective channel (Channel::kCollective)
  // routes its messages here; their meta is a CollectiveMessage
  // (comm/collective_message.hpp).
  /// The channel's check: DataLoss unless `meta` is a well-formed header.
  static Status CheckMessage(const std::string& from_task, const std::string& meta);
  void Deliver(const std::string& from_task, std::string meta, Tensor value);
  void Rejected(Status status);

  /// Epochs formed (for tests).
  uint64_t formed_count() const;
  /// Collectives started and not yet answered, as the executor's thread last
  /// left them: each waits for its group to form (or its members to be
  /// found) or for its peers' data (for tests).
  size_t pending_count() const;
  /// How group `group_key`'s all-reduce ran when it last formed: "flat" or
  /// "hierarchical: hosts {0,1} {2,3}" (its ranks by host); "" before it
  /// formed (for tests and benchmarks).
  std::string layout(int64_t group_key) const;
  /// How many members group `group_key` had when it last formed, and who
  /// (0 and none before it formed): an elastic group's live count, for a
  /// training loop's progress and its log of membership changes.
  int64_t formed_size(int64_t group_key, std::vector<std::string>* members = nullptr) const;
  /// When this rank last started an all-reduce of group `group_key` that
  /// belongs to a bucket plan (its gradients ready: AllReduceGradients), or
  /// the epoch of steady_clock before any: a training loop's measure of its
  /// own work in a step, apart from the wait for the others (stragglers).
  std::chrono::steady_clock::time_point last_bucket_started(int64_t group_key) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};



}  // namespace actorflow
