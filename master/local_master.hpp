// LocalMaster: the master of this process's Runtime (MasterInterface), the
// master session of TensorFlow's terms: the session's graph, its executables
// (one per (feeds, fetches, targets) signature, prepared once: a repeated Run
// does no graph work) and its lifecycle. The rest is in pieces of their own:
//   master/cluster_view.hpp       the devices of the session's tasks
//   master/worker_sessions.hpp    the session's worker session on each task
//   master/partition_registry.hpp preparing a signature and registering its partitions
//   master/step_runner.hpp        running a step, joining its partitions
// A single process is a cluster of one task: the same pieces, with a view of
// this process's devices only. Thread-safe: concurrent Runs run as concurrent
// steps.
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
class PartitionRegistry;
class Runtime;
class StepRunner;
class WorkerSessions;
struct Executable;

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
  using ExecutableFuture = std::shared_future<StatusOr<std::shared_ptr<const Executable>>>;
  Status GetExecutable(const std::vector<std::pair<std::string, Tensor>>& feeds,
                       const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                       std::shared_ptr<const Executable>* out);
  // Finds the session's devices and opens a worker session on each of its
  // tasks (once; under mu_).
  Status Connect();

 public:
  /// The placement of the last signature prepared: node name -> device
  /// (for `actorflow --show-placement` and tests).
  std::map<std::string, std::string> LastPlacement() const override;
  /// Measured node costs this session's traced steps have recorded.
  const CostModel& cost_model() const override { return cost_model_; }

 private:
  Runtime* runtime_;
  SessionOptions options_;
  // The cluster (empty: this process alone) and this process's task in it.
  ClusterSpec cluster_;
  TaskId task_;
  const std::string handle_;  // names this session to device actors (shared stateful kernels)
  CostModel cost_model_;
  // Set by Connect, then constant until the master is destroyed.
  std::unique_ptr<ClusterView> view_;
  std::unique_ptr<WorkerSessions> sessions_;
  std::unique_ptr<PartitionRegistry> registry_;
  std::unique_ptr<StepRunner> runner_;
  mutable std::mutex mu_;  // guards graph_, executables_, closed_ (client threads only)
  Graph graph_;
  bool created_ = false;
  bool closed_ = false;
  // One entry per signature; the first caller prepares it while later callers
  // of the same signature wait on the future, and others run unhindered.
  struct Entry {
    ExecutableFuture future;
    uint64_t id;  // tells a preparer whether the entry is still its own
    std::shared_ptr<const Executable> ready;  // once prepared: the future's value, taken without it
  };
  std::map<std::string, Entry> executables_;
  uint64_t next_entry_id_ = 1;
};

}  // namespace actorflow
