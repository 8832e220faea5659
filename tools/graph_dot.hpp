// Graphviz DOT text of a graph, for `actorflow graph --dot` (render it with
// `dot -Tsvg OUT > graph.svg`).
//
// Every op is one box labelled with its name and op (and, in an unplaced
// graph, the device it asks for, when it does). A data edge is labelled with the tensor's dtype and, when
// static shape inference knows it, its shape ("float [?,2]"); a control edge
// is dashed. Names are written only inside quoted strings, escaped for DOT, so
// any node or device name is safe; node ids are generated ("n0", "p1_n3").
//
//   GraphToDot(g, DotGrouping::kNone)       the graph as it is
//   GraphToDot(g, DotGrouping::kByDevice)   one `subgraph cluster_K` per assigned device (after PlaceGraph)
//   PartitionsToDot(partitions, &text)      one cluster per partition (after PartitionGraph), a dotted
//                                           edge from each _Send to the _Recv sharing its rendezvous key
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/partition.hpp"

namespace actorflow {

enum class DotGrouping {
  kNone,      // no clusters
  kByDevice,  // one cluster per assigned device; nodes without one stay outside
};

/// The DOT text (a `digraph`) of `g`.
std::string GraphToDot(const Graph& g, DotGrouping grouping);

/// The DOT text of a partitioned graph. InvalidArgument naming the device when
/// a partition's GraphDef does not import.
Status PartitionsToDot(const std::vector<GraphPartition>& partitions, std::string* out);

/// `s` escaped for the inside of a quoted DOT string used as a label: `"` and
/// `\` are backslash-escaped, a newline becomes `\n`, other control bytes `?`.
std::string DotEscape(const std::string& s);

}  // namespace actorflow
