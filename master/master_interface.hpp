// MasterInterface: what a client's Session asks of a master (TensorFlow's
// MasterInterface). The master holds the session's graph, prepares each Run
// signature once (graph/preparation.hpp), registers its partitions with the
// device actors that run them and runs steps across them.
//
// LocalMaster (master/local_master.hpp) is the master of this process's
// Runtime; a master in another process is one more implementation.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/master/run_options.hpp"

namespace actorflow {

class MasterInterface {
 public:
  virtual ~MasterInterface() = default;
  /// Session::Create, Extend, Run, Close and ResetContainers (client/session.hpp).
  virtual Status Create(const proto::GraphDef& graph) = 0;
  virtual Status Extend(const proto::GraphDef& graph) = 0;
  virtual Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                     std::vector<Tensor>* outputs, RunMetadata* metadata) = 0;
  virtual Status Close() = 0;
  virtual Status ResetContainers(const std::vector<std::string>& containers) = 0;
  /// Number of distinct (feeds, fetches, targets) signatures prepared so far.
  virtual size_t num_cached_executables() const = 0;
  /// The placement of the last signature prepared: node name -> device.
  virtual std::map<std::string, std::string> LastPlacement() const = 0;
  /// Measured node costs the session's traced steps have recorded.
  virtual const CostModel& cost_model() const = 0;
};

}  // namespace actorflow
