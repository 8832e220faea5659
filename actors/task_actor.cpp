#include "actorflow/actors/task_actor.hpp"

#include <caf/all.hpp>

#include <map>

#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {

namespace {

struct TaskState {
  TaskActorConfig config;
  static const char* name;
};
const char* TaskState::name = "task_actor";

using TaskActor = caf::stateful_actor<TaskState>;

}  // namespace

caf::actor SpawnTaskActor(caf::actor_system& sys, TaskActorConfig config) {
  return sys.spawn([config = std::move(config)](TaskActor* self) -> caf::behavior {
    self->state.config = config;
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
          auto rp = self->make_response_promise();
          if (req.session_handle.empty()) {
            rp.deliver(CreateWorkerSessionResponse{errors::InvalidArgument("empty worker session handle"), {}});
            return;
          }
          for (const auto& p : req.peers) {
            if (p.task == st.config.task) {
              if (p.incarnation != st.config.incarnation) {
                rp.deliver(CreateWorkerSessionResponse{
                    errors::Aborted("task ", st.config.task, " restarted: the master knows incarnation ", p.incarnation,
                                    ", this is ", st.config.incarnation),
                    {}});
                return;
              }
              continue;
            }
            if (st.config.membership)
              st.config.membership->Update(TaskRecord::At(p.task, p.host, p.port, p.incarnation));
          }
          // The worker opens the session (and monitors its master) and answers.
          rp.delegate(st.config.worker, req);
        },
        [self](const DeleteWorkerSessionRequest& req) {
          self->make_response_promise().delegate(self->state.config.worker, req);
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
