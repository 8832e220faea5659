// Graph preparation: the one pipeline that turns a client's graph into what
// one Run signature executes, used by the master (master/local_master.cpp)
// and the CLI's `graph` command (tools/graph_command.cpp).
//
//   prune      feeds become _Arg nodes, fetches get _Retval nodes, what no
//              fetch or target needs is removed (graph/subgraph.hpp)
//   optimize   CSE and constant folding (graph/optimize.hpp)
//   place      every node gets a device (graph/placer.hpp); then the
//              optimizer updates of a GPU fuse (graph/fuse_updates.hpp), and
//              a CPU's MatMul/Conv2D -> BiasAdd [-> Relu] chains (graph/remapper.hpp)
//   partition  one GraphDef per device, _Send/_Recv at the cuts, with the
//              maps from the signature's feeds and fetches to each
//              partition's _Args and _Retvals (graph/partition.hpp)
//
// Each stage can be the last (PreparationOptions::last_stage), and
// optimization is skipped without a device to fold constants on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/optimize.hpp"
#include "actorflow/graph/partition.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/graph/subgraph.hpp"

namespace actorflow {

enum class PreparationStage { kPrune = 0, kOptimize = 1, kPlace = 2, kPartition = 3 };

struct PreparationOptions {
  PreparationStage last_stage = PreparationStage::kPartition;
  /// Where constants are folded; nullptr skips the optimize stage.
  Device* fold_device = nullptr;
  GraphOptions graph_options;
  /// The devices to place on (needed from the place stage on).
  const DeviceManager* devices = nullptr;
  PlacerOptions placer;
  /// Called with the placed graph before it is partitioned (a session keeps
  /// where its stateful nodes went), before optimizer updates fuse: it sees
  /// the graph's own nodes; may be empty.
  std::function<void(const Graph&)> on_placed;
  PartitionOptions partitioning;
};

/// What a prepared signature runs.
struct PreparedGraph {
  /// Feed and fetch dtypes and shapes, and which feeds the pruned graph needs.
  FeedFetchInfo info;
  /// One per device the signature runs on (partition stage only).
  std::vector<GraphPartition> partitions;
};

/// Prepares `g` in place (it ends pruned, optimized and placed, as far as the
/// options go) for the signature (feeds, fetches, targets). When neither a
/// fetch nor a target is given the prune stage keeps the whole graph.
Status PrepareGraph(Graph* g, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, const PreparationOptions& options, PreparedGraph* out);

}  // namespace actorflow
