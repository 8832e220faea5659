// How a program that a launcher or a cluster manager started learns how to
// serve its task: the environment variables `actorflow launch` sets for its
// programs, which an sbatch script or a Kubernetes manifest may set too, read
// in one place. TF_CONFIG says which task and cluster (core/cluster_resolver);
// these say how that task's server listens and talks:
//
//   ACTORFLOW_BIND=ADDR               the address to serve on (default 127.0.0.1;
//                                     "0.0.0.0" or a host's own address across machines)
//   ACTORFLOW_INSECURE=1              allow a non-loopback ACTORFLOW_BIND in plaintext
//   ACTORFLOW_TLS_CERT, ACTORFLOW_TLS_KEY, ACTORFLOW_TLS_CA=PATH
//                                     mutual TLS (all three, or none), files checked now
//   ACTORFLOW_HEARTBEAT_MS=N, ACTORFLOW_PEER_TIMEOUT_MS=N
//                                     heartbeats and the peer timeout (as `actorflow server`'s flags)
//
// A variable that is unset leaves the option as it was; a malformed one is
// InvalidArgument naming the variable and what it expects. Security rules are
// Server::Create's: a non-loopback bind still needs INSECURE or TLS.
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/environment.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/master/server.hpp"

namespace actorflow {

/// Applies the ACTORFLOW_* server variables above to `options`.
Status ApplyServerEnvironment(ServerOptions* options, const EnvironmentReader& env = nullptr);

/// The names of every ACTORFLOW_* server variable above (a launcher drops
/// inherited ones before it passes ServerEnvironment on).
const std::vector<std::string>& ServerEnvironmentNames();

/// The ACTORFLOW_* server variables for `options`' bind, insecure, TLS,
/// heartbeat and peer timeout, as "NAME=VALUE" (what a launcher passes on).
std::vector<std::string> ServerEnvironment(const ServerOptions& options);

}  // namespace actorflow
