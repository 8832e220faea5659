#include "actorflow/comm/collective_executor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "actorflow/comm/collective_executor_impl.hpp"

namespace actorflow {
namespace collective_internal {

std::string JobOf(const std::string& task) {
  const size_t start = task.find("/job:");
  if (start == std::string::npos) return "";
  const size_t end = task.find('/', start + 5);
  return task.substr(start + 5, end == std::string::npos ? std::string::npos : end - start - 5);
}

const char* KindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kReduce: return "CollectiveReduce";
    case CollectiveKind::kBroadcastSend: return "CollectiveBcastSend";
    case CollectiveKind::kBroadcastRecv: return "CollectiveBcastRecv";
    case CollectiveKind::kBroadcastFirst: return "CollectiveBcastFirst";
  }
  return "collective";
}

}  // namespace collective_internal

using namespace collective_internal;

Status CollectiveExecutorOptions::FromEnvironment(CollectiveExecutorOptions* options) {
  const char* v = std::getenv("ACTORFLOW_ALLREDUCE");
  const std::string value = v ? v : "auto";
  if (value == "auto") options->algorithm = CollectiveAlgorithm::kAuto;
  else if (value == "ring") options->algorithm = CollectiveAlgorithm::kRing;
  else if (value == "sharded") options->algorithm = CollectiveAlgorithm::kSharded;
  else
    return errors::InvalidArgument("ACTORFLOW_ALLREDUCE='", value, "': expected 'auto' (one leader per host across ",
                                   "hosts with several tasks, else the ring), 'ring' (always the flat ring) or ",
                                   "'sharded' (every task of a host reduces a shard across hosts)");
  if (const char* m = std::getenv("ACTORFLOW_MIN_WORKERS"); m && *m) {
    const std::string text(m);
    const bool digits = text.size() <= 6 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long n = digits ? std::stol(text) : 0;
    if (n < 1 || n > 100000)
      return errors::InvalidArgument("ACTORFLOW_MIN_WORKERS='", text, "': expected the elastic quorum, 1 to 100000");
    options->elastic_min_members = n;
  }
  return Status::OK();
}

Status CollectiveExecutor::CheckMessage(const std::string&, const std::string& meta) {
  CollectiveMessage m;
  return DecodeCollectiveMessage(meta, &m);
}

// --- the queue -----------------------------------------------------------
bool CollectiveExecutor::Impl::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return false;
    events.push_back(std::move(fn));
  }
  cv.notify_one();
  return true;
}

void CollectiveExecutor::Impl::Loop() {
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

void CollectiveExecutor::Impl::StopNow() {
  if (subscription != 0) {  // after this, no change is posted (outside `mu`: a change being delivered posts)
    membership->Unsubscribe(subscription);
    subscription = 0;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return;
    stopping = true;
  }
  cv.notify_one();
  if (thread.joinable()) thread.join();
  // What was queued and not yet run: each event sees `stopping` (a start is
  // answered Cancelled, the rest do nothing), so no collective goes unanswered.
  std::deque<std::function<void()>> left;
  {
    std::lock_guard<std::mutex> lock(mu);
    left.swap(events);
  }
  for (auto& fn : left) fn();
  FailAll(errors::Cancelled("collective executor of ", task, " stopped"));
}

// --- ops -----------------------------------------------------------------
std::string CollectiveExecutor::Impl::Describe(const Op& op) const {
  return std::string(KindName(op.p.kind)) + " '" + op.p.node + "' (group " + std::to_string(op.p.group_key) +
         ", instance " + std::to_string(op.p.instance_key) + ")";
}

void CollectiveExecutor::Impl::Finish(uint64_t id, const Status& s, Tensor result) {
  auto it = ops.find(id);
  if (it == ops.end()) return;
  Op op = std::move(it->second);
  ops.erase(it);
  held.store(ops.size());
  auto g = groups.find(op.p.group_key);
  if (g != groups.end()) {
    g->second.ops.erase(id);
    if (s.ok() && op.syncs && g->second.state == Group::kFormed && op.epoch == g->second.epoch) {
      g->second.synced_digest = g->second.digest;
      g->second.synced_epoch = g->second.epoch;
    }
    if (op.running)  // its messages are no use to anyone now
      for (auto m = g->second.inbox.begin(); m != g->second.inbox.end();) {
        if (std::get<0>(m->first) == op.p.instance_key && std::get<1>(m->first) == op.execution) {
          m = g->second.inbox.erase(m);
        } else {
          ++m;
        }
      }
  }
  op.done(s, s.ok() ? std::move(result) : Tensor());
}

// Fails `id`; one that had begun exchanging leaves its peers mid-way, so the
// group forms again at once and they fail fast instead of at their timeout.
void CollectiveExecutor::Impl::Fail(uint64_t id, const Status& s) {
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

void CollectiveExecutor::Impl::FailGroup(Group& g, const Status& s, bool only_running) {
  const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());
  for (uint64_t id : ids) {
    auto it = ops.find(id);
    if (it != ops.end() && (!only_running || it->second.running)) Finish(id, s, Tensor());
  }
}

void CollectiveExecutor::Impl::FailAll(const Status& s) {
  std::vector<uint64_t> ids;
  for (const auto& [id, op] : ops) ids.push_back(id);
  for (uint64_t id : ids) Finish(id, s, Tensor());
}

void CollectiveExecutor::Impl::ExpireDeadlines() {
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
    if (!op.running && g.state == Group::kAwaiting) {
      waiting = "the group's members (" + g.known + "; a group is every task of the job, and a session finds them)";
    } else if (!op.running) {
      waiting = "the group to form (epoch " + std::to_string(g.epoch) + "; joined:";
      for (const auto& m : g.members)
        if (m == task || JoinedNow(g, m)) waiting += " " + m;
      if (g.elastic) {  // members that count others alive or failed than this task does
        waiting += "; an elastic group of " + std::to_string(g.size) + " here";
        for (const auto& m : g.members) {
          auto j = joins.find({g.key, m});
          if (m != task && j != joins.end() && j->second.epoch == g.epoch && j->second.digest != g.digest)
            waiting += ", " + m + " counts " + std::to_string(j->second.size);
        }
      }
      waiting += ")";
    } else {
      waiting = Waiting(g, op);
    }
    const double secs = std::chrono::duration<double>(op.p.timeout.count() > 0 ? op.p.timeout
                                                                               : options.default_timeout)
                            .count();
    Fail(id, errors::DeadlineExceeded(Describe(op), " on ", task, ": still waiting for ", waiting, " after ", secs,
                                      " s (a hung or absent peer)"));
  }
}

void CollectiveExecutor::Impl::StartOp(Op op) {
  if (stopping) {
    op.done(errors::Cancelled(Describe(op), ": the collective executor of ", task, " stopped"), Tensor());
    return;
  }
  if (!transport || !membership) {
    op.done(errors::FailedPrecondition(Describe(op), ": group of ", op.p.group_size, " but task ", task,
                                       " is not in a cluster"),
            Tensor());
    return;
  }
  Group& g = groups[op.p.group_key];
  const bool elastic = op.p.group_size == 0;
  if (!g.configured) {
    g.configured = true;
    g.key = op.p.group_key;
    g.elastic = elastic;
    g.size = op.p.group_size;
  }
  if (g.elastic != elastic || (!elastic && g.size != op.p.group_size)) {
    op.done(errors::InvalidArgument(Describe(op), ": group_size ", op.p.group_size, ", but group ", g.key,
                                    g.elastic ? " is elastic (group_size 0)" : " has size " + std::to_string(g.size),
                                    " in this process"),
            Tensor());
    return;
  }
  const auto timeout = op.p.timeout.count() > 0 ? op.p.timeout : options.default_timeout;
  op.deadline = Clock::now() + timeout;
  op.plan_hash = op.p.plan_hash != 0 || !op.p.plan ? op.p.plan_hash : CollectivePlanHash(*op.p.plan);
  const uint64_t id = op.id;
  // A group to form first: before this op joins it (forming fails what was begun before).
  if (g.state == Group::kAwaiting) {
    Form(g, g.epoch, /*new_members_only=*/true);
  } else if (g.state != Group::kFormed && g.state != Group::kForming) {
    Form(g, g.epoch + 1);
  } else if (g.elastic && g.grow_pending && g.state == Group::kFormed) {
    g.grow_pending = false;  // a task joins: a new epoch with it (then a sync before an all-reduce)
    Form(g, g.epoch + 1);
  }
  if (g.state == Group::kBroken) {
    op.done(g.broken, Tensor());
    return;
  }
  ops.emplace(id, std::move(op));
  held.store(ops.size());
  g.ops.insert(id);
  if (g.state == Group::kFormed) {
    Launch(g, ops[id]);
  } else if (g.state == Group::kForming) {
    MaybeFormed(g);
  }
}

CollectiveExecutor::CollectiveExecutor(TensorTransport* transport, Membership* membership, std::string task,
                                       CollectiveExecutorOptions options)
    : impl_(std::make_unique<Impl>(transport, membership, std::move(task), options)) {}

CollectiveExecutor::~CollectiveExecutor() { Stop(); }

void CollectiveExecutor::Stop() { impl_->StopNow(); }

uint64_t CollectiveExecutor::NewId() { return impl_->next_id.fetch_add(1); }

void CollectiveExecutor::Start(uint64_t id, CollectiveParams params, Tensor input, Tensor output, Done done) {
  const std::string what = std::string(KindName(params.kind)) + " '" + params.node + "'";
  const bool may_be_elastic = params.kind == CollectiveKind::kReduce || params.kind == CollectiveKind::kBroadcastFirst;
  if (params.group_size < 0 || (params.group_size == 0 && !may_be_elastic)) {
    done(errors::InvalidArgument(what, ": group_size must be at least 1 (0, an elastic group, for an all-reduce ",
                                 "or a broadcast from the first), got ", params.group_size),
         Tensor());
    return;
  }
  if (params.kind == CollectiveKind::kReduce && params.reduction == nullptr) {
    done(errors::InvalidArgument(what, ": no merge_op and final_op given"), Tensor());
    return;
  }
  if (params.kind == CollectiveKind::kReduce && params.plan) {
    std::lock_guard<std::mutex> lock(impl_->layouts_mu);
    impl_->bucket_started[params.group_key] = std::chrono::steady_clock::now();
  }
  if (params.kind == CollectiveKind::kReduce && !params.reduction->Accepts(input.dtype())) {
    done(errors::Unimplemented(what, ": cannot reduce ", DataTypeString(input.dtype()), " with ",
                               params.reduction->DebugString()),
         Tensor());
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
  if (!impl->Post([impl, shared] { impl->StartOp(std::move(*shared)); }))
    shared->done(errors::Cancelled(what, ": the collective executor stopped"), Tensor());
}

void CollectiveExecutor::Cancel(uint64_t id, Status why) {
  Impl* impl = impl_.get();
  impl->Post([impl, id, why = std::move(why)] {
    if (!impl->stopping) impl->Fail(id, why);
  });
}

void CollectiveExecutor::Deliver(const std::string& from_task, std::string meta, Tensor value) {
  CollectiveMessage m;
  if (!DecodeCollectiveMessage(meta, &m).ok()) return;  // malformed: dropped
  Impl* impl = impl_.get();
  auto v = std::make_shared<Tensor>(std::move(value));
  impl->Post([impl, from_task, m, v] {
    if (!impl->stopping) impl->OnMessage(from_task, m, std::move(*v));
  });
}

void CollectiveExecutor::Rejected(Status status) {
  Impl* impl = impl_.get();
  impl->Post([impl, status = std::move(status)] {
    if (!impl->stopping) impl->OnRejected(status);
  });
}

uint64_t CollectiveExecutor::formed_count() const { return impl_->formed.load(); }

size_t CollectiveExecutor::pending_count() const { return impl_->held.load(); }

std::string CollectiveExecutor::layout(int64_t group_key) const {
  std::lock_guard<std::mutex> lock(impl_->layouts_mu);
  auto it = impl_->layouts.find(group_key);
  return it == impl_->layouts.end() ? "" : it->second;
}

std::chrono::steady_clock::time_point CollectiveExecutor::last_bucket_started(int64_t group_key) const {
  std::lock_guard<std::mutex> lock(impl_->layouts_mu);
  auto it = impl_->bucket_started.find(group_key);
  return it == impl_->bucket_started.end() ? std::chrono::steady_clock::time_point() : it->second;
}

int64_t CollectiveExecutor::formed_size(int64_t group_key, std::vector<std::string>* members) const {
  std::lock_guard<std::mutex> lock(impl_->layouts_mu);
  auto it = impl_->formed_members.find(group_key);
  if (it == impl_->formed_members.end()) {
    if (members) members->clear();
    return 0;
  }
  if (members) *members = it->second;
  return static_cast<int64_t>(it->second.size());
}

}  // namespace actorflow
