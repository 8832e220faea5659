// The peer watcher: this process's watch on the other tasks of its cluster,
// for as long as the process lives (one per networked Runtime), not for one
// session. It is the one place where CAF's view of a peer (its connection,
// its heartbeats) reaches the membership (comm/membership.hpp), both ways:
//   - down: a watched task's actor goes down (its process died, or it was
//     silent past the peer timeout: a hung process, a link down) -> the
//     task is marked failed at the incarnation watched, which fails this
//     process's collectives with it at once;
//   - back: a task it holds failed is probed, from a thread of its own,
//     every 250 ms growing to 2 s: a TCP connect to its server's address;
//     once that accepts, CAF's connect and the task's status
//     (GetStatusRequest); at the incarnation watched (the same process), a
//     TCP connect to its transport address too. Then the membership gets
//     what the task says of itself: alive again at the same incarnation (a
//     link back up, a process resumed), or a new incarnation (restarted);
//     and the watcher watches the task's new actor. A watched task another
//     writer marks failed (the transport: a connection to it failed) is
//     probed the same way; one that fails again within 10 s of coming back
//     keeps its longer wait (a task flapping is probed every 2 s at most).
// So a partition heals by itself on both sides: a task cut off and back is
// counted again by the others, and counts them again, whether or not
// anything else (a new session) tells them. Watched are the tasks a session
// of this process found (a process that only serves, a ps, watches none:
// its peers' failures reach it through the transport alone, as before, and
// a new session of theirs makes them alive again). A watch never ends at the
// first failure (before, each session's monitors fired once, and a task
// back from one failure was unwatched for the rest of the session: a
// later link down of another host left it waiting on a member it still
// held alive).
//
// Watch gives it a task's actor (master/cluster_view.cpp, each task a
// session's view found): a newer handle replaces the old one (whose down
// notice no longer counts: a stale notice never fails a task seen since); a
// view of an incarnation the membership no longer holds is ignored.
//
// The probe keeps CAF's middleman (which connects synchronously, one
// connection at a time) from blocking on an unreachable host: only a host
// that accepted a TCP connection is handed to it.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace actorflow {

class Membership;

struct PeerWatcherOptions {
  std::string task;  // this process's task (GetStatusRequest's `from`)
  std::chrono::milliseconds first_probe{250};  // after a failure; doubled each miss
  std::chrono::milliseconds max_probe{2000};
  std::chrono::milliseconds ask_timeout{3000};  // each TCP probe, CAF's connect, the status
  bool log = true;  // a line on stderr per task down and back
};

class PeerWatcher {
 public:
  PeerWatcher(caf::actor_system& system, Membership* membership, PeerWatcherOptions options);
  ~PeerWatcher();  // ends the actor and waits for it (a probe thread in flight finishes on its own)
  PeerWatcher(const PeerWatcher&) = delete;
  PeerWatcher& operator=(const PeerWatcher&) = delete;

  /// Watches `task` (server address "host:port", `incarnation` as it said)
  /// through `handle`, its task actor. Thread-safe; asynchronous.
  void Watch(const std::string& task, const std::string& address, uint64_t incarnation, const caf::actor& handle);

  /// Whether TCP connects to `address` ("host:port") within `timeout`, over
  /// all of the host's addresses (blocking: for a thread of its own).
  static bool Reachable(const std::string& address, std::chrono::milliseconds timeout);

 private:
  caf::actor_system& system_;
  Membership* membership_;
  caf::actor actor_;
  uint64_t subscription_ = 0;
};

}  // namespace actorflow
