// The cluster service: how a master finds and enlists the tasks of a cluster,
// and how a client reaches a master in another process (TensorFlow's
// WorkerService GetStatus/CreateWorkerSession and its MasterService).
//
// Worker service (the task actor each server publishes, actors/task_actor.hpp):
//   GetStatusRequest           -> GetStatusResponse        the task, its incarnation, its devices'
//                                                          actors, its rendezvous and transport address
//   CreateWorkerSessionRequest -> CreateWorkerSessionResponse   the master's session: the task starts a
//                                                          worker session (actors/worker_session.hpp)
//                                                          that monitors the master, and its membership
//                                                          learns the peers' transport addresses
//   DeleteWorkerSessionRequest -> StatusResponse           the session is over: its worker session closes
//   PingRequest                -> PingResponse             answered by a scheduled actor (liveness)
//   ShutdownRequest            -> StatusResponse           end the server (from a cluster member)
//
// Master service (a server's master, master/master_service.hpp):
//   MasterCreateSessionRequest -> MasterCreateSessionResponse   a session actor serving one client
//   MasterExtendRequest, MasterCloseRequest, MasterResetRequest -> StatusResponse
//   MasterRunRequest           -> MasterRunResponse
//
// Every message may cross a process: registered in net/protocol.cpp and
// round-tripped through a real connection by tests/protocol_test.cpp.
#pragma once

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/step_stats.hpp"
#include "actorflow/net/wire_format.hpp"

namespace actorflow {

struct StatusResponse {
  Status status;
};

struct GetStatusRequest {
  std::string from;  // the asking task or client, for the server's log
};

struct RemoteDeviceInfo {
  std::string name;  // "/job:ps/replica:0/task:0/device:CPU:0"
  std::string type;  // "CPU", "GPU"
  caf::actor actor;  // its device actor
};

struct GetStatusResponse {
  std::string task;  // "/job:ps/replica:0/task:0"
  uint64_t incarnation = 0;
  std::vector<RemoteDeviceInfo> devices;
  caf::actor rendezvous;
  caf::actor container;
  caf::actor master;  // the server's master service
  std::string transport_host;
  uint16_t transport_port = 0;
};

/// Where a task of a worker session takes tensors (its transport address).
struct TaskPeer {
  std::string task;
  uint64_t incarnation = 0;
  std::string host;
  uint16_t port = 0;
};

struct CreateWorkerSessionRequest {
  std::string session_handle;
  caf::actor master;  // monitored: when it goes down, the session's graphs go too
  std::vector<TaskPeer> peers;
};

struct CreateWorkerSessionResponse {
  Status status;
  caf::actor worker_session;  // the session's partitions on this task (actors/worker_session.hpp)
};

struct DeleteWorkerSessionRequest {
  std::string session_handle;
};

struct PingRequest {};

struct PingResponse {
  uint64_t incarnation = 0;
};

struct ShutdownRequest {
  std::string reason;
};

struct MasterCreateSessionRequest {
  std::string graph_def;  // serialized proto::GraphDef (may be empty: Extend later)
  caf::actor client;      // monitored by the session: when it goes down, the session is closed
  int32_t placement = 0;  // PlacementStrategy
  bool allow_soft_placement = false;
  bool truncate_float32_on_wire = false;  // PartitionOptions'
  bool do_cse = true;                     // GraphOptions'
  bool do_constant_folding = true;
  int32_t fuse_optimizer_updates = 1;  // a FuseUpdates (graph/fuse_updates.hpp): kOnGpus
  bool capture_gpu_steps = true;       // GraphOptions'
  bool do_remapping = true;            // GraphOptions'
};

struct MasterCreateSessionResponse {
  Status status;
  caf::actor session;  // the actor serving this client's session
};

struct MasterExtendRequest {
  std::string graph_def;
};

struct MasterRunRequest {
  std::vector<std::string> feed_names;
  std::vector<Tensor> feed_values;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  int64_t timeout_ms = 0;
  int32_t trace_level = 0;
};

struct MasterRunResponse {
  Status status;
  std::vector<Tensor> outputs;
  std::vector<NodeExecStats> stats;
  uint64_t num_cached = 0;
  std::vector<std::string> placement;  // node, device, node, device, ... (of the last signature prepared)
};

struct MasterCloseRequest {};

struct MasterResetRequest {
  std::vector<std::string> containers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StatusResponse& x) {
  return f(caf::meta::type_name("StatusResponse"), x.status);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GetStatusRequest& x) {
  return f(caf::meta::type_name("GetStatusRequest"), x.from);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RemoteDeviceInfo& x) {
  return f(caf::meta::type_name("RemoteDeviceInfo"), x.name, x.type, x.actor);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GetStatusResponse& x) {
  return f(caf::meta::type_name("GetStatusResponse"), x.task, x.incarnation, x.devices, x.rendezvous, x.container,
           x.master, x.transport_host, x.transport_port);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskPeer& x) {
  return f(caf::meta::type_name("TaskPeer"), x.task, x.incarnation, x.host, x.port);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CreateWorkerSessionRequest& x) {
  return f(caf::meta::type_name("CreateWorkerSessionRequest"), x.session_handle, x.master, x.peers);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CreateWorkerSessionResponse& x) {
  return f(caf::meta::type_name("CreateWorkerSessionResponse"), x.status, x.worker_session);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeleteWorkerSessionRequest& x) {
  return f(caf::meta::type_name("DeleteWorkerSessionRequest"), x.session_handle);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PingRequest&) {
  return f(caf::meta::type_name("PingRequest"));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PingResponse& x) {
  return f(caf::meta::type_name("PingResponse"), x.incarnation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShutdownRequest& x) {
  return f(caf::meta::type_name("ShutdownRequest"), x.reason);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterCreateSessionRequest& x) {
  return f(caf::meta::type_name("MasterCreateSessionRequest"), x.graph_def, x.client, x.placement,
           x.allow_soft_placement, x.truncate_float32_on_wire, x.do_cse, x.do_constant_folding,
           x.fuse_optimizer_updates, x.capture_gpu_steps, x.do_remapping);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterCreateSessionResponse& x) {
  return f(caf::meta::type_name("MasterCreateSessionResponse"), x.status, x.session);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterExtendRequest& x) {
  return f(caf::meta::type_name("MasterExtendRequest"), x.graph_def);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterRunRequest& x) {
  return f(caf::meta::type_name("MasterRunRequest"), x.feed_names, x.feed_values, x.fetches, x.targets, x.timeout_ms,
           x.trace_level);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterRunResponse& x) {
  return f(caf::meta::type_name("MasterRunResponse"), x.status, x.outputs, x.stats, x.num_cached, x.placement);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterCloseRequest&) {
  return f(caf::meta::type_name("MasterCloseRequest"));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, MasterResetRequest& x) {
  return f(caf::meta::type_name("MasterResetRequest"), x.containers);
}

}  // namespace actorflow
