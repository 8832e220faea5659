// The worker: a task's worker sessions (TensorFlow's Worker, its SessionMgr
// and, per master session, a WorkerSession with its GraphMgr). A worker
// session owns one master session's partitions on all of this task's
// devices: their registration, their steps and their cleanup. A master
// talks to a task's worker, never to its device actors one by one, except
// for the steps of a master in the worker's own process: they go to the
// device actor directly (see RegisterPartitionsResponse).
//
// One worker actor per process (the Runtime's: actors/runtime.hpp), as long-
// lived as its device actors; in a server the task actor (the published
// cluster service, actors/task_actor.hpp) hands it the sessions that masters
// in other processes open, and a master opens its own task's session here
// directly: a single process is a cluster of one task.
//
// Protocol (net/cluster_service.hpp, net/worker_service.hpp):
//   CreateWorkerSessionRequest -> CreateWorkerSessionResponse
//       opens the session (again: a no-op) and monitors its master: when the
//       master goes down (its process died or lost its connection) the
//       session closes as if told to, where TensorFlow's workers needed a TTL
//   RegisterPartitionsRequest  -> RegisterPartitionsResponse
//       each partition registered with its device actor, all at once; the
//       first failure is the answer and the partitions that did register are
//       dropped again; to a master of this process, the answer names each
//       partition's device actor and device handle too
//   RunStepRequest             -> RunStepResponse
//       `graph_handle` is the worker's: the request goes on to the
//       partition's device actor, which answers the master directly (one
//       extra hop, no extra reply); an unknown handle is NotFound
//   DeregisterGraph            the partition is dropped from its device
//   CloseSession, DeleteWorkerSessionRequest (-> StatusResponse)
//       closes the session once: each device drops its graphs and shared
//       kernels (one CloseSession each); its steps in flight end Cancelled,
//       or Aborted when the worker closed it because its master went down
//       (then a later step for one of its handles is Aborted, not NotFound:
//       a master only cut off or stopped runs it again in a new session)
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <string>
#include <vector>

#include "actorflow/net/cluster_service.hpp"

namespace actorflow {

struct WorkerConfig {
  std::string task;                       // "/job:worker/replica:0/task:1", for messages
  std::vector<RemoteDeviceInfo> devices;  // the task's devices and their actors
};

caf::actor SpawnWorker(caf::actor_system& sys, WorkerConfig config);

}  // namespace actorflow
