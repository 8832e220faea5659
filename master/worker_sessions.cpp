#include "actorflow/master/worker_sessions.hpp"

#include <caf/all.hpp>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/peer_watcher.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

void AnnouncePeers(Runtime* runtime, const std::vector<TaskPeer>& peers) {
  for (const auto& p : peers)
    if (p.task != runtime->task_name())
      runtime->membership()->Update(TaskRecord::At(p.task, p.host, p.port, p.incarnation));
}

namespace {

// The actor standing for a master: remote workers monitor it (when it goes,
// they drop the session). The tasks of the session are watched by the
// process's peer watcher (actors/peer_watcher.hpp), not per session: a task
// that goes down is marked failed in the membership (which fails this
// process's collectives with it at once), and one that answers again is
// counted again, for as long as the process lives.
caf::actor SpawnPresence(Runtime* runtime, const ClusterView& view) {
  if (PeerWatcher* watcher = runtime->peer_watcher())
    for (const auto& t : view.tasks())
      if (!t.local && t.task_actor) watcher->Watch(t.name, t.address, t.status.incarnation, t.task_actor);
  return runtime->system().spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
}

}  // namespace

WorkerSessions::WorkerSessions(std::string handle, caf::actor presence)
    : handle_(std::move(handle)), presence_(std::move(presence)) {}

WorkerSessions::~WorkerSessions() { Close(); }

Status WorkerSessions::Open(Runtime* runtime, const ClusterView& view, const std::string& handle,
                            std::chrono::milliseconds deadline, std::unique_ptr<WorkerSessions>* out) {
  // The peers first: a task the presence actor sees go down is then one the membership knows.
  const std::vector<TaskPeer> peers = view.Peers();
  AnnouncePeers(runtime, peers);
  std::unique_ptr<WorkerSessions> sessions(new WorkerSessions(handle, SpawnPresence(runtime, view)));
  std::vector<std::unique_ptr<ClientChannel>> started;
  std::vector<const ClusterTask*> asked;
  Status status;
  for (const auto& t : view.tasks()) {
    // This task's worker directly; another task's through its task actor,
    // which makes the session's peers known there first.
    const caf::actor& to = t.local ? runtime->worker_actor() : t.task_actor;
    auto ch = runtime->channels()->Acquire();
    // A remote worker monitors this master; this process's cannot outlive it.
    caf::actor master = t.local ? caf::actor() : sessions->presence_;
    status = ch->Start(to, caf::make_message(CreateWorkerSessionRequest{handle, master, peers}));
    if (!status.ok()) break;
    started.push_back(std::move(ch));
    asked.push_back(&t);
  }
  for (size_t i = 0; i < started.size(); ++i) {  // every request sent is answered (or times out)
    caf::message reply;
    Status s = started[i]->Wait(deadline, &reply);
    CreateWorkerSessionResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (s.ok()) s = resp.status;
    if (s.ok() && !resp.worker_session) s = errors::Internal("no worker session in the answer");
    if (s.ok()) sessions->sessions_[asked[i]->name] = resp.worker_session;
    if (!s.ok() && status.ok())
      status = Status(s.code(), "opening a worker session on task " + asked[i]->name + ": " + s.message());
  }
  if (!status.ok()) return status;  // ~WorkerSessions closes those opened
  *out = std::move(sessions);
  return Status::OK();
}

caf::actor WorkerSessions::Of(const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(task);
  return it == sessions_.end() ? caf::actor() : it->second;
}

void WorkerSessions::Close() {
  std::map<std::string, caf::actor> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    sessions.swap(sessions_);
  }
  for (const auto& [task, session] : sessions) caf::anon_send(session, CloseSession{handle_});
  // The actor standing for this master ends with the session, not with the
  // Session object: a Server destroyed while a closed Session still exists
  // would otherwise wait for it forever (~actor_system).
  if (presence_) caf::anon_send_exit(presence_, caf::exit_reason::user_shutdown);
  presence_ = caf::actor();
}

}  // namespace actorflow
