// The master service of a server: serves clients in other processes whose
// session target is this server ("actorflow://host:port"; TensorFlow's
// MasterService). Each MasterCreateSessionRequest gets a session actor of its
// own, on a thread of its own (the master's calls block: they wait for the
// device actors), holding a LocalMaster over the server's cluster. The session
// actor monitors its client: when the client goes down, the session is closed.
//
// Protocol: net/cluster_service.hpp (MasterCreateSessionRequest, then
// MasterExtendRequest, MasterRunRequest, MasterResetRequest,
// MasterCloseRequest to the session actor).
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actorflow/core/cluster_spec.hpp"

namespace actorflow {

class Runtime;

/// `has_cluster`: sessions use every task of `cluster` (else only this server's devices).
caf::actor SpawnMasterService(caf::actor_system& sys, Runtime* runtime, bool has_cluster, ClusterSpec cluster,
                              TaskId task);

}  // namespace actorflow
