#include "actorflow/master/cluster_view.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/manager.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "actorflow/actors/peer_watcher.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/actors/task_actor.hpp"
#include "actorflow/devices/device_name.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {

namespace {

// Whether any of `filters` matches task `name` (empty filters: every task).
bool Matches(const std::vector<std::string>& filters, const std::string& name) {
  if (filters.empty()) return true;
  DeviceName task;
  if (!ParseDeviceName(name, &task).ok()) return false;
  for (const auto& f : filters) {
    DeviceName spec;
    if (!ParseDeviceName(f, &spec).ok()) continue;
    if ((!spec.has_job || spec.job == task.job) && (!spec.has_replica || spec.replica == task.replica) &&
        (!spec.has_task || spec.task == task.task))
      return true;
  }
  return false;
}

}  // namespace

Status ConnectToTask(caf::actor_system& sys, const std::string& address, std::chrono::milliseconds timeout,
                     caf::actor* out) {
  std::string host;
  uint16_t port = 0;
  AF_RETURN_IF_ERROR(SplitHostPort(address, &host, &port));
  caf::scoped_actor self{sys};
  // Through CAF's openssl module in a secured process (mutual TLS), else plain.
  const caf::io::middleman_actor& connector =
      sys.has_openssl_manager() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  const auto until = std::chrono::steady_clock::now() + timeout;
  const auto no_answer = [&] { return errors::DeadlineExceeded("no answer from ", address, " within ", timeout.count(), " ms"); };
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return no_answer();
    // CAF's middleman connects synchronously, one connection at a time: a
    // host that does not answer (a link down) would hold every other
    // connect of this process for the kernel's SYN timeout (minutes). Here,
    // on the caller's thread, it costs this call only.
    if (!PeerWatcher::Reachable(address, left))
      return std::chrono::steady_clock::now() >= until
                 ? no_answer()
                 : errors::Unavailable("cannot connect to ", address, ": nothing accepts a connection there");
    Status status = no_answer();
    bool transient = false;
    self->request(connector, left, caf::connect_atom::value, host, port)
        .receive(
            [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
              if (!ptr) {
                status = errors::Unavailable("nothing is published at ", address);
                return;
              }
              *out = caf::actor_cast<caf::actor>(ptr);
              status = Status::OK();
            },
            [&](caf::error& err) {
              if (err == caf::sec::request_timeout) return;  // no_answer()
              status = errors::Unavailable("cannot connect to ", address, ": ", sys.render(err));
              // The peer accepted but its handshake did not complete within the
              // connection timeout, or the connection closed during it: a busy
              // peer, worth another try while the deadline allows.
              transient = err == caf::sec::connection_timeout || err == caf::sec::disconnect_during_handshake;
            });
    if (!transient) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= until) return status;
  }
}

namespace {

// Asks `task` (at its address) for its status, until `until`.
Status AskTask(caf::actor_system& sys, ClusterTask* task, std::chrono::steady_clock::time_point until,
               const std::string& from) {
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      until - std::chrono::steady_clock::now()));
  };
  // The status request is idempotent: asked again (connecting again) until the deadline, each try
  // waiting twice as long as the last from 5 s, so that a request lost with a connection the peers
  // replaced (both connecting at once) holds the session up for one try, and a slow peer still answers.
  auto wait = std::chrono::milliseconds(5000);
  Status status = errors::DeadlineExceeded("no status within the deadline");
  for (;; wait *= 2) {
    AF_RETURN_IF_ERROR(ConnectToTask(sys, task->address, left(), &task->task_actor));
    caf::scoped_actor self{sys};
    bool timed_out = false;
    self->request(task->task_actor, std::min(left(), wait), GetStatusRequest{from})
        .receive([&](GetStatusResponse& r) {
                   task->status = std::move(r);
                   status = Status::OK();
                 },
                 [&](caf::error& err) {
                   timed_out = err == caf::sec::request_timeout;
                   status = timed_out ? errors::DeadlineExceeded("no status within the deadline")
                                      : errors::Unavailable(sys.render(err));
                 });
    if (!timed_out || std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= until) break;
  }
  AF_RETURN_IF_ERROR(status);
  if (task->status.task != task->name)
    return errors::InvalidArgument("the server at ", task->address, " is task ", task->status.task, ", not ",
                                   task->name, " (check the cluster description)");
  return Status::OK();
}

}  // namespace

Status ClusterView::Find(Runtime* runtime, const ClusterSpec& cluster, const TaskId& local,
                         const std::vector<std::string>& filters, std::chrono::milliseconds deadline,
                         std::unique_ptr<ClusterView>* out, const SessionRendezvous& rendezvous) {
  auto view = std::unique_ptr<ClusterView>(new ClusterView);
  view->local_task_ = runtime->task_name();
  const auto until = std::chrono::steady_clock::now() + deadline;
  // This process first.
  ClusterTask self;
  self.name = runtime->task_name();
  self.local = true;
  (void)cluster.Address(local, &self.address);
  self.status = DescribeTask(*runtime, runtime->transport() ? runtime->transport()->host() : "", caf::actor());
  view->tasks_.push_back(std::move(self));

  // Every other task, in parallel; a rendezvous job's again until its round completes.
  struct Ask {
    ClusterTask task;
    std::future<Status> done;
    Status status;
    bool optional = false;  // of the rendezvous job
  };
  std::vector<Ask> asks;
  const std::string job = rendezvous.job.empty() ? "" : "/job:" + rendezvous.job + "/";
  int in_job = 0;  // the job's tasks this session may use, this one included
  if (!job.empty() && view->local_task_.rfind(job, 0) == 0) ++in_job;
  for (const TaskId& t : cluster.tasks()) {
    const std::string name = t.name();
    if (name == view->local_task_ || !Matches(filters, name)) continue;
    Ask a;
    a.task.name = name;
    a.optional = !job.empty() && name.rfind(job, 0) == 0;
    in_job += a.optional ? 1 : 0;
    AF_RETURN_IF_ERROR(cluster.Address(t, &a.task.address));
    asks.push_back(std::move(a));
  }
  caf::actor_system& sys = runtime->system();
  const std::string from = view->local_task_;
  // Asks the tasks that have not answered yet, until `by`.
  auto ask = [&](std::chrono::steady_clock::time_point by) {
    for (auto& a : asks)
      if (!a.status.ok()) {
        ClusterTask* task = &a.task;
        a.done = std::async(std::launch::async, [&sys, task, by, from] { return AskTask(sys, task, by, from); });
      }
    for (auto& a : asks)
      if (a.done.valid()) a.status = a.done.get();
  };
  for (auto& a : asks) a.status = errors::Unavailable("not asked");
  // A round's asks each get the last call's time (2 s at least) at most: a
  // task that accepted but does not answer, stopped or cut off, holds no
  // round up for long.
  const auto ask_for = std::chrono::milliseconds(std::max<int64_t>(2000, rendezvous.last_call_ms));
  auto round_end = [&] { return job.empty() ? until : std::min(until, std::chrono::steady_clock::now() + ask_for); };
  ask(round_end());
  // The rendezvous round: once `min_tasks` of the job have answered, a last
  // call of `last_call_ms` for the others, or at once when all have.
  if (!job.empty()) {
    auto answered = [&] {
      int n = in_job;
      for (const auto& a : asks) n -= a.optional && !a.status.ok() ? 1 : 0;
      return n;
    };
    const int min_tasks = std::max(1, std::min(rendezvous.min_tasks, in_job));
    const int max_tasks = rendezvous.max_tasks > 0 ? std::max(min_tasks, rendezvous.max_tasks) : in_job;
    auto misconfigured = [&] {  // a task of the job at another's address: an error now, not a round
      for (const auto& a : asks)
        if (a.status.code() == Code::kInvalidArgument) return true;
      return false;
    };
    std::chrono::steady_clock::time_point quorum_at{};
    for (;;) {
      const int n = answered();
      const auto now = std::chrono::steady_clock::now();
      if (n >= min_tasks && quorum_at == std::chrono::steady_clock::time_point{}) quorum_at = now;
      if (n >= max_tasks || misconfigured()) break;
      if (n >= min_tasks && now - quorum_at >= std::chrono::milliseconds(rendezvous.last_call_ms)) break;
      if (now >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      ask(round_end());
    }
    if (answered() >= min_tasks && !misconfigured()) {  // those that did not answer are left out of the round
      std::vector<Ask> kept;
      for (auto& a : asks)
        if (!a.optional || a.status.ok()) kept.push_back(std::move(a));
      asks = std::move(kept);
    }
  }
  std::string failed;
  Code code = Code::kOk;
  for (auto& a : asks) {
    const Status& s = a.status;
    if (!s.ok()) {
      if (code == Code::kOk || s.code() == Code::kInvalidArgument) code = s.code();
      failed += (failed.empty() ? "" : "; ") + a.task.name + " at " + a.task.address + ": " + s.message();
    }
  }
  if (!failed.empty())
    return Status(code == Code::kInvalidArgument ? code : Code::kUnavailable,
                  "finding the cluster's devices: no answer from " + failed +
                      (job.empty() ? std::string()
                                   : " (the rendezvous of job " + rendezvous.job + " needs " +
                                         std::to_string(std::max(1, std::min(rendezvous.min_tasks, in_job))) +
                                         " of its tasks)"));
  for (auto& a : asks) view->tasks_.push_back(std::move(a.task));

  std::vector<Device*> all;
  for (size_t i = 0; i < view->tasks_.size(); ++i) {
    const ClusterTask& t = view->tasks_[i];
    for (const auto& d : t.status.devices) {
      if (TaskOfDevice(d.name) != t.name)
        return errors::InvalidArgument("task ", t.name, " reports device ", d.name, " of another task");
      if (t.local) {
        all.push_back(runtime->devices()[all.size()]);
      } else {
        view->placeholders_.push_back(std::make_unique<Device>(d.name, d.type, nullptr, nullptr));
        all.push_back(view->placeholders_.back().get());
      }
      view->device_actors_[d.name] = d.actor;
      view->task_of_device_[d.name] = i;
    }
  }
  view->manager_ = std::make_unique<DeviceManager>(all);
  *out = std::move(view);
  return Status::OK();
}

Status ClusterView::Probe(caf::actor_system& sys, const ClusterTask& task, std::chrono::milliseconds timeout,
                          uint64_t* incarnation) {
  caf::actor actor;
  AF_RETURN_IF_ERROR(ConnectToTask(sys, task.address, timeout, &actor));
  caf::scoped_actor self{sys};
  Status status = errors::DeadlineExceeded("no status from ", task.name, " within ", timeout.count(), " ms");
  self->request(actor, timeout, GetStatusRequest{"probe"})
      .receive(
          [&](GetStatusResponse& r) {
            *incarnation = r.incarnation;
            status = r.task == task.name ? Status::OK()
                                         : errors::InvalidArgument(task.address, " is now task ", r.task);
          },
          [&](caf::error& err) { status = errors::Unavailable(sys.render(err)); });
  return status;
}

const ClusterTask* ClusterView::TaskOf(const std::string& device) const {
  auto it = task_of_device_.find(device);
  return it == task_of_device_.end() ? nullptr : &tasks_[it->second];
}

caf::actor ClusterView::DeviceActor(const std::string& device) const {
  auto it = device_actors_.find(device);
  return it == device_actors_.end() ? caf::actor() : it->second;
}

uint64_t ClusterView::IncarnationOf(const std::string& device) const {
  const ClusterTask* t = TaskOf(device);
  return t ? t->status.incarnation : 0;
}

std::vector<TaskPeer> ClusterView::Peers() const {
  std::vector<TaskPeer> peers;
  for (const auto& t : tasks_) {
    TaskPeer p;
    p.task = t.name;
    p.incarnation = t.status.incarnation;
    p.host = t.status.transport_host;
    p.port = t.status.transport_port;
    if (UnspecifiedHost(p.host)) {  // bound to every interface: reach it where the cluster says it is
      uint16_t ignored;
      if (!SplitHostPort(t.address, &p.host, &ignored).ok()) p.host = "127.0.0.1";
    }
    peers.push_back(std::move(p));
  }
  return peers;
}

}  // namespace actorflow
