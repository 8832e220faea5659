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

struct WatchedPeer {
  std::string address;
  uint64_t incarnation = 0;
  caf::actor handle;  // monitored; invalid while failed
  bool failed = false;
  bool probing = false;  // a probe or an ask in flight
  std::chrono::milliseconds wait{0};
};

struct WatcherState {
  std::map<std::string, WatchedPeer> peers;
  static inline const char* name = "peer_watcher";
};

using Self = caf::stateful_actor<WatcherState>*;

caf::behavior Watcher(Self self, Membership* membership, PeerWatcherOptions o) {
  auto log = [o](const std::string& line) {
    if (o.log) std::fprintf(stderr, "actorflow: %s: %s\n", o.task.c_str(), line.c_str());
  };
  // The next probe of `task`, after its wait (growing).
  auto schedule = [self, o](const std::string& task) {
    auto it = self->state.peers.find(task);
    if (it == self->state.peers.end()) return;
    WatchedPeer& p = it->second;
    p.probing = false;
    p.wait = p.wait.count() == 0 ? o.first_probe : std::min(o.max_probe, p.wait * 2);
    self->delayed_send(self, p.wait, probe_atom::value, task);
  };
  auto watch = [self, log](const std::string& task, const std::string& address, uint64_t incarnation,
                           const caf::actor& handle) {
    if (!handle) return;
    WatchedPeer& p = self->state.peers[task];
    if (p.failed) log("task " + task + " is back (incarnation " + std::to_string(incarnation) + "): watched again");
    p.failed = false;
    p.wait = std::chrono::milliseconds(0);
    p.address = address;
    p.incarnation = incarnation;
    if (p.handle == handle) return;
    if (p.handle) self->demonitor(p.handle);  // its down notice no longer counts
    p.handle = handle;
    self->monitor(handle);
  };
  self->set_down_handler([self, membership, log, schedule](caf::down_msg& down) {
    for (auto& [task, p] : self->state.peers) {
      if (!p.handle || p.handle.address() != down.source) continue;
      const std::string why = "task " + task + " is down (" + caf::to_string(down.reason) + ")";
      log(why + ": probing it");
      const bool probed = p.failed;  // already (failed by the transport first): one chain of probes
      p.handle = caf::actor();
      p.failed = true;
      membership->MarkFailed(task, p.incarnation, errors::Unavailable(why));
      if (!probed) schedule(task);
      return;
    }
  });
  return {
      // Failed by another writer (the transport: a connection to it failed)
      // while its actor is still up: probed like one that went down, so that
      // a task alive and answering is never left failed.
      [self, log, schedule](failed_atom, const std::string& task, uint64_t incarnation) {
        auto it = self->state.peers.find(task);
        if (it == self->state.peers.end() || it->second.failed || it->second.incarnation != incarnation) return;
        log("task " + task + " was marked failed: probing it");
        it->second.failed = true;
        schedule(task);
      },
      [watch](watch_atom, const std::string& task, const std::string& address, uint64_t incarnation,
              const caf::actor& handle) { watch(task, address, incarnation, handle); },
      [self, membership, o](probe_atom, const std::string& task) {
        auto it = self->state.peers.find(task);
        if (it == self->state.peers.end() || !it->second.failed || it->second.probing) return;
        if (!membership->Find(task)) {  // it left the cluster
          self->state.peers.erase(it);
          return;
        }
        it->second.probing = true;
        // The TCP connect on a thread of its own (a blocking actor): this
        // actor, and CAF's middleman, never wait on an unreachable host.
        const caf::actor watcher = caf::actor_cast<caf::actor>(self);
        const std::string address = it->second.address;
        self->system().spawn([watcher, task, address, o](caf::blocking_actor* probe) {
          probe->send(watcher, probed_atom::value, task, PeerWatcher::Reachable(address, o.ask_timeout));
        });
      },
      [self, membership, o, watch, schedule](probed_atom, const std::string& task, bool reachable) {
        auto it = self->state.peers.find(task);
        if (it == self->state.peers.end() || !it->second.failed) return;
        if (!reachable) return schedule(task);
        std::string host;
        uint16_t port = 0;
        if (!SplitHostPort(it->second.address, &host, &port).ok()) return schedule(task);
        caf::actor_system& sys = self->system();
        const caf::io::middleman_actor connector =
            sys.has_openssl_manager() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
        const std::string address = it->second.address;
        self->request(connector, o.ask_timeout, caf::connect_atom::value, host, port)
            .then(
                [=](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
                  if (!ptr) return schedule(task);
                  const caf::actor actor = caf::actor_cast<caf::actor>(ptr);
                  self->request(actor, o.ask_timeout, GetStatusRequest{o.task})
                      .then(
                          [=](GetStatusResponse& r) {
                            auto at = self->state.peers.find(task);
                            if (at == self->state.peers.end() || !at->second.failed) return;
                            if (r.task != task) return schedule(task);  // another server there now
                            // What the task says of itself: alive again, or a new incarnation.
                            if (!membership->Update(TaskRecord::At(task, r.transport_host, r.transport_port,
                                                                   r.incarnation))
                                     .ok())
                              return schedule(task);
                            watch(task, address, r.incarnation, actor);
                          },
                          [=](caf::error&) { schedule(task); });
                },
                [=](caf::error&) { schedule(task); });
      },
  };
}

}  // namespace

PeerWatcher::PeerWatcher(caf::actor_system& system, Membership* membership, PeerWatcherOptions options)
    : membership_(membership), actor_(system.spawn<caf::hidden>(Watcher, membership, std::move(options))) {
  // The listener only hands the change to the actor (it must not block or write to the membership).
  subscription_ = membership->Subscribe([a = actor_](const MembershipChange& c) {
    if (c.kind == MembershipChange::Kind::kFailed) caf::anon_send(a, failed_atom::value, c.task.name, c.task.incarnation);
  });
}

PeerWatcher::~PeerWatcher() {
  membership_->Unsubscribe(subscription_);
  if (actor_) caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

void PeerWatcher::Watch(const std::string& task, const std::string& address, uint64_t incarnation,
                        const caf::actor& handle) {
  caf::anon_send(actor_, watch_atom::value, task, address, incarnation, handle);
}

bool PeerWatcher::Reachable(const std::string& address, std::chrono::milliseconds timeout) {
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(address, &host, &port).ok()) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a && !ok; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      rc = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
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
