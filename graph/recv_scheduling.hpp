// Recv scheduling: issue each _Recv only when its consumer is near (the
// whitepaper's section 5.2), so a received tensor, and whatever its consumers
// make of it, does not sit in memory from the start of the step. (Within one
// process the rendezvous passes tensors by reference: a received tensor lives
// from its _Send on either way, and what late _Recvs save is what this
// partition computes from them.)
//
// Works on one partition (graph/partition.hpp). A simple cost model gives every
// node a cost (unit, or the placer's static estimate from shapes) and a _Recv
// the cost of its transfer; with them come as-soon-as-possible (ASAP) and
// as-late-as-possible (ALAP) start times, as if the device ran every ready
// node at once. A _Send is due at its ASAP time (another device may be waiting
// for it), so nothing it needs is delayed. For each _Recv the target is the
// earliest ALAP start of its consumers minus the transfer; among the nodes
// whose ALAP finish is at or before the target, the one finishing last when
// run as soon as possible (the executor's greedy order) gets a control edge to
// the _Recv ("^node" among its inputs). The model's makespan is unchanged:
// every gate finishes by its ALAP time, and the _Recv then still delivers by
// its consumer's.
//
// A gate is never a _Recv, never a descendant of the _Recv (with the edges
// already added), so the partition stays acyclic. Cycles through other
// partitions are ruled out too: when some _Send of the partition depends on a
// _Recv of it (tensors go out and come back), a gate must depend on no _Recv
// at all, so it can always run without waiting for another device. A _Recv
// that no gate would delay gets no edge, and partitions with loop frames
// (Enter, NextIteration, ...) are left alone. The result depends only on the
// GraphDef: same input, same edges.
#pragma once

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"

namespace actorflow {

enum class RecvCostEstimate {
  /// Every node costs 1, except sources that compute nothing (Const, _Arg,
  /// Placeholder, NoOp): 0.
  kUnit,
  /// Microseconds, the placer's static estimate from the shapes inferred over
  /// the partition: MatMul (_FusedMatMul) at ~50 GFLOP/s, any other node 1 + its output
  /// bytes at ~2 GB/s (1 where its shapes are unknown).
  kStatic,
};

struct RecvSchedulingOptions {
  RecvCostEstimate costs = RecvCostEstimate::kStatic;
  /// A _Recv's cost in the estimate's unit: the time its transfer takes
  /// (the placer's fixed transfer cost; a _Recv's size is not known statically).
  double transfer_cost = 2.0;
  /// With the static estimate (microseconds): a gate that would delay its
  /// _Recv by less than this is not added. Holding a small transfer back by a
  /// few microseconds saves no memory worth having, and each gate turns the
  /// transfer into a round trip made after the gate (measured here: 1000
  /// scalar transfers went from ~1 to ~3.4 us each when all were gated).
  double min_delay_us = 20.0;
};

/// Adds control edges to the _Recv nodes of `partition` (one device's nodes)
/// as described above; `num_edges_added` (when given) gets how many. Nodes
/// keep their order; only _Recv nodes gain inputs. InvalidArgument naming the
/// device when the partition does not import as a graph.
Status ScheduleRecvsLate(proto::GraphDef* partition, const RecvSchedulingOptions& options,
                         int* num_edges_added = nullptr);

}  // namespace actorflow
