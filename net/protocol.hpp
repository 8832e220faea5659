// The protocol: every message that may cross a process, grouped by service.
//
//   net/cluster_service.hpp     master -> tasks (status, worker sessions), client -> remote master
//   net/worker_service.hpp      client/master -> device actor (register, run, deregister graphs)
//   net/variable_service.hpp    kernels -> container actor (variable reads and updates)
//   net/queue_service.hpp       kernels -> queue actors, and the container's directory of queues
//   net/rendezvous_service.hpp  device actors <-> rendezvous actor (tensors between partitions)
//
// Each type has an inspect overload and is registered in every process by
// RegisterMessageTypes, so a remote actor is addressed exactly like a local
// one; tests/protocol_test.cpp sends each through a real CAF connection.
// Messages an actor sends only to itself are private to that actor and never
// registered here (they hold pointers meaningful only in its process).
#pragma once

#include <caf/actor_system_config.hpp>

#include "actorflow/net/cluster_service.hpp"
#include "actorflow/net/queue_service.hpp"
#include "actorflow/net/rendezvous_service.hpp"
#include "actorflow/net/variable_service.hpp"
#include "actorflow/net/worker_service.hpp"

namespace actorflow {

/// Adds every actorflow message type to `cfg`; call in every process.
void RegisterMessageTypes(caf::actor_system_config& cfg);

}  // namespace actorflow
