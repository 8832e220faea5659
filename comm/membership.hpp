// Membership: who is in the cluster, as this process knows it. One object per
// process (the Runtime's), the only holder of the cluster's tasks: their
// transport addresses, incarnations, hosts and liveness. Nothing else keeps a
// copy; everything that needs to know reads it or subscribes to its changes.
//
// Writers (each says what it learned):
//   - a resolver: the ClusterSpec of a session (names only: address unknown),
//     later Slurm or Kubernetes;
//   - a master session: each task's status as the task answered it
//     (master/cluster_view.hpp), and a task it saw go down (CAF's monitor);
//   - a task's worker service: the peers a master's session names
//     (actors/task_actor.hpp);
//   - the transport: a connection to a task that failed.
// Readers and subscribers: the transport (where to connect, which incarnation
// a sender must be), the collective groups (the members of a job, a member
// that failed or was replaced), the master (incarnation of a task), the
// supervisor.
//
// Changes: a task is added (first heard of), replaced (a new incarnation or
// address: the task restarted or moved; its old connections and collective
// epochs end), failed (liveness only: its record stays, so a replacement is
// told from a failure), or removed (it left the cluster). Each change bumps
// version() and is delivered to every subscriber, in the order made, on the
// writer's thread after the lock is released: a listener must not block and
// must not write to the membership (it hands the change to its own thread).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

struct TaskRecord {
  std::string name;  // "/job:worker/replica:0/task:1"
  /// Where its tensor transport listens, as peers reach it ("" / 0: not yet known).
  std::string host;
  uint16_t port = 0;
  /// Its process's incarnation (core/ids.hpp); 0 while not yet known.
  uint64_t incarnation = 0;
  enum class Liveness : uint8_t { kUnknown, kAlive, kFailed };
  Liveness liveness = Liveness::kUnknown;
  Status failure;  // why it failed (liveness kFailed)

  /// "/job:worker" of "/job:worker/replica:0/task:1".
  std::string job() const;
  /// What a task says of itself (for Update): where its transport listens, its incarnation.
  static TaskRecord At(std::string name, std::string host, uint16_t port, uint64_t incarnation);
};

struct MembershipChange {
  enum class Kind : uint8_t { kAdded, kReplaced, kFailed, kRemoved };
  Kind kind = Kind::kAdded;
  TaskRecord task;      // as it is now (kRemoved: as it was)
  TaskRecord previous;  // kReplaced, kFailed: as it was before
  uint64_t version = 0;

  /// What the old record named ended: kRemoved, or kReplaced by another
  /// incarnation or address (its connections and collective epochs end). Not
  /// a failed task alive again at the same incarnation and address (kReplaced
  /// too: its liveness changed, nothing else).
  bool Superseded() const;
};

const char* MembershipChangeName(MembershipChange::Kind kind);

class Membership {
 public:
  /// `self`: this process's task and incarnation (always a member, alive).
  Membership(std::string self, uint64_t incarnation);
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  const std::string& self() const { return self_; }
  uint64_t self_incarnation() const { return self_incarnation_; }

  // --- Writers ---------------------------------------------------------
  /// Adds a task known by name only (a resolver's cluster description);
  /// nothing when it is known.
  void AddName(const std::string& task);
  /// What `task` said of itself (address, incarnation): adds it, or replaces
  /// it when its incarnation or address changed (a restart: kReplaced), or
  /// marks a failed one alive again at the same incarnation (kReplaced, not
  /// Superseded). A task known without an address until now (by name, or
  /// this process before its transport listened) is kAdded. InvalidArgument
  /// for an empty name or incarnation 0; for this process's own task, only
  /// its own incarnation is accepted (FailedPrecondition otherwise).
  Status Update(const TaskRecord& task);
  /// `task` (incarnation `incarnation`, 0: whichever) is down: its
  /// connections and collectives fail with `why`. Nothing for an unknown
  /// task, an older incarnation than the one known, or this process.
  void MarkFailed(const std::string& task, uint64_t incarnation, const Status& why);
  /// `task` left the cluster.
  void Remove(const std::string& task);

  // --- Readers ---------------------------------------------------------
  std::optional<TaskRecord> Find(const std::string& task) const;
  /// Whether `task` is a member whose address is known (a transport can reach it).
  bool HasAddress(const std::string& task) const;
  /// Every task, sorted by name.
  std::vector<TaskRecord> Tasks() const;
  /// The names of `job`'s tasks ("/job:worker"), sorted.
  std::vector<std::string> TasksOfJob(const std::string& job) const;
  /// OK when `incarnation` is the one known for `task`; Aborted ("task T
  /// restarted ...: its state is gone") when another is known; NotFound when
  /// the task is not a member.
  Status CheckIncarnation(const std::string& task, uint64_t incarnation) const;
  uint64_t version() const;

  // --- Subscriptions ---------------------------------------------------
  using Listener = std::function<void(const MembershipChange&)>;
  /// Calls `listener` for every later change; the id ends it.
  uint64_t Subscribe(Listener listener);
  /// After it returns, the listener is not running and never runs again.
  void Unsubscribe(uint64_t id);

 private:
  // One write: `edit` changes tasks_ under mu_ and returns the change it
  // made (none: nothing new); the change gets the next version and reaches
  // the listeners in that order, after mu_ is released.
  template <class Edit>
  void Change(Edit edit) {
    std::lock_guard<std::recursive_mutex> order(notify_mu_);
    std::optional<MembershipChange> change;
    {
      std::lock_guard<std::mutex> lock(mu_);
      change = edit();
      if (change) change->version = ++version_;
    }
    if (change) Publish(*change);
  }
  void Publish(const MembershipChange& change);

  const std::string self_;
  const uint64_t self_incarnation_;
  mutable std::mutex mu_;  // guards tasks_, version_
  std::map<std::string, TaskRecord> tasks_;
  uint64_t version_ = 0;
  // Listeners are called under notify_mu_ (not mu_): in the order of changes, never after Unsubscribe.
  std::recursive_mutex notify_mu_;
  std::map<uint64_t, Listener> listeners_;  // guarded by notify_mu_
  uint64_t next_listener_ = 1;               // guarded by notify_mu_
};

/// Aborted: "task T restarted (incarnation N, this session knew M): its state
/// is gone; open a new session". The one message for a restarted task.
Status TaskRestartedError(const std::string& task, uint64_t now, uint64_t known);

}  // namespace actorflow
