// Placement: which device runs each node (the whitepaper's section 3.2.1).
//
// Hard constraints first. A node's requested device is a partial spec
// ("/device:CPU:1", "/job:ps", "GPU:0"). Nodes are merged into colocation
// groups (union-find): by their `_class` attr ("loc:@other"), and implicitly
// every node that takes a variable by reference (its ref edges) with that
// variable, and every node a stack's handle reaches with the stack (a
// per-step resource lives on one device; queues and readers do not bind). A
// group's requested specs must agree (merged like TensorFlow's MergeDevNames);
// its feasible devices are those matching that spec on which every op of the
// group has a kernel. A group with none is an error naming a
// node, what it asked for and why no device fits.
//
// Then the cost model: simulate the graph from its sources in topological
// order and put each group, when its first node is reached, on the feasible
// device where that node would finish earliest, counting a transfer cost for
// every input coming from another device. A node's cost is its measured mean
// time (CostModel, fed from step statistics) when known, else a static
// estimate from its output sizes (and flops, for MatMul). Sources that cost
// nothing (constants, feeds) follow their first consumer. A stateful node
// placed before (PlacerOptions::stateful_placements) keeps its device. A
// group that names no device type goes to a GPU whenever one can run all of
// it (TensorFlow's default; shape arithmetic runs there in host memory), else
// to a CPU; once the cost model has measured it on both, the earliest finish
// time chooses between them.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

class DeviceManager;

/// Measured per-node costs (microseconds), keyed by node name and device.
/// Thread-safe: sessions update it from step statistics while they place.
class CostModel {
 public:
  void Record(const std::string& node, const std::string& device, double micros);
  /// The mean measured time of `node` on `device`; false when never measured.
  bool Lookup(const std::string& node, const std::string& device, double* micros) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::pair<double, int64_t>> costs_;  // sum, count; guarded by mu_
};

enum class PlacementStrategy {
  kCostModel,   // earliest finish time, as above
  kRoundRobin,  // unconstrained groups take the devices in turn (a baseline)
  kSingle,      // unconstrained groups all go to the first feasible device (a baseline)
};

struct PlacerOptions {
  PlacementStrategy strategy = PlacementStrategy::kCostModel;
  /// When a group's requested device does not exist or lacks a kernel, place
  /// it as if nothing were requested (TensorFlow's allow_soft_placement).
  bool allow_soft_placement = false;
  const CostModel* cost_model = nullptr;  // measured costs, when any
  /// Where stateful nodes were placed before, by node name (a session's
  /// earlier signatures): such a node's group goes to that device again when
  /// it is feasible, whatever the strategy, so that the node keeps its kernel
  /// and the state in it (TensorFlow's stateful placements). nullptr: none.
  const std::map<std::string, std::string>* stateful_placements = nullptr;
  /// A task ("/job:worker/replica:0/task:0") whose devices take every group
  /// that names no job, replica or task (TensorFlow's default: a cluster's
  /// unpinned nodes run on the client's own task). Empty: any device.
  std::string default_task;
  /// Microseconds to move a tensor between devices: fixed + per byte.
  double transfer_fixed_us = 2.0;
  double transfer_us_per_byte = 1.0 / 5000.0;  // 5 GB/s
};

/// Sets every node's assigned device (and its NodeDef's device) to a full
/// device name of `devices`.
Status PlaceGraph(Graph* g, const DeviceManager& devices, const PlacerOptions& options);

}  // namespace actorflow
