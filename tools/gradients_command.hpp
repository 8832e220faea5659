// actorflow gradients: adds the gradients of a graph's tensors to it.
//
//   actorflow gradients --graph FILE --y NAME[:PORT] [--y ...] --x NAME[:PORT] [--x ...] --out FILE
//
// `gradients` loads a GraphDef as `run` does, adds the nodes computing the
// gradient of the sum of the ys (every element of each) with respect to each x
// (client/gradients/gradients.hpp), writes the graph to the --out file (text for .pbtxt
// or .txt, binary otherwise) and prints the gradients' tensor names, one per
// line in --x order, ready for `run --fetch`. Exit status: 0 done, 1 the
// output could not be written, 2 a usage error, a graph that does not load or
// a gradient that cannot be built (an op without one on the path).
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

/// Runs `actorflow gradients ARGS...`; returns the exit status.
int GradientsCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
