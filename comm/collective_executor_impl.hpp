// The collective executor's state and steps (comm/collective_executor.hpp),
// shared by its three parts: collective_executor.cpp (the thread, the ops'
// lives), collective_group.cpp (how groups form from the membership, elastic
// ones too) and collective_exchange.cpp (the data: rings, exchanges,
// broadcasts, and the checks of what arrives). Internal to comm/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "actorflow/comm/collective_executor.hpp"
#include "actorflow/comm/collective_layout.hpp"
#include "actorflow/comm/collective_message.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {
namespace collective_internal {

using Clock = std::chrono::steady_clock;

// Messages go on the transport's collective channel, each with a
// CollectiveMessage header as its meta (comm/collective_message.hpp): JOINs
// (no tensor), bucket plans' text (a string scalar) and data (chunks and
// broadcasts).

// Phases of a hierarchical all-reduce's messages besides the rings' (0 ..
// 2 (H-1) - 1 across H hosts): a tensor (or shard) for another task of the
// host to sum (to the leader, or to the task whose shard it is), and a
// reduced one shared back on the host (comm/collective_layout.hpp).
constexpr int64_t kHostReducePhase = int64_t{1} << 40;
constexpr int64_t kHostSharePhase = kHostReducePhase + 1;

/// The job of a task name ("/job:worker/replica:0/task:1" -> "worker").
std::string JobOf(const std::string& task);
const char* KindName(CollectiveKind k);

}  // namespace collective_internal

struct CollectiveExecutor::Impl {
  using Clock = collective_internal::Clock;
  struct Msg {
    DataType dtype = DT_INVALID;
    int64_t elements = 0;
    uint64_t plan = 0;
    Tensor value;
  };
  // (instance, execution, phase, from rank)
  using InboxKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;

  struct Op {
    uint64_t id = 0;
    CollectiveParams p;
    Tensor input, output;
    Done done;
    Clock::time_point deadline;
    uint64_t plan_hash = 0;
    bool running = false;
    bool syncs = false;  // a CollectiveBcastFirst: its success marks the group's members synced
    uint64_t epoch = 0;  // a syncing op's: the epoch it synced
    int64_t execution = 0;
    int64_t phase = 0;  // the next phase whose message it waits for
    std::vector<Tensor> chunks;
    // An all-reduce's stage (comm/collective_layout.hpp): kRing (a ring or
    // an exchange over `sum`), kGather (summing what the host's tasks send:
    // a leader their tensors, a sharded task its shard of theirs), kShare
    // (taking what they share back: a task its leader's result, a sharded
    // task the others' reduced shards).
    enum Stage { kRing, kGather, kShare } stage = kRing;
    Tensor sum;          // what this rank brings to the ring: its input, its host's sum or its shard's
    int64_t local = 0;   // kGather, kShare: the index in Group::local of the task whose message is next
  };

  struct Group {
    int64_t key = 0, size = 0;
    bool configured = false;  // size and elastic set (by its first op or JOIN)
    // Elastic (group_size 0): the members are the job's tasks not known to
    // have failed, `size` how many formed it; `digest` hashes them (names and
    // incarnations) and every member's JOIN must carry the same.
    bool elastic = false;
    uint64_t digest = 0;
    // The members' digest when this rank's last CollectiveBcastFirst
    // succeeded: an elastic all-reduce runs only in a group whose members
    // have synced their state since it last changed (else a survivor that
    // finished a step before a member died, and one that did not, would go
    // on with different variables; a joiner with none).
    uint64_t synced_digest = 0;
    uint64_t synced_epoch = 0;  // the epoch of that sync: every re-form needs another
    // Elastic: the rank a CollectiveBcastFirst sends from: of the members
    // whose last sync is the latest (the state the group trained last), the
    // first; rank 0 when none has synced. Never a joiner (no sync yet) nor
    // a member that was dropped and came back (an older sync) while one that
    // trained on is there.
    int64_t source = 0;
    // A task of the job not in the group JOINed it (a worker that joins or
    // came back): the group forms again, with it, at its next collective
    // (a step boundary, or the step fails and syncs).
    bool grow_pending = false;
    // kAwaiting: fewer tasks of the job known than group_size (a session
    // has not found them yet): looked at again every kResend.
    enum State { kNone, kAwaiting, kForming, kFormed, kBroken } state = kNone;
    std::string known;  // kAwaiting: the tasks known, for the timeout's message
    Status broken;  // why forming failed (state kBroken)
    bool formed_once = false;  // a new epoch then fails every collective begun before it
    uint64_t epoch = 0;
    std::vector<std::string> members;
    int64_t rank = -1;
    std::map<int64_t, int64_t> next_execution;  // per instance
    std::map<InboxKey, Msg> inbox;
    std::map<std::pair<int64_t, uint64_t>, std::string> peer_plans;  // (rank, hash) -> text
    std::set<uint64_t> plans_sent;
    std::set<uint64_t> ops;  // waiting and running, in start order
    std::map<std::string, uint64_t> incarnations;  // the members' when it formed
    // The layout this rank derived from the members' hosts when it formed
    // the epoch, and whether every member derived the same (then the
    // all-reduce is hierarchical): comm/collective_layout.hpp.
    CollectiveLayout layout;
    bool hierarchical = false;
    std::vector<int64_t> ring;      // the ring's ranks: every rank, or the hosts' leaders
    int64_t ring_pos = -1;          // this rank's place in `ring` (-1: not in it)
    std::vector<int64_t> local;     // hierarchical: this host's ranks, the leader first
    int64_t local_pos = 0;          // this rank's index in `local`
  };
  // A member's latest JOIN for a group: its epoch, incarnation and layout hash.
  struct Joined {
    uint64_t epoch = 0, incarnation = 0, layout = 0;
    uint64_t digest = 0;  // an elastic group's members as it counts them
    int64_t size = 0;
    uint64_t synced = 0;  // elastic: the epoch of its last sync (its JOIN's `execution`)
  };
  static constexpr std::chrono::milliseconds kResend{250};

  Impl(TensorTransport* t, Membership* m, std::string task_name, CollectiveExecutorOptions o)
      : transport(t), membership(m), task(std::move(task_name)), job(collective_internal::JobOf(task)), options(o) {
    thread = std::thread([this] { Loop(); });
    // After the thread: a change only posts.
    if (membership) subscription = membership->Subscribe([this](const MembershipChange& c) { OnChange(c); });
  }

  // --- the queue -----------------------------------------------------------
  // False (and `fn` not queued) once stopping.
  bool Post(std::function<void()> fn);

  void Loop();

  void StopNow();

  // --- ops -----------------------------------------------------------------
  std::string Describe(const Op& op) const;

  void Finish(uint64_t id, const Status& s, Tensor result);

  // Fails `id`; one that had begun exchanging leaves its peers mid-way, so the
  // group forms again at once and they fail fast instead of at their timeout.
  void Fail(uint64_t id, const Status& s);

  void FailGroup(Group& g, const Status& s, bool only_running);

  void FailAll(const Status& s);

  void ExpireDeadlines();

  void StartOp(Op op);

  // --- membership ----------------------------------------------------------
  void Form(Group& g, uint64_t epoch, bool new_members_only = false);

  bool SendJoin(Group& g, const std::string& to, bool forming);

  // JOINs go again to whoever has not answered (one sent before the peer
  // knew this task was dropped by its transport).
  void ResendJoins();

  // Whether member `m` joined group `g` at its epoch, as the incarnation the membership knows.
  bool JoinedNow(const Group& g, const std::string& m) const;

  // Where this task's transport is reached ("": not known, it listens on every address).
  std::string SelfHost() const;

  void MaybeFormed(Group& g);

  void OnJoin(int64_t group, int64_t size, uint64_t epoch, bool forming, const std::string& from, uint64_t incarnation,
              uint64_t layout, bool elastic = false, uint64_t digest = 0, uint64_t synced = 0);

  // The membership's changes (on the writer's thread: posted). A member
  // failed, replaced or removed fails its groups' collectives.
  void OnChange(const MembershipChange& c);

  // `peer` failed (or was replaced by `incarnation`, not 0): its groups'
  // collectives fail with Unavailable; a group that has already met that
  // incarnation is left alone.
  void OnPeerFailed(const std::string& peer, const Status& s, uint64_t incarnation = 0);

  // Whether `incarnation` of member `m` is the one the membership knows.
  bool CurrentMember(const std::string& m, uint64_t incarnation) const {
    return membership->CheckIncarnation(m, incarnation).ok();
  }
  // Whether an elastic group's Form would count task `m` at `incarnation`:
  // of this job, with an address, not held failed, that incarnation.
  bool Countable(const std::string& m, uint64_t incarnation) const {
    if (collective_internal::JobOf(m) != job) return false;
    auto t = membership->Find(m);
    return t && !t->host.empty() && t->port != 0 && t->liveness != TaskRecord::Liveness::kFailed &&
           t->incarnation == incarnation;
  }

  // A collective message this task's transport could not take: most often
  // from a member that restarted, which this process does not know yet (its
  // JOINs are dropped until a session finds the new incarnation). What was
  // exchanging fails, and so does what waits for the group to form, with the
  // transport's status (Aborted: a supervisor re-creates its session, which
  // finds the task again, and the step runs again).
  void OnRejected(const Status& s);

  // --- data ----------------------------------------------------------------
  Status SendTo(const Group& g, int64_t rank, const Op& op, int64_t phase, const Tensor& value);

  void Launch(Group& g, Op& op);

  // The message an all-reduce or broadcast waits for next: its phase and sender.
  std::pair<int64_t, int64_t> Awaited(const Group& g, const Op& op) const;
  // What it waits for, in words (for the timeout's message).
  std::string Waiting(const Group& g, const Op& op) const;

  // The ring (or a two-rank exchange) over `op.sum` begins: the first send.
  Status StartRing(Group& g, Op& op);
  // The ring's result (op.chunks, in order) is in: flat, it is the output;
  // a leader shares it with its host; a sharded task puts its shard in the
  // output, shares it with its host and waits for theirs. Then done.
  void Reduced(Group& g, Op& op);
  // The next task of this host (index in Group::local from `i`, this one skipped) a sharded task hears from.
  int64_t NextLocal(const Group& g, int64_t i) const;

  // Takes the messages that have come for `id`, in phase order.
  void Progress(Group& g, uint64_t id);

  void OnData(const std::string& sender, const CollectiveMessage& m, Tensor value);

  void OnMessage(const std::string& from, const CollectiveMessage& m, Tensor value);

  TensorTransport* transport;
  Membership* membership;
  uint64_t subscription = 0;  // to membership's changes, until StopNow
  const std::string task;
  const std::string job;
  const CollectiveExecutorOptions options;
  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> formed{0};
  std::atomic<size_t> held{0};  // ops.size(), for pending_count()
  mutable std::mutex layouts_mu;  // guards `layouts`, `formed_members`, `bucket_started`
  std::map<int64_t, std::string> layouts;  // group -> its layout when it last formed, for layout()
  std::map<int64_t, std::vector<std::string>> formed_members;  // group -> its members then, for formed_size()
  // group -> when this rank last started an all-reduce of a bucket plan, for last_bucket_started()
  std::map<int64_t, std::chrono::steady_clock::time_point> bucket_started;

  std::mutex mu;  // guards `events` and `stopping`
  std::condition_variable cv;
  std::deque<std::function<void()>> events;
  std::atomic<bool> stopping{false};
  std::thread thread;

  // The executor thread's own (after Stop, the stopping thread's).
  std::map<uint64_t, Op> ops;
  std::map<int64_t, Group> groups;
  std::map<std::string, std::pair<uint64_t, uint64_t>> join_epoch;  // task -> (highest epoch joined, incarnation)
  std::map<std::pair<int64_t, std::string>, Joined> joins;           // (group, task) -> its latest JOIN
  Clock::time_point resend_at = Clock::time_point::max();
};

}  // namespace actorflow
