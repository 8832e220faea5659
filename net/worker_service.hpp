// The worker service: how a master drives a task's worker session
// (actors/worker_session.hpp: one master session's partitions on all of the
// task's devices, TensorFlow's WorkerSession and GraphMgr, in the task's
// worker), and how a worker (or a test) drives one device actor.
//
// To a task's worker:
//   RegisterPartitionsRequest -> RegisterPartitionsResponse   compile the task's partitions, all at once
//   RunStepRequest            -> RunStepResponse              one step of one partition (the worker's handle;
//                                                             a master in the same process sends it to the
//                                                             device actor itself, with the device's handle)
//   DeregisterGraph                                           drop a partition, cancelling its steps
//   CloseSession                                              the session is over: its partitions go
// To a device actor:
//   RegisterGraphRequest -> RegisterGraphResponse   compile a partition once
//   RunStepRequest       -> RunStepResponse         run one step of it (from this process, also as a
//                                                   plain message naming a StepReplySink: answered
//                                                   by a call to it)
//   DeregisterGraph                                 drop it, cancelling its steps
//   CloseSession                                    drop the session's shared kernels
//
// Every message may cross a process: registered in net/protocol.cpp and
// round-tripped through a real connection by tests/protocol_test.cpp (a
// RunStepRequest's reply sink, only ever set within a process, is not).
#pragma once

#include <caf/actor.hpp>
#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "actorflow/core/step_stats.hpp"
#include "actorflow/net/wire_format.hpp"

namespace actorflow {

struct RegisterGraphRequest {
  std::string graph_def;       // serialized proto::GraphDef of the partition
  std::string session_handle;  // plans of one session share their stateful kernels
};

struct RegisterGraphResponse {
  Status status;
  uint64_t graph_handle = 0;
};

/// Partitions of one signature placed on one task, for its worker session.
struct RegisterPartitionsRequest {
  std::string session_handle;
  std::vector<std::string> devices;     // full device names, one per partition
  std::vector<std::string> graph_defs;  // serialized proto::GraphDef, one per partition
};

struct RegisterPartitionsResponse {
  Status status;                         // the first failure, naming its device
  std::vector<uint64_t> graph_handles;   // per partition, for RunStepRequest and DeregisterGraph
  // Only to a master in the worker's own process, else empty: per partition,
  // its device actor and that actor's handle, so that the master's steps go
  // to the device directly (no turn of the worker actor in between).
  std::vector<caf::actor> devices;
  std::vector<uint64_t> device_handles;
};

struct RunStepResponse;

/// Where a step's answer goes without a reply message, for a request made in
/// the device's own process (ClientChannel::StartHereStep): the device calls
/// Reply(token, answer) once, from its actor's turn. Never serialized: a
/// request from another process has none and is answered as a request.
class StepReplySink {
 public:
  virtual ~StepReplySink() = default;
  virtual void Reply(uint64_t token, RunStepResponse&& answer) = 0;
};

struct RunStepRequest {
  uint64_t graph_handle = 0;
  int64_t step_id = 0;       // the client's: shared by all partitions of a step (rendezvous keys)
  std::vector<Tensor> args;  // values for the partition's _Arg nodes, by index
  int64_t timeout_ms = 0;    // 0: no deadline
  bool collect_stats = false;  // fill RunStepResponse::stats
  bool multi_partition = false;  // other partitions run this step too: a failure aborts it at the rendezvous
  // This process only (not serialized): when set, the answer goes to
  // reply_sink with reply_token, and the request is sent as a plain message.
  std::shared_ptr<StepReplySink> reply_sink;
  uint64_t reply_token = 0;
};

struct RunStepResponse {
  Status status;
  std::vector<Tensor> retvals;  // values of the partition's _Retval nodes, by index
  std::vector<NodeExecStats> stats;
};

struct DeregisterGraph {
  uint64_t graph_handle = 0;
};

struct CloseSession {
  std::string session_handle;
  /// Closed because its master went down (not by its client): the steps it
  /// cancels fail with Aborted, which a master still alive (it was only cut
  /// off, or stopped for a while) runs again in a new session, rather than
  /// Cancelled. Set by a worker for its own device actors only: never
  /// serialized (a CloseSession from another process is its client's).
  bool master_down = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeOutputStats& x) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    int32_t dtype = 0;
    if (auto err = f(caf::meta::type_name("NodeOutputStats"), dtype, x.shape, x.bytes)) return err;
    x.dtype = static_cast<DataType>(dtype);
    return caf::error{};
  } else {
    int32_t dtype = x.dtype;
    return f(caf::meta::type_name("NodeOutputStats"), dtype, x.shape, x.bytes);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeExecStats& x) {
  return f(caf::meta::type_name("NodeExecStats"), x.node, x.op, x.where, x.thread, x.start_us, x.end_us, x.device,
           x.all_start_us, x.outputs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RegisterGraphRequest& x) {
  return f(caf::meta::type_name("RegisterGraphRequest"), x.graph_def, x.session_handle);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RegisterGraphResponse& x) {
  return f(caf::meta::type_name("RegisterGraphResponse"), x.status, x.graph_handle);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RegisterPartitionsRequest& x) {
  return f(caf::meta::type_name("RegisterPartitionsRequest"), x.session_handle, x.devices, x.graph_defs);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RegisterPartitionsResponse& x) {
  return f(caf::meta::type_name("RegisterPartitionsResponse"), x.status, x.graph_handles, x.devices, x.device_handles);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunStepRequest& x) {
  return f(caf::meta::type_name("RunStepRequest"), x.graph_handle, x.step_id, x.args, x.timeout_ms, x.collect_stats,
           x.multi_partition);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunStepResponse& x) {
  return f(caf::meta::type_name("RunStepResponse"), x.status, x.retvals, x.stats);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeregisterGraph& x) {
  return f(caf::meta::type_name("DeregisterGraph"), x.graph_handle);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CloseSession& x) {
  return f(caf::meta::type_name("CloseSession"), x.session_handle);  // master_down stays in its process
}

}  // namespace actorflow
