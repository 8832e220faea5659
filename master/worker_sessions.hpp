// WorkerSessions: one master session's worker session on every task it uses
// (actors/worker_session.hpp), this process's task included: a single
// process is a cluster of one task, opened the same way.
//
// Open asks every task at once: this task's worker directly, every other
// task's through its task actor (CreateWorkerSessionRequest, which also makes
// the session's peers known to that process); this process learns the peers
// too. An actor standing for the master ("presence") is what each remote
// worker monitors: when it goes (the master's process died), the workers drop
// the session. The session's remote tasks go to the process's peer watcher
// (actors/peer_watcher.hpp): one that dies, or hangs past CAF's heartbeat
// timeout, is marked failed in this process's membership, which fails its
// collectives with that task at once; one that answers again is counted again.
//
// Close ends every worker session once (each worker sends CloseSession to
// its devices once), then the presence actor. Thread-safe after Open.
#pragma once

#include <caf/actor.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/net/cluster_service.hpp"

namespace actorflow {

class ClusterView;
class Runtime;

/// Makes the transport addresses and incarnations of a session's tasks known
/// to this process's membership (`peers` may include this process's own
/// task, skipped).
void AnnouncePeers(Runtime* runtime, const std::vector<TaskPeer>& peers);

class WorkerSessions {
 public:
  /// Opens `handle`'s worker session on every task of `view`, in parallel;
  /// the first failure names its task (and the sessions opened are closed).
  static Status Open(Runtime* runtime, const ClusterView& view, const std::string& handle,
                     std::chrono::milliseconds deadline, std::unique_ptr<WorkerSessions>* out);
  ~WorkerSessions();  // Close()
  WorkerSessions(const WorkerSessions&) = delete;
  WorkerSessions& operator=(const WorkerSessions&) = delete;

  const std::string& handle() const { return handle_; }
  /// The worker session on `task`; an invalid actor when none.
  caf::actor Of(const std::string& task) const;
  /// Ends every worker session (once) and the presence actor. Idempotent.
  void Close();

 private:
  WorkerSessions(std::string handle, caf::actor presence);

  const std::string handle_;
  caf::actor presence_;
  mutable std::mutex mu_;  // guards sessions_, closed_
  std::map<std::string, caf::actor> sessions_;  // task -> its worker session
  bool closed_ = false;
};

}  // namespace actorflow
