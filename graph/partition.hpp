// Partitioning: one subgraph per device, joined by _Send/_Recv pairs
// (the whitepaper's section 3.2.2, figure 4).
//
// Every node of the input graph carries its assigned device. Each data edge
// between two devices becomes a _Send in the source's partition and a _Recv in
// the destination's, sharing a rendezvous key; there is one _Send and one _Recv
// per (tensor, destination device), however many consumers the tensor has
// there. A control edge between devices becomes a _Send of a dummy scalar
// (which runs after the source) and a _Recv that the destination waits for,
// one pair per (source node, destination device). The step's _Arg and _Retval
// nodes are numbered densely within each partition; the partition records
// which of the whole graph's feeds and fetches they are. A loop frame whose
// nodes span devices gets, on each device with _Recvs in it, a control loop
// (Enter, Merge, Switch on the frame's LoopCond received from its device,
// NextIteration) that those _Recvs wait for: each then runs once per
// iteration, live or dead as its _Send, under a key with the frame and
// iteration (TensorFlow's AddControlFlow). Then, by default,
// each partition's _Recvs are gated so they start only when their consumers
// are near (graph/recv_scheduling.hpp, the whitepaper's section 5.2).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/recv_scheduling.hpp"

namespace actorflow {

struct GraphPartition {
  std::string device;             // full name of the device it runs on
  proto::GraphDef graph;
  std::vector<int> arg_indices;     // per _Arg of this partition (by its new index): the whole graph's index
  std::vector<int> retval_indices;  // per _Retval of this partition (by its new index): the whole graph's index
  int num_sends = 0;                // _Send and _Recv nodes added to this partition
  int num_recvs = 0;
};

struct PartitionOptions {
  /// The incarnation of the sending device, part of every rendezvous key
  /// (distinguishes a restarted process's device from its former self).
  uint64_t device_incarnation = 1;
  /// Per sending device, when set (a cluster: each task has its own); else device_incarnation.
  std::function<uint64_t(const std::string& device)> incarnation_of;
  /// Add control edges so each _Recv starts late (ScheduleRecvsLate on every
  /// partition); false leaves every _Recv free to start with the step.
  bool schedule_recvs_late = true;
  /// Lossy compression on the wire (the whitepaper's section 5.5): a float32
  /// tensor sent to another task travels as the upper 16 bits of each value
  /// (TensorFlow's truncation; zero-filled on receipt), half the bytes. Also
  /// per edge: a node with attr `_wire_compression: "truncate16"` has its
  /// float32 outputs to other tasks sent so. Transfers inside a task never are.
  bool truncate_float32_on_wire = false;
  RecvSchedulingOptions recv_scheduling;
};

/// Splits `g`, whose nodes all have an assigned device, into one partition per
/// device (ordered by device name). InvalidArgument naming the node when one
/// has no device, or when a ref edge (a variable's handle) would cross devices.
Status PartitionGraph(const Graph& g, const PartitionOptions& options, std::vector<GraphPartition>* out);

}  // namespace actorflow
