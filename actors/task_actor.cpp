#include "actorflow/actors/task_actor.hpp"

#include <caf/all.hpp>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

namespace {

struct TaskState {
  TaskActorConfig config;
  static const char* name;
};
const char* TaskState::name = "task_actor";

using TaskActor = caf::stateful_actor<TaskState>;

}  // namespace

GetStatusResponse DescribeTask(Runtime& runtime, const std::string& transport_host, caf::actor master) {
  GetStatusResponse r;
  r.task = runtime.task_name();
  r.incarnation = runtime.incarnation();
  for (size_t i = 0; i < runtime.devices().size(); ++i)
    r.devices.push_back({runtime.devices()[i]->name(), runtime.devices()[i]->device_type(),
                         runtime.device_actor(static_cast<int>(i))});
  r.rendezvous = runtime.rendezvous_actor();
  r.container = runtime.container_actor();
  r.master = std::move(master);
  if (runtime.transport()) {
    r.transport_host = transport_host;
    r.transport_port = runtime.transport()->port();
  }
  return r;
}

caf::actor SpawnTaskActor(caf::actor_system& sys, TaskActorConfig config) {
  return sys.spawn([config = std::move(config)](TaskActor* self) -> caf::behavior {
    self->state.config = config;
    return {
        [self](const GetStatusRequest&) { return self->state.config.status; },
        [self](const CreateWorkerSessionRequest& req) {
          auto& st = self->state;
          auto rp = self->make_response_promise();
          if (req.session_handle.empty()) {
            rp.deliver(CreateWorkerSessionResponse{errors::InvalidArgument("empty worker session handle"), {}});
            return;
          }
          for (const auto& p : req.peers) {
            if (p.task == st.config.status.task) {
              if (p.incarnation != st.config.status.incarnation) {
                rp.deliver(CreateWorkerSessionResponse{
                    TaskRestartedError(p.task, st.config.status.incarnation, p.incarnation), {}});
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
        [self](const PingRequest&) { return PingResponse{self->state.config.status.incarnation}; },
        [self](const ShutdownRequest& req) {
          if (self->state.config.on_shutdown) self->state.config.on_shutdown(req.reason);
          return StatusResponse{Status::OK()};
        },
    };
  });
}

}  // namespace actorflow
