// actorflow inspect: what a GraphDef takes, gives and needs.
//
//   actorflow inspect --graph FILE
//
// Prints the graph's size and producer version, its inputs (placeholders,
// with dtype and shape), its outputs (the nodes nothing consumes, with their
// op) and the op types it uses that this build does not register, so that a
// user sees at once whether a TensorFlow graph will load and what to feed and
// fetch. The graph is read, not imported: a graph with unknown ops is
// inspected too. Exit 0 when the file was read, 2 on a usage error or a file
// that is not a GraphDef. (SavedModels come with issue 18's SavedModel work.)
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

/// Runs `actorflow inspect ARGS...`; returns the exit status.
int InspectCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
