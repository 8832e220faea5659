// Session: runs steps of a graph — the client's entry point.
//
//   Session session;                       // on the process's default Runtime
//   AF_RETURN_IF_ERROR(session.Create(graph_def));
//   std::vector<Tensor> out;
//   AF_RETURN_IF_ERROR(session.Run({{"x", x}}, {"y:0"}, {}, &out));
//
// Run prunes the graph to what the fetches and targets need (a feed cuts the
// graph at the fed tensor), registers the result with the device actor once,
// and caches it by (feeds, fetches, targets): a repeated Run does no graph
// work. The pruned graph is optimized first (SessionOptions::graph_options:
// CSE and constant folding). Run is thread-safe; concurrent calls run as
// concurrent steps.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/proto/graph.pb.h"
#include "core/status.hpp"
#include "core/step_stats.hpp"
#include "core/tensor.hpp"
#include "graph/placer.hpp"
#include "graph/graph.hpp"
#include "graph/optimize.hpp"
#include "graph/partition.hpp"

namespace actorflow {

class Runtime;

struct SessionOptions {
  Runtime* runtime = nullptr;  // nullptr: Runtime::Default()
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
  /// (actors/timeline.hpp turns them into a Chrome trace).
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

class Session {
 public:
  explicit Session(SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Loads the graph (once); errors name the offending node.
  Status Create(const proto::GraphDef& graph);
  /// Adds nodes to the graph; cached executables stay valid.
  Status Extend(const proto::GraphDef& graph);

  /// Runs one step: `outputs` gets one tensor per fetch, in order. Fetched
  /// tensors may share their buffer with a variable or a later step's input:
  /// treat them as read-only (copy before writing). Whatever
  /// `outputs` held is released first (so a loop reusing the vector does not
  /// keep last step's results alive during this one); when the step fails it
  /// is left empty.
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata = nullptr);
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs);
  }

  /// Cancels steps in flight and releases the graph; later Runs fail.
  Status Close();

  /// Drops every variable of the named containers ("" is the default one;
  /// an empty list drops all), for every session of this runtime — what
  /// TensorFlow's Session.reset does. Variables are recreated, uninitialized,
  /// when a graph next uses them.
  Status ResetContainers(const std::vector<std::string>& containers);

  /// Number of distinct (feeds, fetches, targets) signatures prepared so far.
  size_t num_cached_executables() const;

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

 public:
  /// The placement of the last signature prepared: node name -> device
  /// (for `actorflow --show-placement` and tests).
  std::map<std::string, std::string> LastPlacement() const;
  /// Measured node costs this session's traced steps have recorded.
  const CostModel& cost_model() const { return cost_model_; }

 private:
  Runtime* runtime_;
  SessionOptions options_;
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
