#include "actorflow/actors/peer_watcher.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/manager.hpp>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>

#include "actorflow/comm/membership.hpp"
#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/net/cluster_service.hpp"

namespace actorflow {

namespace {

using watch_atom = caf::atom_constant<caf::atom("afwatch")>;
using probe_atom = caf::atom_constant<caf::atom("afprobe")>;
using probed_atom = caf::atom_constant<caf::atom("afprobed")>;
using failed_atom = caf::atom_constant<caf::atom("affailed")>;

using Clock = std::chrono::steady_clock;

struct WatchedPeer {
  std::string address;
  uint64_t incarnation = 0;
  caf::actor handle;  // monitored; invalid after its down
  bool failed = false;
  bool probing = false;      // a probe in flight
  uint64_t chain = 0;        // the probes' generation: a probe of an older one is void
  std::chrono::milliseconds wait{0};
  Clock::time_point back{};  // when it was last counted again
};

struct WatcherState {
  std::map<std::string, WatchedPeer> peers;
  static inline const char* name = "peer_watcher";
};

using Self = caf::stateful_actor<WatcherState>*;

// What a probe found (on the probe's thread; sent back as its parts).
struct Answer {
  bool ok = false;
  caf::actor actor;
  GetStatusResponse status;
};

// The probe, blocking, on a thread of its own: the server's address accepts
// a TCP connection; CAF connects; the task answers its status; a task at the
// incarnation watched (the same process: a link back, a process resumed)
// also accepts on its transport address (a failure of its data path is not
// undone by its control path alone).
Answer Probe(caf::blocking_actor* self, const std::string& task, const std::string& address,
             uint64_t incarnation, const PeerWatcherOptions& o) {
  Answer a;
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(address, &host, &port).ok() || !PeerWatcher::Reachable(address, o.ask_timeout)) return a;
  caf::actor_system& sys = self->system();
  const caf::io::middleman_actor connector =
      sys.has_openssl_manager() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  self->request(connector, o.ask_timeout, caf::connect_atom::value, host, port)
      .receive([&](const caf::node_id&, caf::strong_actor_ptr& ptr,
                   const std::set<std::string>&) { a.actor = caf::actor_cast<caf::actor>(ptr); },
               [&](caf::error&) {});
  if (!a.actor) return a;
  bool answered = false;
  self->request(a.actor, o.ask_timeout, GetStatusRequest{o.task})
      .receive(
          [&](GetStatusResponse& r) {
            a.status = std::move(r);
            answered = true;
          },
          [&](caf::error&) {});
  if (!answered || a.status.task != task) return a;  // silent, or another server there now
  // A server bound to every interface says so; peers reach it at its cluster address's host
  // (as ClusterView::Peers): else the record would look moved, a restart.
  if (UnspecifiedHost(a.status.transport_host)) a.status.transport_host = host;
  if (a.status.incarnation == incarnation &&
      !PeerWatcher::Reachable(a.status.transport_host + ":" + std::to_string(a.status.transport_port),
                              o.ask_timeout))
    return a;
  a.ok = true;
  return a;
}

caf::behavior Watcher(Self self, Membership* membership, PeerWatcherOptions o) {
  auto log = [o](const std::string& line) {
    if (o.log) std::fprintf(stderr, "actorflow: %s: %s\n", o.task.c_str(), line.c_str());
  };
  // The next probe of `task`, after its wait: growing from the first
  // (doubled each miss); a task that failed again soon after it was counted
  // again (its data path failing while it answers) goes on from its last
  // wait, so a task that flaps is probed every max_probe at most.
  auto schedule = [self, o](const std::string& task) {
    auto it = self->state.peers.find(task);
    if (it == self->state.peers.end()) return;
    WatchedPeer& p = it->second;
    p.probing = false;
    p.wait = p.wait.count() == 0 ? o.first_probe : std::min(o.max_probe, p.wait * 2);
    self->delayed_send(self, p.wait, probe_atom::value, task, p.chain);
  };
  // Fails `task` (held alive until now) and starts its probes.
  auto fail = [self, o, schedule](const std::string& task) {
    WatchedPeer& p = self->state.peers[task];
    p.failed = true;
    ++p.chain;
    if (Clock::now() - p.back > 5 * o.max_probe) p.wait = std::chrono::milliseconds(0);
    schedule(task);
  };
  auto watch = [self, log, membership](const std::string& task, const std::string& address, uint64_t incarnation,
                                       const caf::actor& handle) {
    if (!handle) return;
    // A view older than the membership's record (a process since restarted) watches nothing.
    const auto known = membership->Find(task);
    if (known && known->incarnation != 0 && known->incarnation != incarnation) return;
    WatchedPeer& p = self->state.peers[task];
    if (p.failed) {
      log("task " + task + " is back (incarnation " + std::to_string(incarnation) + "): watched again");
      p.back = Clock::now();
    }
    p.failed = false;
    ++p.chain;  // a probe in flight is void
    p.address = address;
    p.incarnation = incarnation;
    if (p.handle == handle) return;
    if (p.handle) self->demonitor(p.handle);  // its down notice no longer counts
    p.handle = handle;
    self->monitor(handle);
  };
  self->set_down_handler([self, membership, log, fail](caf::down_msg& down) {
    for (auto& [task, p] : self->state.peers) {
      if (!p.handle || p.handle.address() != down.source) continue;
      const std::string why = "task " + task + " is down (" + caf::to_string(down.reason) + ")";
      log(why + ": probing it");
      const bool probed = p.failed;  // already (failed by the transport first): one chain of probes
      p.handle = caf::actor();
      if (!probed) fail(task);
      membership->MarkFailed(task, p.incarnation, errors::Unavailable(why));
      return;
    }
  });
  return {
      // Failed by another writer (the transport: a connection to it failed)
      // while its actor is still up: probed like one that went down, so that
      // a task alive and answering is never left failed.
      [self, log, fail](failed_atom, const std::string& task, uint64_t incarnation) {
        auto it = self->state.peers.find(task);
        if (it == self->state.peers.end() || it->second.failed || it->second.incarnation != incarnation) return;
        log("task " + task + " was marked failed: probing it");
        fail(task);
      },
      [watch](watch_atom, const std::string& task, const std::string& address, uint64_t incarnation,
              const caf::actor& handle) { watch(task, address, incarnation, handle); },
      [self, membership, o](probe_atom, const std::string& task, uint64_t chain) {
        auto it = self->state.peers.find(task);
        if (it == self->state.peers.end()) return;
        WatchedPeer& p = it->second;
        if (!p.failed || p.probing || p.chain != chain) return;
        if (!membership->Find(task)) {  // it left the cluster
          self->state.peers.erase(it);
          return;
        }
        p.probing = true;
        // On a thread of its own (a blocking actor): this actor, and CAF's
        // middleman, never wait on an unreachable host.
        const caf::actor watcher = caf::actor_cast<caf::actor>(self);
        self->system().spawn([watcher, task, chain, address = p.address, incarnation = p.incarnation,
                              o](caf::blocking_actor* probe) {
          Answer a = Probe(probe, task, address, incarnation, o);
          probe->send(watcher, probed_atom::value, task, chain, a.ok, a.actor, std::move(a.status));
        });
      },
      [self, membership, watch, schedule](probed_atom, const std::string& task, uint64_t chain, bool ok,
                                          const caf::actor& actor, const GetStatusResponse& r) {
        auto it = self->state.peers.find(task);
        if (it == self->state.peers.end() || !it->second.failed || it->second.chain != chain) return;
        // What the task says of itself: alive again, or a new incarnation.
        if (!ok || !membership->Update(TaskRecord::At(task, r.transport_host, r.transport_port, r.incarnation)).ok())
          return schedule(task);
        watch(task, it->second.address, r.incarnation, actor);
      },
  };
}

}  // namespace

PeerWatcher::PeerWatcher(caf::actor_system& system, Membership* membership, PeerWatcherOptions options)
    : system_(system),
      membership_(membership),
      actor_(system.spawn<caf::hidden>(Watcher, membership, std::move(options))) {
  // The listener only hands the change to the actor (it must not block or write to the membership).
  subscription_ = membership->Subscribe([a = actor_](const MembershipChange& c) {
    if (c.kind == MembershipChange::Kind::kFailed) caf::anon_send(a, failed_atom::value, c.task.name, c.task.incarnation);
  });
}

PeerWatcher::~PeerWatcher() {
  membership_->Unsubscribe(subscription_);
  // Ended and waited for: no failure or return reaches the membership after this.
  caf::scoped_actor self{system_};
  self->send_exit(actor_, caf::exit_reason::user_shutdown);
  self->wait_for(actor_);
}

void PeerWatcher::Watch(const std::string& task, const std::string& address, uint64_t incarnation,
                        const caf::actor& handle) {
  caf::anon_send(actor_, watch_atom::value, task, address, incarnation, handle);
}

bool PeerWatcher::Reachable(const std::string& address, std::chrono::milliseconds timeout) {
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(address, &host, &port).ok()) return false;
  const auto until = Clock::now() + timeout;  // one deadline, every address of the host
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a && !ok; a = a->ai_next) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      rc = ::poll(&pfd, 1, static_cast<int>(left));
      int err = 0;
      socklen_t len = sizeof(err);
      rc = rc == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 ? 0 : -1;
    }
    ok = rc == 0;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return ok;
}

}  // namespace actorflow
