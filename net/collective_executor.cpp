#include "net/collective_executor.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <Eigen/Core>

#include "core/allocator.hpp"
#include "net/tensor_transport.hpp"

namespace actorflow {

namespace {

using Clock = std::chrono::steady_clock;

// Messages are rendezvous keys (net/rendezvous_key.hpp) from the sender's
// task (and incarnation) to the receiver's, step id kStepId, whose tensor
// name says what they are:
//   coll|j|<group>|<size>|<epoch>|<forming>      JOIN, an int64 scalar; forming 1: the sender
//                                                still waits for JOINs (a formed member answers it)
//   coll|p|<group>|<epoch>|<plan hash>|<from rank>  a bucket plan's text, a string scalar
//   coll|d|<group>|<epoch>|<instance>|<execution>|<phase>|<from rank>|<dtype>|<elements>|<plan hash>
//                                                a chunk (phase >= 0) or a broadcast (phase -1)
constexpr const char* kPrefix = "coll|";

std::vector<std::string> SplitKey(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

bool ToInt(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size()) return false;
    *out = v;
    return true;
  } catch (...) {
    return false;
  }
}

bool ToU64(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  try {
    size_t used = 0;
    *out = std::stoull(s, &used);
    return used == s.size();
  } catch (...) {
    return false;
  }
}

std::string JobOf(const std::string& task) {
  const size_t start = task.find("/job:");
  if (start == std::string::npos) return "";
  const size_t end = task.find('/', start + 5);
  return task.substr(start + 5, end == std::string::npos ? std::string::npos : end - start - 5);
}

// out = a (+) b, elementwise; out may be a or b. Every merge op is
// commutative, so two ranks merging each other's tensors get the same bits.
// Eigen's maps: vectorized (a plain loop is not, at -O2: 2.5x slower here).
template <class T>
void MergeInto(MergeOp op, const T* a, const T* b, T* out, int64_t n) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<const Array> x(a, n), y(b, n);
  Eigen::Map<Array> z(out, n);
  switch (op) {
    case MergeOp::kAdd: z = x + y; break;
    case MergeOp::kMul: z = x * y; break;
    case MergeOp::kMin: z = x.min(y); break;
    case MergeOp::kMax: z = x.max(y); break;
  }
}

template <class T>
void DivideBy(T* x, int64_t n, int64_t by) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<Array> z(x, n);
  z = z / static_cast<T>(by);
}

void Merge(MergeOp op, const Tensor& a, const Tensor& b, Tensor* out) {
  const int64_t n = a.NumElements();
  switch (a.dtype()) {
    case DT_FLOAT: return MergeInto(op, a.data<float>(), b.data<float>(), out->data<float>(), n);
    case DT_DOUBLE: return MergeInto(op, a.data<double>(), b.data<double>(), out->data<double>(), n);
    case DT_INT32: return MergeInto(op, a.data<int32_t>(), b.data<int32_t>(), out->data<int32_t>(), n);
    case DT_INT64: return MergeInto(op, a.data<int64_t>(), b.data<int64_t>(), out->data<int64_t>(), n);
    default: return;
  }
}

void Divide(Tensor* t, int64_t by) {
  const int64_t n = t->NumElements();
  switch (t->dtype()) {
    case DT_FLOAT: return DivideBy(t->data<float>(), n, by);
    case DT_DOUBLE: return DivideBy(t->data<double>(), n, by);
    case DT_INT32: return DivideBy(t->data<int32_t>(), n, by);
    case DT_INT64: return DivideBy(t->data<int64_t>(), n, by);
    default: return;
  }
}

bool Reducible(DataType t) { return t == DT_FLOAT || t == DT_DOUBLE || t == DT_INT32 || t == DT_INT64; }

const char* KindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kReduce: return "CollectiveReduce";
    case CollectiveKind::kBroadcastSend: return "CollectiveBcastSend";
    case CollectiveKind::kBroadcastRecv: return "CollectiveBcastRecv";
  }
  return "collective";
}

// The first line where two plans differ, for the mismatch error.
std::string FirstDifference(const std::string& mine, const std::string& theirs, const std::string& peer) {
  std::istringstream a(mine), b(theirs);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la));
    const bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "the plans hash differently";
    if (!ha) la = "(nothing)";
    if (!hb) lb = "(nothing)";
    if (!ha || !hb || la != lb)
      return "first difference at line " + std::to_string(line) + ": this task has '" + la + "', " + peer + " has '" +
             lb + "'";
  }
}

}  // namespace

uint64_t CollectivePlanHash(const std::string& plan) {
  if (plan.empty()) return 0;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : plan) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

// The tensor name of a key (its fourth field), or "" when it has not the layout.
static std::string_view NameOfKey(const std::string& key) {
  size_t a = 0;
  for (int i = 0; i < 3; ++i) {
    a = key.find(';', a);
    if (a == std::string::npos) return {};
    ++a;
  }
  const size_t b = key.find(';', a);
  if (b == std::string::npos) return {};
  return std::string_view(key).substr(a, b - a);
}

bool CollectiveExecutor::IsCollectiveKey(const RendezvousKey& key) { return NameOfKey(key.str()).rfind(kPrefix, 0) == 0; }

struct CollectiveExecutor::Impl {
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
    int64_t execution = 0;
    int64_t phase = 0;  // the next phase whose message it waits for
    std::vector<Tensor> chunks;
  };

  struct Group {
    int64_t key = 0, size = 0;
    enum State { kNone, kForming, kFormed, kBroken } state = kNone;
    uint64_t epoch = 0;
    std::vector<std::string> members;
    int64_t rank = -1;
    std::map<int64_t, int64_t> next_execution;  // per instance
    std::map<InboxKey, Msg> inbox;
    std::map<std::pair<int64_t, uint64_t>, std::string> peer_plans;  // (rank, hash) -> text
    std::set<uint64_t> plans_sent;
    std::set<uint64_t> ops;  // waiting and running, in start order
    std::map<std::string, uint64_t> incarnations;  // the members' when it formed
  };
  static constexpr std::chrono::milliseconds kResend{250};

  RendezvousKey Key(const std::string& to, const std::string& name) const {
    return MakeRendezvousKey(task + "/device:CPU:0", transport->incarnation(), to + "/device:CPU:0", name);
  }

  Impl(TensorTransport* t, std::string task_name, CollectiveExecutorOptions o)
      : transport(t), task(std::move(task_name)), job(JobOf(task)), options(o) {
    thread = std::thread([this] { Loop(); });
  }

  // --- the queue -----------------------------------------------------------
  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      events.push_back(std::move(fn));
    }
    cv.notify_one();
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      if (events.empty()) {
        Clock::time_point next = resend_at;
        for (const auto& [id, op] : ops) next = std::min(next, op.deadline);
        if (next == Clock::time_point::max()) {
          cv.wait(lock);
        } else {
          cv.wait_until(lock, next);
        }
        lock.unlock();
        ExpireDeadlines();
        lock.lock();
        continue;
      }
      std::function<void()> fn = std::move(events.front());
      events.pop_front();
      lock.unlock();
      try {
        fn();
      } catch (const std::bad_alloc&) {
        FailAll(errors::ResourceExhausted("collective executor of ", task, ": out of memory"));
      }
      lock.lock();
    }
  }

  void StopNow() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      stopping = true;
      events.clear();
    }
    cv.notify_one();
    if (thread.joinable()) thread.join();
    FailAll(errors::Cancelled("collective executor of ", task, " stopped"));
  }

  // --- ops -----------------------------------------------------------------
  std::string Describe(const Op& op) const {
    return std::string(KindName(op.p.kind)) + " '" + op.p.node + "' (group " + std::to_string(op.p.group_key) +
           ", instance " + std::to_string(op.p.instance_key) + ")";
  }

  void Finish(uint64_t id, const Status& s, Tensor result) {
    auto it = ops.find(id);
    if (it == ops.end()) return;
    Op op = std::move(it->second);
    ops.erase(it);
    auto g = groups.find(op.p.group_key);
    if (g != groups.end()) {
      g->second.ops.erase(id);
      if (op.running)  // its messages are no use to anyone now
        for (auto m = g->second.inbox.begin(); m != g->second.inbox.end();) {
          if (std::get<0>(m->first) == op.p.instance_key && std::get<1>(m->first) == op.execution) {
            m = g->second.inbox.erase(m);
          } else {
            ++m;
          }
        }
    }
    if (s.ok()) completed.fetch_add(1);
    op.done(s, s.ok() ? std::move(result) : Tensor());
  }

  // Fails `id`; one that had begun exchanging leaves its peers mid-way, so the
  // group forms again at once and they fail fast instead of at their timeout.
  void Fail(uint64_t id, const Status& s) {
    auto it = ops.find(id);
    if (it == ops.end()) return;
    const bool running = it->second.running;
    const int64_t key = it->second.p.group_key;
    Finish(id, s, Tensor());
    if (running) {
      Group& g = groups[key];
      if (g.state == Group::kFormed) Form(g, g.epoch + 1);
    }
  }

  void FailGroup(Group& g, const Status& s, bool only_running) {
    const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());
    for (uint64_t id : ids) {
      auto it = ops.find(id);
      if (it != ops.end() && (!only_running || it->second.running)) Finish(id, s, Tensor());
    }
  }

  void FailAll(const Status& s) {
    std::vector<uint64_t> ids;
    for (const auto& [id, op] : ops) ids.push_back(id);
    for (uint64_t id : ids) Finish(id, s, Tensor());
  }

  void ExpireDeadlines() {
    if (stopping) return;
    const auto now = Clock::now();
    if (resend_at <= now) ResendJoins();
    std::vector<uint64_t> expired;
    for (const auto& [id, op] : ops)
      if (op.deadline <= now) expired.push_back(id);
    for (uint64_t id : expired) {
      auto it = ops.find(id);
      if (it == ops.end()) continue;
      const Op& op = it->second;
      const Group& g = groups[op.p.group_key];
      std::string waiting;
      if (!op.running) {
        waiting = "the group to form (epoch " + std::to_string(g.epoch) + "; joined:";
        for (const auto& m : g.members)
          if (m == task || (join_epoch.count(m) && join_epoch[m].first == g.epoch)) waiting += " " + m;
        waiting += ")";
      } else {
        const int64_t from = op.p.kind == CollectiveKind::kBroadcastRecv ? -1 : (g.rank + g.size - 1) % g.size;
        waiting = "phase " + std::to_string(op.phase) + " from " + (from < 0 ? "the source" : g.members[from]);
      }
      const double secs = std::chrono::duration<double>(op.p.timeout.count() > 0 ? op.p.timeout
                                                                                 : options.default_timeout)
                              .count();
      Fail(id, errors::DeadlineExceeded(Describe(op), " on ", task, ": still waiting for ", waiting, " after ", secs,
                                        " s (a hung or absent peer)"));
    }
  }

  void StartOp(Op op) {
    if (!transport) {
      op.done(errors::FailedPrecondition(Describe(op), ": group of ", op.p.group_size, " but task ", task,
                                         " is not in a cluster"),
              Tensor());
      return;
    }
    Group& g = groups[op.p.group_key];
    if (g.size == 0) {
      g.key = op.p.group_key;
      g.size = op.p.group_size;
    }
    if (g.size != op.p.group_size) {
      op.done(errors::InvalidArgument(Describe(op), ": group_size ", op.p.group_size, ", but group ", g.key,
                                      " has size ", g.size, " in this process"),
              Tensor());
      return;
    }
    const auto timeout = op.p.timeout.count() > 0 ? op.p.timeout : options.default_timeout;
    op.deadline = Clock::now() + timeout;
    op.plan_hash = CollectivePlanHash(op.p.plan);
    const uint64_t id = op.id;
    ops.emplace(id, std::move(op));
    g.ops.insert(id);
    if (g.state == Group::kFormed) {
      Launch(g, ops[id]);
    } else if (g.state != Group::kForming) {
      Form(g, g.epoch + 1);
    }
  }

  // --- membership ----------------------------------------------------------
  void Form(Group& g, uint64_t epoch) {
    FailGroup(g, errors::Aborted("collective group ", g.key, " re-formed at epoch ", epoch, " (a member's ",
                                 "collective failed or it restarted); the step may be run again"),
              /*only_running=*/true);
    std::vector<std::string> members{task};
    for (const auto& p : transport->Peers())
      if (JobOf(p) == job) members.push_back(p);
    std::sort(members.begin(), members.end());
    g.epoch = epoch;
    g.inbox.clear();
    g.next_execution.clear();
    g.peer_plans.clear();
    g.plans_sent.clear();
    if (static_cast<int64_t>(members.size()) != g.size) {
      std::string list;
      for (const auto& m : members) list += " " + m;
      g.state = Group::kBroken;
      FailGroup(g, errors::InvalidArgument("collective group ", g.key, " has group_size ", g.size, ", but job '", job,
                                           "' has ", members.size(), " tasks this process knows:", list,
                                           " (a group is every task of the job; a session finds them)"),
                false);
      return;
    }
    g.members = std::move(members);
    g.rank = std::find(g.members.begin(), g.members.end(), task) - g.members.begin();
    g.state = Group::kForming;
    g.incarnations.clear();
    for (const auto& m : g.members) {
      if (m == task) continue;
      if (!SendJoin(g, m, true)) return;
    }
    resend_at = Clock::now() + kResend;
    MaybeFormed(g);
  }

  bool SendJoin(Group& g, const std::string& to, bool forming) {
    const std::string name = std::string(kPrefix) + "j|" + std::to_string(g.key) + "|" + std::to_string(g.size) + "|" +
                             std::to_string(g.epoch) + (forming ? "|1" : "|0");
    const Status s = transport->Send(to, CollectiveExecutor::kStepId, Key(to, name), Tensor::Scalar<int64_t>(0), false);
    if (s.ok()) return true;
    g.state = Group::kBroken;
    FailGroup(g, errors::Unavailable("collective group ", g.key, ": cannot reach ", to, ": ", s.message()), false);
    return false;
  }

  // JOINs go again to whoever has not answered (one sent before the peer
  // knew this task was dropped by its transport).
  void ResendJoins() {
    bool forming = false;
    for (auto& [key, g] : groups) {
      if (g.state != Group::kForming) continue;
      forming = true;
      for (const auto& m : g.members) {
        if (m == task) continue;
        auto it = join_epoch.find(m);
        if (it != join_epoch.end() && it->second.first == g.epoch) continue;
        if (!SendJoin(g, m, true)) break;
      }
    }
    resend_at = forming ? Clock::now() + kResend : Clock::time_point::max();
  }

  void MaybeFormed(Group& g) {
    if (g.state != Group::kForming) return;
    for (const auto& m : g.members) {
      if (m == task) continue;
      auto it = join_epoch.find(m);
      if (it == join_epoch.end() || it->second.first != g.epoch) return;
    }
    for (const auto& m : g.members)
      if (m != task) g.incarnations[m] = join_epoch[m].second;
    g.state = Group::kFormed;
    formed.fetch_add(1);
    const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());
    for (uint64_t id : ids) {
      if (g.state != Group::kFormed) return;  // a launch failed and re-formed it
      auto it = ops.find(id);
      if (it != ops.end() && !it->second.running) Launch(g, it->second);
    }
  }

  void OnJoin(int64_t group, int64_t size, uint64_t epoch, bool forming, const std::string& from,
              uint64_t incarnation) {
    auto& known = join_epoch[from];
    if (known.second != incarnation) known = {0, incarnation};
    known.first = std::max(known.first, epoch);
    Group& g = groups[group];
    if (g.size == 0) {
      g.key = group;
      g.size = size;
    }
    if (g.size != size) return;  // its collectives time out naming the group; nothing to agree on
    if (g.state == Group::kFormed) {
      auto inc = g.incarnations.find(from);
      if (inc != g.incarnations.end() && inc->second != incarnation)  // it restarted: meet it at a new epoch
        return Form(g, std::max(epoch, g.epoch) + 1);
    }
    if (epoch > g.epoch) return Form(g, epoch);
    if (epoch == g.epoch && g.state == Group::kForming) return MaybeFormed(g);
    if (epoch == g.epoch && g.state == Group::kFormed) {
      // It still waits for ours (the first was dropped: its transport did
      // not know this task yet): answer, as formed (no answer to that).
      if (forming) SendJoin(g, from, false);
      return;
    }
    if (g.state == Group::kForming) {  // it is behind: tell it where we are
      SendJoin(g, from, true);
      return;
    }
    if (g.state == Group::kFormed) return;  // a late copy of an old JOIN
    Form(g, g.epoch + 1);  // we had broken off: meet at a new epoch
  }

  void OnPeerFailed(const std::string& peer, const Status& s) {
    for (auto& [key, g] : groups) {
      if (g.state != Group::kFormed && g.state != Group::kForming) continue;
      if (std::find(g.members.begin(), g.members.end(), peer) == g.members.end()) continue;
      g.state = Group::kBroken;
      FailGroup(g, errors::Unavailable("collective group ", key, " on ", task, ": peer ", peer, " failed: ",
                                       s.message()),
                false);
    }
  }

  // A collective message this task's transport could not take: most often
  // from a member that restarted, which this process does not know yet (its
  // JOINs are dropped until a session finds the new incarnation). What was
  // exchanging fails, and so does what waits for the group to form, with the
  // transport's status (Aborted: a supervisor re-creates its session, which
  // finds the task again, and the step runs again).
  void OnRejected(const Status& s) {
    for (auto& [key, g] : groups) {
      if (g.state == Group::kForming) {
        g.state = Group::kBroken;
        FailGroup(g, Status(s.code(), "collective group " + std::to_string(key) + " on " + task + ": " + s.message()),
                  false);
        continue;
      }
      if (g.state != Group::kFormed) continue;
      bool any = false;
      for (uint64_t id : g.ops) {
        auto it = ops.find(id);
        any = any || (it != ops.end() && it->second.running);
      }
      if (!any) continue;
      g.state = Group::kBroken;
      FailGroup(g, s, true);
    }
  }

  // --- data ----------------------------------------------------------------
  Status SendTo(const Group& g, int64_t rank, const Op& op, int64_t phase, const Tensor& value) {
    const std::string name = std::string(kPrefix) + "d|" + std::to_string(g.key) + "|" + std::to_string(g.epoch) +
                             "|" + std::to_string(op.p.instance_key) + "|" + std::to_string(op.execution) + "|" +
                             std::to_string(phase) + "|" + std::to_string(g.rank) + "|" +
                             std::to_string(static_cast<int>(op.input.dtype())) + "|" +
                             std::to_string(op.input.NumElements()) + "|" + std::to_string(op.plan_hash);
    const std::string& to = g.members[rank];
    return transport->Send(to, CollectiveExecutor::kStepId, Key(to, name), value, false);
  }

  void Launch(Group& g, Op& op) {
    op.running = true;
    op.execution = g.next_execution[op.p.instance_key]++;
    const int64_t n = g.size, r = g.rank;
    Status s;
    if (op.plan_hash != 0 && g.plans_sent.insert(op.plan_hash).second) {
      Tensor text(DT_STRING, TensorShape{});
      text.scalar<std::string>() = op.p.plan;
      const std::string name = std::string(kPrefix) + "p|" + std::to_string(g.key) + "|" + std::to_string(g.epoch) +
                               "|" + std::to_string(op.plan_hash) + "|" + std::to_string(r);
      for (int64_t m = 0; m < n && s.ok(); ++m)
        if (m != r) s = transport->Send(g.members[m], CollectiveExecutor::kStepId, Key(g.members[m], name), text, false);
    }
    if (s.ok() && op.p.kind == CollectiveKind::kBroadcastSend) {
      for (int64_t m = 0; m < n && s.ok(); ++m)
        if (m != r) s = SendTo(g, m, op, -1, op.input);
      if (s.ok()) return Finish(op.id, Status::OK(), op.input);
    }
    if (s.ok() && op.p.kind == CollectiveKind::kReduce && n == 2) {
      // Two ranks: one exchange of the whole tensor (sent as it is, never
      // changed), each merging into its output: the same bytes as a ring,
      // half its round trips, and no copies.
      s = SendTo(g, 1 - r, op, 0, op.input);
    } else if (s.ok() && op.p.kind == CollectiveKind::kReduce) {
      // The chunks: the input cut into n nearly equal pieces, copied (the
      // input may be shared; lent chunks must not change until returned).
      const int64_t total = op.input.NumElements();
      const size_t elem = DataTypeSize(op.input.dtype());
      int64_t offset = 0;
      op.chunks.resize(n);
      for (int64_t c = 0; c < n; ++c) {
        const int64_t len = total / n + (c < total % n ? 1 : 0);
        Tensor t;
        s = Tensor::Create(cpu_allocator(), op.input.dtype(), TensorShape{len}, &t);
        if (!s.ok()) break;
        if (len > 0) std::memcpy(t.raw_data(), static_cast<const char*>(op.input.raw_data()) + offset * elem, len * elem);
        op.chunks[c] = std::move(t);
        offset += len;
      }
      if (s.ok()) s = SendTo(g, (r + 1) % n, op, 0, op.chunks[r]);
    }
    if (!s.ok()) return Fail(op.id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
    Progress(g, op.id);
  }

  // Takes the messages that have come for `id`, in phase order.
  void Progress(Group& g, uint64_t id) {
    for (;;) {
      auto oit = ops.find(id);
      if (oit == ops.end() || !oit->second.running) return;
      Op& op = oit->second;
      const int64_t n = g.size, r = g.rank;
      const bool bcast = op.p.kind == CollectiveKind::kBroadcastRecv;
      auto m = g.inbox.end();
      if (bcast) {
        m = g.inbox.lower_bound(InboxKey{op.p.instance_key, op.execution, -1, 0});
        if (m != g.inbox.end() &&
            (std::get<0>(m->first) != op.p.instance_key || std::get<1>(m->first) != op.execution ||
             std::get<2>(m->first) != -1))
          m = g.inbox.end();
      } else {
        m = g.inbox.find(InboxKey{op.p.instance_key, op.execution, op.phase, (r + n - 1) % n});
      }
      if (m == g.inbox.end()) return;
      const int64_t from = std::get<3>(m->first);
      Msg msg = std::move(m->second);
      g.inbox.erase(m);
      // The same collective on both sides?
      const DataType want_dtype = bcast ? op.p.dtype : op.input.dtype();
      const int64_t want_elements = bcast ? op.p.shape.num_elements() : op.input.NumElements();
      if (msg.plan != op.plan_hash && msg.plan != 0 && op.plan_hash != 0) {
        auto text = g.peer_plans.find({from, msg.plan});
        return Fail(id, errors::InvalidArgument(
                            Describe(op), ": the bucket plans of ", task, " and ", g.members[from], " differ (",
                            text == g.peer_plans.end() ? std::string("hashes differ")
                                                       : FirstDifference(op.p.plan, text->second, g.members[from]),
                            "): every rank must build the same model and bucket options"));
      }
      if (msg.dtype != want_dtype || msg.elements != want_elements) {
        return Fail(id, errors::InvalidArgument(Describe(op), ": this task (", task, ") has ",
                                                DataTypeString(want_dtype), "[", want_elements, " elements], ",
                                                g.members[from], " has ", DataTypeString(msg.dtype), "[",
                                                msg.elements, " elements]: the ranks' graphs differ"));
      }
      if (bcast) {
        Tensor out = msg.value.Reshaped(op.p.shape);
        return Finish(id, Status::OK(), std::move(out));
      }
      if (n == 2) {
        const Tensor& other = msg.value;
        if (other.NumElements() != op.input.NumElements() || other.dtype() != op.input.dtype())
          return Fail(id, errors::DataLoss(Describe(op), ": a tensor of the wrong size from ", g.members[from]));
        Merge(op.p.merge, op.input, other, &op.output);
        if (op.p.divide) Divide(&op.output, n);
        return Finish(id, Status::OK(), op.output);
      }
      const int64_t phase = op.phase;
      const int64_t last_rs = n - 2;
      int64_t idx;
      if (phase <= last_rs) {
        idx = ((r - phase - 1) % n + n) % n;
        Tensor& own = op.chunks[idx];
        Tensor received = std::move(msg.value);
        if (received.NumElements() != own.NumElements() || received.dtype() != own.dtype())
          return Fail(id, errors::DataLoss(Describe(op), ": a chunk of the wrong size from ", g.members[from]));
        if (!received.RefCountIsOne()) received = received.DeepCopy();
        Merge(op.p.merge, own, received, &received);
        if (phase == last_rs && op.p.divide) Divide(&received, n);
        own = std::move(received);
      } else {
        idx = ((r - (phase - (n - 1))) % n + n) % n;
        if (msg.value.NumElements() != op.chunks[idx].NumElements())
          return Fail(id, errors::DataLoss(Describe(op), ": a chunk of the wrong size from ", g.members[from]));
        op.chunks[idx] = std::move(msg.value);
      }
      op.phase = phase + 1;
      if (op.phase <= 2 * n - 3) {
        const Status s = SendTo(g, (r + 1) % n, op, op.phase, op.chunks[idx]);
        if (!s.ok()) return Fail(id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
        continue;
      }
      // Done: the chunks, in order, into the output.
      char* out = static_cast<char*>(op.output.raw_data());
      const size_t elem = DataTypeSize(op.output.dtype());
      for (const Tensor& c : op.chunks) {
        if (c.NumElements() > 0) std::memcpy(out, c.raw_data(), c.NumElements() * elem);
        out += c.NumElements() * elem;
      }
      return Finish(id, Status::OK(), op.output);
    }
  }

  void OnData(const std::vector<std::string>& f, Tensor value) {
    // coll|d|group|epoch|instance|execution|phase|from|dtype|elements|plan
    int64_t group, instance, execution, phase, from, dtype, elements;
    uint64_t epoch, plan;
    if (f.size() != 11 || !ToInt(f[2], &group) || !ToU64(f[3], &epoch) || !ToInt(f[4], &instance) ||
        !ToInt(f[5], &execution) || !ToInt(f[6], &phase) || !ToInt(f[7], &from) || !ToInt(f[8], &dtype) ||
        !ToInt(f[9], &elements) || !ToU64(f[10], &plan))
      return;
    auto git = groups.find(group);
    if (git == groups.end()) return;
    Group& g = git->second;
    if (epoch != g.epoch || from < 0 || from >= g.size || from == g.rank) return;  // a past epoch's
    Msg msg{static_cast<DataType>(dtype), elements, plan, std::move(value)};
    g.inbox[InboxKey{instance, execution, phase, from}] = std::move(msg);
    const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());
    for (uint64_t id : ids) {
      auto it = ops.find(id);
      if (it != ops.end() && it->second.running && it->second.p.instance_key == instance &&
          it->second.execution == execution)
        Progress(g, id);
    }
  }

  void OnMessage(const RendezvousKey& key, Tensor value) {
    const std::vector<std::string> k = SplitKey(key.str(), ';');
    const std::vector<std::string> f = SplitKey(std::string(NameOfKey(key.str())), '|');
    if (f.size() < 2 || k.size() < 2) return;
    if (f[1] == "j" && f.size() == 6 && (f[5] == "0" || f[5] == "1")) {
      int64_t group, size;
      uint64_t epoch, incarnation;
      try {
        size_t used = 0;
        incarnation = std::stoull(k[1], &used, 16);
        if (used != k[1].size()) return;
      } catch (...) {
        return;
      }
      if (ToInt(f[2], &group) && ToInt(f[3], &size) && ToU64(f[4], &epoch) && size > 0)
        OnJoin(group, size, epoch, f[5] == "1", std::string(SendTaskOfKey(key.str())), incarnation);
    } else if (f[1] == "p" && f.size() == 6) {
      int64_t group, from;
      uint64_t epoch, hash;
      if (!ToInt(f[2], &group) || !ToU64(f[3], &epoch) || !ToU64(f[4], &hash) || !ToInt(f[5], &from)) return;
      auto git = groups.find(group);
      if (git == groups.end() || git->second.epoch != epoch || value.dtype() != DT_STRING || value.NumElements() != 1)
        return;
      git->second.peer_plans[{from, hash}] = value.scalar<std::string>();
    } else if (f[1] == "d") {
      OnData(f, std::move(value));
    }
  }

  TensorTransport* transport;
  const std::string task;
  const std::string job;
  const CollectiveExecutorOptions options;
  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> completed{0}, formed{0};

  std::mutex mu;  // guards `events` and `stopping`
  std::condition_variable cv;
  std::deque<std::function<void()>> events;
  std::atomic<bool> stopping{false};
  std::thread thread;

  // The executor thread's own (after Stop, the stopping thread's).
  std::map<uint64_t, Op> ops;
  std::map<int64_t, Group> groups;
  std::map<std::string, std::pair<uint64_t, uint64_t>> join_epoch;  // task -> (highest epoch joined, incarnation)
  Clock::time_point resend_at = Clock::time_point::max();
};

CollectiveExecutor::CollectiveExecutor(TensorTransport* transport, std::string task, CollectiveExecutorOptions options)
    : impl_(std::make_unique<Impl>(transport, std::move(task), options)) {}

CollectiveExecutor::~CollectiveExecutor() { Stop(); }

void CollectiveExecutor::Stop() { impl_->StopNow(); }

uint64_t CollectiveExecutor::NewId() { return impl_->next_id.fetch_add(1); }

void CollectiveExecutor::Start(uint64_t id, CollectiveParams params, Tensor input, Tensor output, Done done) {
  const std::string what = std::string(KindName(params.kind)) + " '" + params.node + "'";
  if (params.group_size < 1) {
    done(errors::InvalidArgument(what, ": group_size must be at least 1, got ", params.group_size), Tensor());
    return;
  }
  if (params.kind == CollectiveKind::kReduce && !Reducible(input.dtype())) {
    done(errors::Unimplemented(what, ": cannot reduce ", DataTypeString(input.dtype())), Tensor());
    return;
  }
  if (params.group_size == 1) {  // nothing to exchange: a reduce of one is its input, whatever the final op
    if (params.kind == CollectiveKind::kBroadcastRecv) {
      done(errors::InvalidArgument(what, ": a group of one has no one to receive from"), Tensor());
    } else {
      done(Status::OK(), std::move(input));
    }
    return;
  }
  Impl::Op op;
  op.id = id;
  op.p = std::move(params);
  op.input = std::move(input);
  op.output = std::move(output);
  op.done = std::move(done);
  auto shared = std::make_shared<Impl::Op>(std::move(op));
  Impl* impl = impl_.get();
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    if (impl->stopping) {
      shared->done(errors::Cancelled("collective executor stopped"), Tensor());
      return;
    }
  }
  impl->Post([impl, shared] { impl->StartOp(std::move(*shared)); });
}

void CollectiveExecutor::Cancel(uint64_t id, Status why) {
  Impl* impl = impl_.get();
  impl->Post([impl, id, why = std::move(why)] { impl->Fail(id, why); });
}

void CollectiveExecutor::Deliver(RendezvousKey key, Tensor value) {
  Impl* impl = impl_.get();
  auto v = std::make_shared<Tensor>(std::move(value));
  impl->Post([impl, key = std::move(key), v] { impl->OnMessage(key, std::move(*v)); });
}

void CollectiveExecutor::PeerFailed(const std::string& task, Status status) {
  Impl* impl = impl_.get();
  impl->Post([impl, task, status = std::move(status)] { impl->OnPeerFailed(task, status); });
}

void CollectiveExecutor::Rejected(Status status) {
  Impl* impl = impl_.get();
  impl->Post([impl, status = std::move(status)] { impl->OnRejected(status); });
}

uint64_t CollectiveExecutor::completed_count() const { return impl_->completed.load(); }
uint64_t CollectiveExecutor::formed_count() const { return impl_->formed.load(); }

}  // namespace actorflow
