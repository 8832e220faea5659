#include "actorflow/actors/worker_session.hpp"

#include <caf/all.hpp>

#include <iostream>
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <set>

#include "actorflow/net/protocol.hpp"

namespace actorflow {

namespace {

// A device actor may take this long to build a partition's kernels.
constexpr auto kRegisterTimeout = std::chrono::minutes(5);

struct Partition {
  std::string session;
  caf::actor device;
  uint64_t device_handle = 0;  // the device actor's graph handle
};

// One master session's state on this task.
struct WorkerSession {
  caf::actor master;          // monitored when set
  std::set<uint64_t> handles;  // its partitions (keys of WorkerState::partitions)
};

struct WorkerState {
  WorkerConfig config;
  std::map<std::string, WorkerSession> sessions;  // by session handle
  std::map<uint64_t, Partition> partitions;       // the worker's handle -> where it runs
  uint64_t next_handle = 1;
  // Handles of sessions closed because their master went down, newest last
  // (at most kDroppedKept): a step for one is Aborted, not NotFound, so a
  // master that was only cut off or stopped starts a new session.
  std::deque<uint64_t> dropped;  // searched only for a step that finds no partition
  static constexpr size_t kDroppedKept = 4096;
  static const char* name;
};
const char* WorkerState::name = "worker";

using WorkerActor = caf::stateful_actor<WorkerState>;

void CloseWorkerSession(WorkerActor* self, const std::string& handle, bool master_down = false) {
  auto& st = self->state;
  auto it = st.sessions.find(handle);
  if (it == st.sessions.end()) return;
  for (uint64_t h : it->second.handles) {
    st.partitions.erase(h);
    if (!master_down) continue;
    try {
      st.dropped.push_back(h);
      if (st.dropped.size() > WorkerState::kDroppedKept) st.dropped.pop_front();
    } catch (...) {  // out of memory: that handle's steps are NotFound (not retried) instead
    }
  }
  if (it->second.master) self->demonitor(it->second.master);
  st.sessions.erase(it);
  // Once per device: its graphs of this session go, their steps are
  // cancelled, and the session's shared stateful kernels are released.
  for (const auto& d : st.config.devices) self->send(d.actor, CloseSession{handle, master_down});
}

// One registration in flight: the answers of its device actors, gathered.
struct Registration {
  caf::response_promise promise;
  bool local = false;  // asked from this process: the answer names the device actors too
  std::string session;
  std::vector<caf::actor> devices;
  std::vector<uint64_t> device_handles;
  std::vector<bool> registered;
  size_t pending = 0;
  Status status;
};

void Finish(WorkerActor* self, const std::shared_ptr<Registration>& r) {
  auto& st = self->state;
  RegisterPartitionsResponse resp;
  auto session = st.sessions.find(r->session);
  if (r->status.ok() && session == st.sessions.end())
    r->status = errors::Cancelled("the worker session ", r->session, " on ", st.config.task, " is closed");
  if (!r->status.ok()) {
    for (size_t i = 0; i < r->devices.size(); ++i)
      if (r->registered[i]) self->send(r->devices[i], DeregisterGraph{r->device_handles[i]});
    resp.status = r->status;
    r->promise.deliver(std::move(resp));
    return;
  }
  for (size_t i = 0; i < r->devices.size(); ++i) {
    const uint64_t h = st.next_handle++;
    st.partitions[h] = Partition{r->session, r->devices[i], r->device_handles[i]};
    session->second.handles.insert(h);
    resp.graph_handles.push_back(h);
    if (r->local) {
      resp.devices.push_back(r->devices[i]);
      resp.device_handles.push_back(r->device_handles[i]);
    }
  }
  r->promise.deliver(std::move(resp));
}

void Register(WorkerActor* self, RegisterPartitionsRequest& req) {
  auto& st = self->state;
  auto r = std::make_shared<Registration>();
  r->local = self->current_sender() && self->current_sender()->node() == self->node();
  r->promise = self->make_response_promise();
  r->session = req.session_handle;
  auto fail = [&](Status s) {
    RegisterPartitionsResponse resp;
    resp.status = std::move(s);
    r->promise.deliver(std::move(resp));
  };
  if (!st.sessions.count(req.session_handle))
    return fail(errors::FailedPrecondition("no worker session ", req.session_handle, " on ", st.config.task));
  if (req.devices.size() != req.graph_defs.size())
    return fail(errors::InvalidArgument(req.devices.size(), " devices for ", req.graph_defs.size(), " partitions"));
  for (const auto& name : req.devices) {
    caf::actor a;
    for (const auto& d : st.config.devices)
      if (d.name == name) a = d.actor;
    if (!a) return fail(errors::NotFound("task ", st.config.task, " has no device ", name));
    r->devices.push_back(a);
  }
  const size_t n = r->devices.size();
  r->device_handles.assign(n, 0);
  r->registered.assign(n, false);
  r->pending = n;
  if (n == 0) return Finish(self, r);
  for (size_t i = 0; i < n; ++i) {
    auto done = [self, r, i](Status s, uint64_t handle) {
      if (s.ok()) {
        r->device_handles[i] = handle;
        r->registered[i] = true;
      } else if (r->status.ok()) {
        r->status = s;  // the device's own error names the node; no answer names the device
      }
      if (--r->pending == 0) Finish(self, r);
    };
    self->request(r->devices[i], kRegisterTimeout, RegisterGraphRequest{std::move(req.graph_defs[i]), r->session})
        .then([done](RegisterGraphResponse& resp) { done(resp.status, resp.graph_handle); },
              [done, self, device = req.devices[i]](caf::error& err) {
                done(errors::Unavailable("registering a partition on ", device, ": no answer: ",
                                         self->system().render(err)),
                     0);
              });
  }
}

}  // namespace

caf::actor SpawnWorker(caf::actor_system& sys, WorkerConfig config) {
  return sys.spawn([config = std::move(config)](WorkerActor* self) -> caf::behavior {
    self->state.config = config;
    // Linked to its devices: a device actor that ends takes the worker down,
    // so a master waiting for a step delegated to it (monitoring the worker)
    // hears of it at once, as it would from the device actor itself.
    for (const auto& d : config.devices) self->link_to(d.actor);
    self->set_down_handler([self](const caf::down_msg& down) {
      std::vector<std::string> ended;
      for (const auto& [handle, session] : self->state.sessions)
        if (session.master && session.master.address() == down.source) ended.push_back(handle);
      for (const auto& h : ended) {
        std::cerr << "actorflow: " << self->state.config.task << ": the master of session " << h << " went down ("
                  << to_string(down.reason) << "); its graphs are dropped\n";
        CloseWorkerSession(self, h, /*master_down=*/true);
      }
    });
    return {
        [self](const CreateWorkerSessionRequest& req) {
          auto [it, opened] = self->state.sessions.try_emplace(req.session_handle);
          if (opened && req.master) {
            it->second.master = req.master;
            self->monitor(req.master);
          }
          return CreateWorkerSessionResponse{Status::OK(), caf::actor_cast<caf::actor>(self)};
        },
        [self](RegisterPartitionsRequest& req) { Register(self, req); },
        [self](RunStepRequest& req) {
          auto rp = self->make_response_promise();
          auto it = self->state.partitions.find(req.graph_handle);
          if (it == self->state.partitions.end()) {
            RunStepResponse resp{
                std::find(self->state.dropped.begin(), self->state.dropped.end(), req.graph_handle) !=
                        self->state.dropped.end()
                    ? errors::Aborted("partition ", req.graph_handle, " of ", self->state.config.task,
                                      " was dropped with its session: its master was taken for dead (start a new "
                                      "session)")
                    : errors::NotFound("no partition ", req.graph_handle, " in the worker of ",
                                       self->state.config.task),
                {},
                {}};
            // A request that named a sink came as a plain message: its answer goes there.
            if (req.reply_sink) req.reply_sink->Reply(req.reply_token, std::move(resp));
            else rp.deliver(std::move(resp));
            return;
          }
          req.graph_handle = it->second.device_handle;
          rp.delegate(it->second.device, std::move(req));
        },
        [self](const DeregisterGraph& d) {
          auto it = self->state.partitions.find(d.graph_handle);
          if (it == self->state.partitions.end()) return;
          self->send(it->second.device, DeregisterGraph{it->second.device_handle});
          auto session = self->state.sessions.find(it->second.session);
          if (session != self->state.sessions.end()) session->second.handles.erase(d.graph_handle);
          self->state.partitions.erase(it);
        },
        [self](const CloseSession& c) { CloseWorkerSession(self, c.session_handle); },
        [self](const DeleteWorkerSessionRequest& req) {
          CloseWorkerSession(self, req.session_handle);
          return StatusResponse{Status::OK()};
        },
    };
  });
}

}  // namespace actorflow
