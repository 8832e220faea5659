// LocalMaster: the master of this process's Runtime (MasterInterface).
//
// Run prepares each (feeds, fetches, targets) signature once with the graph
// preparation pipeline (graph/preparation.hpp: prune, optimize, place,
// partition), registers the partitions with the runtime's device actors and
// caches them: a repeated Run does no graph work. A step of one partition is
// one request to its device actor; a step of several starts them all at once
// and joins them with a StepBarrier (master/step_barrier.hpp). Thread-safe:
// concurrent Runs run as concurrent steps.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/master/master_interface.hpp"
#include "actorflow/master/run_options.hpp"

namespace actorflow {

class ClusterView;
class Runtime;

class LocalMaster final : public MasterInterface {
 public:
  /// `handle` names the session to device actors (its shared stateful kernels).
  LocalMaster(SessionOptions options, std::string handle);
  /// A master of a cluster, in task `task` (this process, `options.runtime`):
  /// Create finds the devices of every task (master/cluster_view.hpp, within
  /// options.device_find_timeout_ms), opens a worker session on each and
  /// places over all of them; nodes that name no task go to `task`.
  LocalMaster(SessionOptions options, std::string handle, ClusterSpec cluster, TaskId task);
  ~LocalMaster() override;
  LocalMaster(const LocalMaster&) = delete;
  LocalMaster& operator=(const LocalMaster&) = delete;

  /// Loads the graph (once); errors name the offending node.
  Status Create(const proto::GraphDef& graph) override;
  /// Adds nodes to the graph; cached executables stay valid.
  Status Extend(const proto::GraphDef& graph) override;

  /// Runs one step: `outputs` gets one tensor per fetch, in order. Fetched
  /// tensors may share their buffer with a variable or a later step's input:
  /// treat them as read-only (copy before writing). Whatever
  /// `outputs` held is released first (so a loop reusing the vector does not
  /// keep last step's results alive during this one); when the step fails it
  /// is left empty.
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override;

  /// Cancels steps in flight and releases the graph; later Runs fail.
  Status Close() override;

  /// Drops every variable of the named containers ("" is the default one;
  /// an empty list drops all), for every session of this runtime — what
  /// TensorFlow's Session.reset does. Variables are recreated, uninitialized,
  /// when a graph next uses them.
  Status ResetContainers(const std::vector<std::string>& containers) override;

  /// Number of distinct (feeds, fetches, targets) signatures prepared so far.
  size_t num_cached_executables() const override;

 private:
  struct Executable;
  using ExecutableFuture = std::shared_future<StatusOr<std::shared_ptr<const Executable>>>;
  Status GetExecutable(const std::vector<std::pair<std::string, Tensor>>& feeds,
                       const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                       std::shared_ptr<const Executable>* out);
  // Prunes and optimizes `g` (a copy of the session's graph), places and
  // partitions it and registers the partitions; no lock held.
  Status Prepare(Graph* g, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets, std::shared_ptr<const Executable>* out);
  // A step of several partitions: all started at once, all waited for.
  Status RunPartitions(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                       std::vector<Tensor>* outputs, RunMetadata* metadata);
  void Deregister(const Executable& exe);
  // A step that failed with Unavailable in a cluster: a task it ran in that
  // answers again with a new incarnation has restarted (Aborted, naming it).
  Status ExplainUnavailable(Status s, const Executable& exe);
  // Finds the cluster's devices and opens a worker session on every task.
  Status ConnectCluster();

 public:
  /// The placement of the last signature prepared: node name -> device
  /// (for `actorflow --show-placement` and tests).
  std::map<std::string, std::string> LastPlacement() const override;
  /// Measured node costs this session's traced steps have recorded.
  const CostModel& cost_model() const override { return cost_model_; }

 private:
  Runtime* runtime_;
  SessionOptions options_;
  // A cluster master: its cluster, its own task, what it found, and the actor
  // the workers monitor as this master (when it goes, they drop the session).
  bool in_cluster_ = false;
  ClusterSpec cluster_;
  TaskId task_;
  std::unique_ptr<ClusterView> view_;  // set by Create
  caf::actor presence_;
  CostModel cost_model_;
  std::map<std::string, std::string> last_placement_;  // guarded by mu_
  // Where each stateful node was placed, kept for later signatures (their
  // kernels, shared per device, hold state); guarded by mu_.
  std::map<std::string, std::string> stateful_placements_;
  const std::string handle_;  // names this session to device actors (shared stateful kernels)
  mutable std::mutex mu_;  // guards graph_, executables_, closed_ (client threads only)
  Graph graph_;
  bool created_ = false;
  bool closed_ = false;
  // One entry per signature; the first caller prepares it while later callers
  // of the same signature wait on the future, and others run unhindered.
  struct Entry {
    ExecutableFuture future;
    uint64_t id;  // tells a preparer whether the entry is still its own
  };
  std::map<std::string, Entry> executables_;
  uint64_t next_entry_id_ = 1;
};

}  // namespace actorflow
