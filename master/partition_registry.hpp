// PartitionRegistry: a master session's partitions. Prepare turns one Run
// signature into an Executable: the graph preparation pipeline
// (graph/preparation.hpp: prune, optimize, place, partition) over the
// session's devices, then every partition registered with the worker session
// of its task (master/worker_sessions.hpp), one request per task, all tasks
// at once. Deregister drops an Executable's partitions.
//
// It keeps what placement must remember between signatures: where each
// stateful node went (their kernels, shared per device, hold state) and the
// last placement (for `actorflow --show-placement`). Thread-safe: signatures
// are prepared concurrently.
#pragma once

#include <caf/actor.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/graph/preparation.hpp"
#include "actorflow/master/run_options.hpp"

namespace actorflow {

class ClusterView;
class Runtime;
class WorkerSessions;

/// One Run signature, prepared and registered.
struct Executable {
  // One partition per device the signature runs on.
  struct Part {
    std::string device;     // full name
    bool on_gpu = false;    // a GPU's (known once: not looked for in the name each step)
    caf::actor session;     // the worker session of its task (a proxy when remote)
    uint64_t graph_handle = 0;  // the worker session's handle
    // A partition of this process: its device actor and that actor's handle,
    // where steps go directly (no turn of the worker actor); else null.
    caf::actor device_actor;
    uint64_t device_handle = 0;
    std::vector<int> arg_indices;     // per argument of the partition: the step's argument index
    std::vector<int> retval_indices;  // per result of the partition: the fetch index
  };
  std::vector<Part> parts;
  std::vector<caf::actor> participants;  // the rendezvous actors of the tasks the parts run in
  FeedFetchInfo info;
  std::vector<std::string> feed_names;
  // A moving average of this signature's step latency (ns): short steps are
  // waited for by spinning (master/step_runner.cpp).
  mutable std::atomic<int64_t> typical_ns{0};
};

class PartitionRegistry {
 public:
  PartitionRegistry(Runtime* runtime, const ClusterView* view, WorkerSessions* sessions, SessionOptions options,
                    CostModel* cost_model);

  /// Prepares `g` (the session's graph, a copy: it is pruned in place) for
  /// the signature and registers its partitions. On an error nothing stays
  /// registered.
  Status Prepare(Graph* g, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets, std::shared_ptr<const Executable>* out);
  /// Drops `exe`'s partitions from their worker sessions.
  void Deregister(const Executable& exe) const;

  std::map<std::string, std::string> LastPlacement() const;

 private:
  Status Register(std::vector<GraphPartition>& partitions, Executable* exe);

  Runtime* runtime_;
  const ClusterView* view_;
  WorkerSessions* sessions_;
  SessionOptions options_;
  CostModel* cost_model_;
  mutable std::mutex mu_;  // guards the two maps below
  std::map<std::string, std::string> last_placement_;
  std::map<std::string, std::string> stateful_placements_;
};

}  // namespace actorflow
