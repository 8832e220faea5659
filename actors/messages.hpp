// Messages between actorflow's actors. Every one is a plain struct with an
// inspect overload, registered in every process by RegisterMessageTypes, so a
// remote actor is addressed exactly like a local one.
//
// Device actor protocol (the worker interface of TensorFlow's whitepaper):
//   RegisterGraphRequest  -> RegisterGraphResponse   compile a partition once
//   RunStepRequest        -> RunStepResponse         run one step of it
//   DeregisterGraph                                 drop it, cancelling its steps
//   CloseSession                                    drop the session's shared kernels
//   KernelDone            (to itself)               a pool/async kernel finished
//   deadline atom         (to itself)               the earliest step deadline is due
//   queue inbox atom      (to itself)               queue requests made off its thread wait to go out
//   GraphBuilt            (to itself)               a registered graph's plan is ready
//
// Container actor protocol (actors/container_actor.hpp): VarReadRequest,
// VarUpdateRequest, ResetContainersRequest and their responses
// (ops/state/variable_requests.hpp); VarUpdateDone to itself.
//
// Rendezvous actor protocol (actors/rendezvous_actor.hpp): RendezvousSend,
// RendezvousRecv -> RendezvousRecvResponse, RendezvousBatch (answered by
// RendezvousDeliver messages), RendezvousAbort, RendezvousStepDone.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/step_stats.hpp"
#include "net/wire_format.hpp"
#include "ops/queue/queue_access.hpp"
#include "ops/sendrecv/rendezvous_key.hpp"
#include "ops/state/variable_requests.hpp"

namespace actorflow {

struct RegisterGraphRequest {
  std::string graph_def;       // serialized proto::GraphDef of the partition
  std::string session_handle;  // plans of one session share their stateful kernels
};

struct RegisterGraphResponse {
  Status status;
  uint64_t graph_handle = 0;
};

struct RunStepRequest {
  uint64_t graph_handle = 0;
  int64_t step_id = 0;       // the client's: shared by all partitions of a step (rendezvous keys)
  std::vector<Tensor> args;  // values for the partition's _Arg nodes, by index
  int64_t timeout_ms = 0;    // 0: no deadline
  bool collect_stats = false;  // fill RunStepResponse::stats
  bool multi_partition = false;  // other partitions run this step too: a failure aborts it at the rendezvous
};

struct RunStepResponse {
  Status status;
  std::vector<Tensor> retvals;  // values of the partition's _Retval nodes, by index
  std::vector<NodeExecStats> stats;
};

struct DeregisterGraph {
  uint64_t graph_handle = 0;
};

/// A session is gone: drop what the device keeps for it (its stateful kernels).
struct CloseSession {
  std::string session_handle;
};

struct KernelDone {
  int64_t step_id = 0;
  int32_t node_id = 0;
  Status status;
  std::vector<Tensor> outputs;
  int64_t start_ns = 0;  // steady clock, for step stats
  int64_t end_ns = 0;
  uint64_t thread = 0;
  // The IterationState the node ran in and whether it ran dead: meaningful
  // only to the device actor that sent this to itself.
  uint64_t iteration = 0;
  bool is_dead = false;
};

/// A graph's plan has been built on the pool (to the device actor itself).
struct GraphBuilt {
  uint64_t graph_handle = 0;
};

/// An update the container actor ran on the pool has finished (to itself).
struct VarUpdateDone {
  uint64_t id = 0;
};

/// A _Send's tensor for the _Recv of `key` in step `step_id` (no answer).
struct RendezvousSend {
  int64_t step_id = 0;
  RendezvousKey key;
  Tensor value;
  bool is_dead = false;  // sent from an untaken branch (control flow)
};

/// A _Recv waiting for the tensor of `key` in step `step_id`.
struct RendezvousRecv {
  int64_t step_id = 0;
  RendezvousKey key;
};

struct RendezvousRecvResponse {
  Status status;
  Tensor value;
  bool is_dead = false;
};

/// Many transfers at once, as a device actor sends them: the Sends its
/// kernels made and the Recvs they started since its last batch. Each Recv
/// is answered by a RendezvousDeliver to the batch's sender (not a response).
struct RendezvousBatch {
  struct Sent {
    int64_t step_id = 0;
    RendezvousKey key;
    Tensor value;
    bool is_dead = false;
  };
  struct Wanted {
    int64_t step_id = 0;
    RendezvousKey key;
    uint64_t ticket = 0;  // the asker's, echoed in the RendezvousDeliver item
  };
  std::vector<Sent> sends;
  std::vector<Wanted> recvs;
};

/// Tensors (or errors) for Recvs a RendezvousBatch asked for.
struct RendezvousDeliver {
  struct Item {
    int64_t step_id = 0;
    uint64_t ticket = 0;  // the Wanted's
    Status status;
    Tensor value;
    bool is_dead = false;
  };
  std::vector<Item> items;
};

/// Step `step_id` failed: its waiting and later Recvs fail with `status`.
struct RendezvousAbort {
  int64_t step_id = 0;
  Status status;
};

/// Every partition of step `step_id` has finished: drop what it left.
struct RendezvousStepDone {
  int64_t step_id = 0;
};

/// The container actor's answer to a QueueOpenRequest (ops/queue/queue_access.hpp).
struct QueueOpenResponse {
  Status status;
  caf::actor queue;
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
  return f(caf::meta::type_name("CloseSession"), x.session_handle);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, KernelDone& x) {
  return f(caf::meta::type_name("KernelDone"), x.step_id, x.node_id, x.status, x.outputs, x.start_ns, x.end_ns, x.iteration, x.is_dead,
           x.thread);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GraphBuilt& x) {
  return f(caf::meta::type_name("GraphBuilt"), x.graph_handle);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarReadRequest& x) {
  return f(caf::meta::type_name("VarReadRequest"), x.handles, x.check_only);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarReadResponse& x) {
  return f(caf::meta::type_name("VarReadResponse"), x.status, x.values);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarUpdateRequest& x) {
  return f(caf::meta::type_name("VarUpdateRequest"), x.kind, x.handles, x.args, x.validate_shape, x.use_nesterov);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarUpdateResponse& x) {
  return f(caf::meta::type_name("VarUpdateResponse"), x.status, x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ResetContainersRequest& x) {
  return f(caf::meta::type_name("ResetContainersRequest"), x.containers);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ResetContainersResponse& x) {
  return f(caf::meta::type_name("ResetContainersResponse"), x.status, x.num_dropped);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarUpdateDone& x) {
  return f(caf::meta::type_name("VarUpdateDone"), x.id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PartialTensorShape& x) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    bool known = false;
    std::vector<int64_t> dims;
    if (auto err = f(caf::meta::type_name("PartialTensorShape"), known, dims)) return err;
    x = known ? PartialTensorShape(std::move(dims)) : PartialTensorShape();
    return caf::error{};
  } else {
    bool known = !x.unknown_rank();
    std::vector<int64_t> dims = x.dim_sizes();
    return f(caf::meta::type_name("PartialTensorShape"), known, dims);
  }
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueSpec& x) {
  return f(caf::meta::type_name("QueueSpec"), x.kind, x.component_types, x.shapes, x.capacity, x.min_after_dequeue,
           x.seed, x.seed2);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueRequest& x) {
  return f(caf::meta::type_name("QueueRequest"), x.op, x.step_id, x.components, x.num, x.flag);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueResponse& x) {
  return f(caf::meta::type_name("QueueResponse"), x.status, x.components, x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueCancelStep& x) {
  return f(caf::meta::type_name("QueueCancelStep"), x.step_id, x.status);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueOpenRequest& x) {
  return f(caf::meta::type_name("QueueOpenRequest"), x.handle, x.spec, x.create);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, QueueOpenResponse& x) {
  return f(caf::meta::type_name("QueueOpenResponse"), x.status, x.queue);
}

// A key crosses processes as its text; in one process it is shared, never copied.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousKey& x) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    std::string text;
    if (auto err = f(caf::meta::type_name("RendezvousKey"), text)) return err;
    x = RendezvousKey(std::move(text));
    return caf::error{};
  } else {
    std::string text = x.str();
    return f(caf::meta::type_name("RendezvousKey"), text);
  }
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousSend& x) {
  return f(caf::meta::type_name("RendezvousSend"), x.step_id, x.key, x.value, x.is_dead);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousRecv& x) {
  return f(caf::meta::type_name("RendezvousRecv"), x.step_id, x.key);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousRecvResponse& x) {
  return f(caf::meta::type_name("RendezvousRecvResponse"), x.status, x.value, x.is_dead);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousBatch::Sent& x) {
  return f(caf::meta::type_name("RendezvousBatch::Sent"), x.step_id, x.key, x.value, x.is_dead);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousBatch::Wanted& x) {
  return f(caf::meta::type_name("RendezvousBatch::Wanted"), x.step_id, x.key, x.ticket);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousBatch& x) {
  return f(caf::meta::type_name("RendezvousBatch"), x.sends, x.recvs);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousDeliver::Item& x) {
  return f(caf::meta::type_name("RendezvousDeliver::Item"), x.step_id, x.ticket, x.status, x.value, x.is_dead);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousDeliver& x) {
  return f(caf::meta::type_name("RendezvousDeliver"), x.items);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousAbort& x) {
  return f(caf::meta::type_name("RendezvousAbort"), x.step_id, x.status);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousStepDone& x) {
  return f(caf::meta::type_name("RendezvousStepDone"), x.step_id);
}

/// Adds every actorflow message type to `cfg`; call in every process.
void RegisterMessageTypes(caf::actor_system_config& cfg);

}  // namespace actorflow
