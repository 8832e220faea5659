// actorflow graph: reads a graph without running it.
//
//   actorflow graph --graph FILE --dot OUT [--feed NAME[:PORT]]... [--fetch NAME[:PORT]]...
//                   [--target NAME]... [--devices cpu:N[,gpu:M]] [--placed] [--partitioned]
//
// `graph` writes the graph as Graphviz DOT to OUT ("-": stdout), see
// tools/graph_dot.hpp. With --fetch/--target it is first pruned as a step with
// those fetches, targets and --feed tensors would be (not optimized). --placed
// also places it on the --devices and draws one cluster per device;
// --partitioned (which implies --placed) draws the partitions, with their
// _Send/_Recv nodes, one cluster each. Exit status: 0 written, 1 OUT could
// not be written, 2 a usage error or a graph that does not load, prune or place.
//
//
// Contract: returns its exit status; errors go to stderr (tools/cli_common.hpp).
// Memory running out is RESOURCE_EXHAUSTED and exit status 1 (std::bad_alloc
// is caught here).
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

/// Runs `actorflow graph ARGS...`; returns the exit status.
int GraphCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
