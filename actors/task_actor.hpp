// The task actor: the worker service of one task of a cluster (TensorFlow's
// WorkerService), the actor a server publishes (master/server.hpp).
//
// Protocol (net/cluster_service.hpp):
//   GetStatusRequest           -> GetStatusResponse   the task, its incarnation, its device actors,
//                                                     rendezvous, container, master service, transport
//   CreateWorkerSessionRequest -> CreateWorkerSessionResponse
//                                                     gives the membership the session's peers and
//                                                     hands the request to the runtime's worker, which opens
//                                                     the worker session (actors/worker_session.hpp) and answers
//   DeleteWorkerSessionRequest -> StatusResponse      the worker closes the worker session
//   PingRequest                -> PingResponse        proves this actor system runs handlers
//   ShutdownRequest            -> StatusResponse      calls the server's shutdown hook
//
// The worker monitors each session's master: when the master goes down (its
// process died or lost its connection), the session ends as if deleted (every
// device actor drops its graphs and cancels their steps), where TensorFlow's
// workers needed a TTL.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actorflow/net/cluster_service.hpp"

namespace actorflow {

class Membership;
class Runtime;

struct TaskActorConfig {
  GetStatusResponse status;  // what GetStatusRequest answers (DescribeTask)
  caf::actor worker;  // the runtime's worker (actors/worker_session.hpp): it keeps the worker sessions
  Membership* membership = nullptr;  // the process's: a session's peers go there
  /// Called (on an actor thread; must not block) for an accepted ShutdownRequest.
  std::function<void(const std::string& reason)> on_shutdown;
};

/// A task's status, built in this one place for the task actor's answer and
/// for a master's view of its own task: the task, its incarnation, its
/// devices and their actors, its rendezvous and container, `master` (the
/// server's master service, may be invalid), and where its transport listens
/// (`transport_host` as peers reach it; none without a transport).
GetStatusResponse DescribeTask(Runtime& runtime, const std::string& transport_host, caf::actor master);

caf::actor SpawnTaskActor(caf::actor_system& sys, TaskActorConfig config);

}  // namespace actorflow
