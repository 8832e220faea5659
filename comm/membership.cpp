#include "actorflow/comm/membership.hpp"

namespace actorflow {

std::string TaskRecord::job() const {
  const size_t slash = name.find('/', 1);
  return slash == std::string::npos ? name : name.substr(0, slash);
}

bool MembershipChange::Superseded() const {
  if (kind == Kind::kRemoved) return true;
  return kind == Kind::kReplaced && (task.incarnation != previous.incarnation || task.host != previous.host ||
                                     task.port != previous.port);
}

TaskRecord TaskRecord::At(std::string name, std::string host, uint16_t port, uint64_t incarnation) {
  TaskRecord t;
  t.name = std::move(name);
  t.host = std::move(host);
  t.port = port;
  t.incarnation = incarnation;
  return t;
}

const char* MembershipChangeName(MembershipChange::Kind kind) {
  switch (kind) {
    case MembershipChange::Kind::kAdded: return "added";
    case MembershipChange::Kind::kReplaced: return "replaced";
    case MembershipChange::Kind::kFailed: return "failed";
    case MembershipChange::Kind::kRemoved: return "removed";
  }
  return "changed";
}

Status TaskRestartedError(const std::string& task, uint64_t now, uint64_t known) {
  return errors::Aborted("task ", task, " restarted (incarnation ", now, ", this session knew ", known,
                         "): its state is gone; open a new session");
}

Membership::Membership(std::string self, uint64_t incarnation)
    : self_(std::move(self)), self_incarnation_(incarnation) {
  TaskRecord me;
  me.name = self_;
  me.incarnation = incarnation;
  me.liveness = TaskRecord::Liveness::kAlive;
  tasks_.emplace(self_, me);
}

void Membership::AddName(const std::string& task) {
  if (task.empty()) return;
  Change([&]() -> std::optional<MembershipChange> {
    if (tasks_.count(task)) return std::nullopt;
    TaskRecord t;
    t.name = task;
    tasks_.emplace(task, t);
    return MembershipChange{MembershipChange::Kind::kAdded, t, {}, 0};
  });
}

Status Membership::Update(const TaskRecord& task) {
  if (task.name.empty()) return errors::InvalidArgument("a cluster member needs a task name");
  if (task.incarnation == 0) return errors::InvalidArgument("task ", task.name, " has no incarnation");
  if (task.name == self_ && task.incarnation != self_incarnation_)
    return errors::FailedPrecondition("task ", task.name, " is this process (incarnation ", self_incarnation_,
                                      "), not incarnation ", task.incarnation);
  Change([&]() -> std::optional<MembershipChange> {
    TaskRecord now = task;
    now.liveness = TaskRecord::Liveness::kAlive;
    now.failure = Status::OK();
    auto it = tasks_.find(task.name);
    if (it == tasks_.end()) {
      tasks_.emplace(task.name, now);
      return MembershipChange{MembershipChange::Kind::kAdded, now, {}, 0};
    }
    TaskRecord& was = it->second;
    // Known by name only (or without an address, at this incarnation) until
    // now: for its readers it is added, with an address.
    const bool addressed = !was.host.empty() || was.port != 0;
    const bool known = was.incarnation != 0 && (addressed || was.incarnation != now.incarnation);
    if (was.incarnation == now.incarnation && was.host == now.host && was.port == now.port &&
        was.liveness == TaskRecord::Liveness::kAlive)
      return std::nullopt;  // nothing new
    const TaskRecord previous = was;
    was = now;
    return MembershipChange{known ? MembershipChange::Kind::kReplaced : MembershipChange::Kind::kAdded, now, previous,
                            0};
  });
  return Status::OK();
}

void Membership::MarkFailed(const std::string& task, uint64_t incarnation, const Status& why) {
  if (task == self_) return;
  Change([&]() -> std::optional<MembershipChange> {
    auto it = tasks_.find(task);
    if (it == tasks_.end()) return std::nullopt;
    TaskRecord& t = it->second;
    // An older process than the one known: not this record's failure.
    if (incarnation != 0 && t.incarnation != 0 && incarnation != t.incarnation) return std::nullopt;
    const TaskRecord previous = t;
    t.liveness = TaskRecord::Liveness::kFailed;
    t.failure = why.ok() ? errors::Unavailable("task ", task, " failed") : why;
    return MembershipChange{MembershipChange::Kind::kFailed, t, previous, 0};
  });
}

void Membership::Remove(const std::string& task) {
  if (task == self_) return;
  Change([&]() -> std::optional<MembershipChange> {
    auto it = tasks_.find(task);
    if (it == tasks_.end()) return std::nullopt;
    MembershipChange c{MembershipChange::Kind::kRemoved, it->second, it->second, 0};
    tasks_.erase(it);
    return c;
  });
}

std::optional<TaskRecord> Membership::Find(const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return std::nullopt;
  return it->second;
}

bool Membership::HasAddress(const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  return it != tasks_.end() && !it->second.host.empty() && it->second.port != 0;
}

std::vector<TaskRecord> Membership::Tasks() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TaskRecord> out;
  out.reserve(tasks_.size());
  for (const auto& [name, t] : tasks_) out.push_back(t);
  return out;
}

std::vector<std::string> Membership::TasksOfJob(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, t] : tasks_)
    if (t.job() == job) out.push_back(name);
  return out;
}

Status Membership::CheckIncarnation(const std::string& task, uint64_t incarnation) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return errors::NotFound("task ", task, " is not a member of this cluster");
  if (it->second.incarnation != incarnation) return TaskRestartedError(task, it->second.incarnation, incarnation);
  return Status::OK();
}

uint64_t Membership::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

uint64_t Membership::Subscribe(Listener listener) {
  std::lock_guard<std::recursive_mutex> order(notify_mu_);
  const uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void Membership::Unsubscribe(uint64_t id) {
  std::lock_guard<std::recursive_mutex> order(notify_mu_);
  listeners_.erase(id);
}

void Membership::Publish(const MembershipChange& change) {
  // notify_mu_ is held by the writer: changes reach listeners in version order.
  // Copies: a listener may unsubscribe itself (or another) while it runs.
  std::vector<std::pair<uint64_t, Listener>> now(listeners_.begin(), listeners_.end());
  for (auto& [id, l] : now)
    if (listeners_.count(id)) l(change);
}

}  // namespace actorflow
