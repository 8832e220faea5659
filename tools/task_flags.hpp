// Which task a process is and how it serves, as flags: what `actorflow
// server` and `actorflow launch` share (launch hands the serving ones on to
// the ps tasks' servers as flags and to its programs as ACTORFLOW_*
// variables, master/server_environment.hpp).
//
//   --cluster FILE|JSON|tf_config|slurm|auto   core/cluster_resolver.hpp
//   --jobs JOB:N,...      slurm: ranks to jobs, in order (default: every task a worker)
//   --port-base P         slurm: a task's port is P plus its index on its node (default 8888)
//   --bind ADDR           the address to serve on (default 127.0.0.1; another one
//                         needs --insecure or --security mtls)
//   --insecure            allow a non-loopback --bind in plaintext
//   --security none|mtls  plaintext, or mutual TLS with --cert F --key F --ca F
//                         [--key-passphrase-file F] (checked before anything starts)
//   --heartbeat-ms N      heartbeat interval to peers (default 500)
//   --peer-timeout-ms N   a peer silent this long is down (default 3000)
//
// Contract: the ACTORFLOW_* variables of the environment come first (as
// defaults), then the flags given over them; an option neither sets keeps
// ServerOptions' default. Every failure is InvalidArgument naming the flag or
// variable. Nothing here starts a server.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "actorflow/core/cluster_resolver.hpp"
#include "actorflow/core/environment.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/master/server.hpp"

namespace actorflow {
namespace cli {

/// The serving flags as given (empty or -1: not given).
struct ServeFlags {
  std::string bind;
  bool insecure = false;
  std::string security;  // "", "none" or "mtls"
  std::string cert, key, ca, passphrase_file;
  int heartbeat_ms = -1;
  int peer_timeout_ms = -1;
};

/// The flags of a task as given: its cluster (empty: not given) and how it serves.
struct TaskFlags {
  std::string cluster;
  ClusterResolverOptions resolver;
  ServeFlags serve;
};

/// The task flags that take a value, and the one that does not (--insecure).
extern const std::set<std::string> kTaskFlags;
extern const char kServeSwitch[];

/// Takes `flag` (with `value`) into `flags` when it is a task flag (*taken);
/// InvalidArgument for a bad value.
Status ParseTaskFlag(const std::string& flag, const std::string& value, TaskFlags* flags, bool* taken);

/// `options`' bind, insecure, TLS, heartbeat and peer timeout: the ACTORFLOW_*
/// variables of `env`, then `flags` over them; TLS files checked.
Status ApplyServeFlags(const ServeFlags& flags, const EnvironmentReader& env, ServerOptions* options);

/// The flags of `actorflow server` that give `options`' bind, insecure, TLS
/// (without a key passphrase), heartbeat and peer timeout.
std::vector<std::string> ServeArgs(const ServerOptions& options);

}  // namespace cli
}  // namespace actorflow
