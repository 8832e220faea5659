#include "actorflow/actors/task_actor.hpp"

#include <caf/all.hpp>

#include <iostream>
#include <map>

#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {

namespace {

struct TaskState {
  TaskActorConfig config;
  std::map<std::string, caf::actor> sessions;  // worker session -> its master
  static const char* name;
};
const char* TaskState::name = "task_actor";

using TaskActor = caf::stateful_actor<TaskState>;

void EndSession(TaskActor* self, const std::string& handle) {
  for (const auto& d : self->state.config.devices) self->send(d.actor, CloseSession{handle});
  self->state.sessions.erase(handle);
}

}  // namespace

caf::actor SpawnTaskActor(caf::actor_system& sys, TaskActorConfig config) {
  return sys.spawn([config = std::move(config)](TaskActor* self) -> caf::behavior {
    self->state.config = config;
    self->set_down_handler([self](const caf::down_msg& down) {
      std::vector<std::string> ended;
      for (const auto& [handle, master] : self->state.sessions)
        if (master && master.address() == down.source) ended.push_back(handle);
      for (const auto& h : ended) {
        std::cerr << "actorflow: " << self->state.config.task << ": the master of session " << h
                  << " went down (" << to_string(down.reason) << "); its graphs are dropped\n";
        EndSession(self, h);
      }
    });
    return {
        [self](const GetStatusRequest&) {
          const auto& c = self->state.config;
          GetStatusResponse r;
          r.task = c.task;
          r.incarnation = c.incarnation;
          r.devices = c.devices;
          r.rendezvous = c.rendezvous;
          r.container = c.container;
          r.master = c.master;
          if (c.transport) {
            r.transport_host = c.transport_host;
            r.transport_port = c.transport->port();
          }
          return r;
        },
        [self](const CreateWorkerSessionRequest& req) {
          auto& st = self->state;
          if (req.session_handle.empty()) return StatusResponse{errors::InvalidArgument("empty worker session handle")};
          for (const auto& p : req.peers) {
            if (p.task == st.config.task) {
              if (p.incarnation != st.config.incarnation)
                return StatusResponse{errors::Aborted("task ", st.config.task, " restarted: the master knows incarnation ",
                                                      p.incarnation, ", this is ", st.config.incarnation)};
              continue;
            }
            if (st.config.membership)
              st.config.membership->Update(TaskRecord::At(p.task, p.host, p.port, p.incarnation));
          }
          st.sessions[req.session_handle] = req.master;
          if (req.master) self->monitor(req.master);
          return StatusResponse{Status::OK()};
        },
        [self](const DeleteWorkerSessionRequest& req) {
          EndSession(self, req.session_handle);
          return StatusResponse{Status::OK()};
        },
        [self](const PingRequest&) { return PingResponse{self->state.config.incarnation}; },
        [self](const ShutdownRequest& req) {
          if (self->state.config.on_shutdown) self->state.config.on_shutdown(req.reason);
          return StatusResponse{Status::OK()};
        },
    };
  });
}

}  // namespace actorflow
