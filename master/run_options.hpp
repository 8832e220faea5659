// What a client passes with its graph and its steps (TensorFlow's
// SessionOptions, RunOptions and RunMetadata), shared by the client's Session
// (client/session.hpp) and the masters behind it (master/master_interface.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/step_stats.hpp"
#include "actorflow/graph/optimize.hpp"
#include "actorflow/graph/partition.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/comm/tls.hpp"

namespace actorflow {

class Runtime;

/// A cluster session's rendezvous round (elastic training, issue 32): the
/// tasks of `job` ("" none) may be missing. Finding the devices asks them
/// until every one has answered, or until `min_tasks` have (this task
/// counted) and `last_call_ms` more have passed; the session uses those that
/// answered. A task that comes later finds the others in its own round (and
/// joins their elastic collective group).
struct SessionRendezvous {
  std::string job;
  int min_tasks = 1;
  int max_tasks = 0;  // > 0: the round completes at once when this many have answered (0: all of the job's)
  int64_t last_call_ms = 2000;
};

struct SessionOptions {
  /// Where the session runs (TensorFlow's target): "" this process's runtime;
  /// a Server's target() (master/server.hpp) a master in this process over
  /// the devices of the server's whole cluster; "actorflow://host:port" (or
  /// "grpc://host:port") the master of the server there.
  std::string target;
  Runtime* runtime = nullptr;  // nullptr: Runtime::Default() (or the target's server's)
  /// Cluster sessions: the tasks the session may use (TensorFlow's
  /// device_filters: "/job:ps", "/job:worker/task:1"); empty, every task.
  std::vector<std::string> device_filters;
  /// Cluster sessions: how long finding the tasks' devices (and opening
  /// their worker sessions) may take; the error names the silent tasks.
  int64_t device_find_timeout_ms = 30000;
  /// Cluster sessions: a rendezvous round for an elastic job's tasks.
  SessionRendezvous rendezvous;
  /// A remote target ("actorflow://"): this client's certificate, key and the
  /// cluster CA, for a server that requires mutual TLS (comm/tls.hpp).
  TlsOptions tls;
  /// Optimizations of each pruned graph (graph/optimize.hpp): CSE and constant folding.
  GraphOptions graph_options;
  /// How nodes are put on the runtime's devices (graph/placer.hpp): the
  /// strategy and TensorFlow's allow_soft_placement. The session's measured
  /// node costs (from traced steps) feed the cost model.
  PlacementStrategy placement = PlacementStrategy::kCostModel;
  bool allow_soft_placement = false;
  /// How placed graphs are split by device (graph/partition.hpp);
  /// `partitioning.schedule_recvs_late = false` lets every _Recv start with the step.
  PartitionOptions partitioning;
};

/// How much a step records about itself (TensorFlow's RunOptions.TraceLevel).
/// Every level above kNoTrace fills RunMetadata::step_stats with the same
/// per-node stats: this runtime has no hardware counters to add at the
/// higher levels.
enum class TraceLevel {
  kNoTrace = 0,
  kSoftwareTrace = 1,
  kHardwareTrace = 2,
  kFullTrace = 3,
};

struct RunOptions {
  /// > 0: the step ends with DeadlineExceeded after this long (at most
  /// kMaxTimeoutMs, about 24 days).
  int64_t timeout_in_ms = 0;
  static constexpr int64_t kMaxTimeoutMs = (int64_t{1} << 31) - 1;
  /// Above kNoTrace: record how each node ran into RunMetadata::step_stats
  /// (client/timeline.hpp turns them into a Chrome trace).
  TraceLevel trace_level = TraceLevel::kNoTrace;
  /// Deprecated: true means trace_level kSoftwareTrace.
  bool collect_step_stats = false;

  bool collects_step_stats() const { return trace_level > TraceLevel::kNoTrace || collect_step_stats; }
};

/// What a step reports besides its results.
struct RunMetadata {
  /// One per node that ran, in completion order (empty unless traced). A
  /// failed step reports the nodes that finished before it was answered.
  std::vector<NodeExecStats> step_stats;
};

}  // namespace actorflow
