// The actorflow commands that read a graph without running it:
//
//   actorflow graph --graph FILE --dot OUT [--feed NAME[:PORT]]... [--fetch NAME[:PORT]]...
//                   [--target NAME]... [--devices cpu:N[,gpu:M]] [--placed] [--partitioned]
//   actorflow gradients --graph FILE --y NAME[:PORT] [--y ...] --x NAME[:PORT] [--x ...] --out FILE
//   actorflow ops
//
// `graph` writes the graph as Graphviz DOT to OUT ("-": stdout), see
// tools/graph_dot.hpp. With --fetch/--target it is first pruned as a step with
// those fetches, targets and --feed tensors would be (not optimized). --placed
// also places it on the --devices and draws one cluster per device;
// --partitioned (which implies --placed) draws the partitions, with their
// _Send/_Recv nodes, one cluster each. Exit status: 0 written, 1 OUT could
// not be written, 2 a usage error or a graph that does not load, prune or place.
//
// `gradients` loads a GraphDef as `run` does, adds the nodes computing the
// gradient of the sum of the ys (every element of each) with respect to each x
// (client/gradients/gradients.hpp), writes the graph to the --out file (text for .pbtxt
// or .txt, binary otherwise) and prints the gradients' tensor names, one per
// line in --x order, ready for `run --fetch`. Exit status: 0 done, 1 the
// output could not be written, 2 a usage error, a graph that does not load or
// a gradient that cannot be built (an op without one on the path).
//
// `ops` lists the registered ops, sorted by name, with the device and type
// constraints of each of their kernels:
//
//   MatMul  kernels: CPU[T=float,double,int32,int64]
//
// Contract: each command returns its exit status; errors go to stderr
// (tools/cli_common.hpp). Memory running out is RESOURCE_EXHAUSTED and exit
// status 1: `graph` and `gradients` catch std::bad_alloc themselves, `ops`
// (which allocates little) lets it reach main, which does the same.
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

/// Runs `actorflow graph ARGS...`; returns the exit status.
int GraphCommand(const std::vector<std::string>& argv);

/// Runs `actorflow gradients ARGS...`; returns the exit status.
int GradientsCommand(const std::vector<std::string>& argv);

/// Runs `actorflow ops ARGS...` (ARGS must be empty); returns the exit status.
int OpsCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
