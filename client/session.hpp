// Session: runs steps of a graph — the client's entry point.
//
//   Session session;                       // on the process's default Runtime
//   AF_RETURN_IF_ERROR(session.Create(graph_def));
//   std::vector<Tensor> out;
//   AF_RETURN_IF_ERROR(session.Run({{"x", x}}, {"y:0"}, {}, &out));
//
// Run prunes the graph to what the fetches and targets need (a feed cuts the
// graph at the fed tensor), optimizes it (SessionOptions::graph_options: CSE
// and constant folding), places and partitions it, registers the partitions
// with the device actors once, and caches them by (feeds, fetches, targets):
// a repeated Run does no graph work. Run is thread-safe; concurrent calls run
// as concurrent steps.
//
// The Session is the client: it forwards every call to a master
// (master/master_interface.hpp), today the LocalMaster of the session's
// Runtime (master/local_master.hpp).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/step_stats.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/master/master_interface.hpp"
#include "actorflow/master/run_options.hpp"

namespace actorflow {

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

  /// The placement of the last signature prepared: node name -> device
  /// (for `actorflow --show-placement` and tests).
  std::map<std::string, std::string> LastPlacement() const;
  /// Measured node costs this session's traced steps have recorded.
  const CostModel& cost_model() const;

 private:
  std::unique_ptr<MasterInterface> master_;
};

}  // namespace actorflow
