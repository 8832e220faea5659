// Rewriting a full graph into what one Session::Run signature executes.
//
// Each fed tensor "node:port" becomes an _Arg node (index = position in the
// feeds) that replaces the edge at that port: the feed cuts the graph there.
// Each fetched tensor gets a _Retval node (index = position in the fetches).
// Then every node that no _Retval and no target needs is removed, so it never
// runs — a stateful node included.
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

struct FeedFetchInfo {
  std::vector<DataType> feed_types;                // dtype each feed must have
  std::vector<PartialTensorShape> feed_shapes;     // shape it must be compatible with
  std::vector<DataType> fetch_types;
  /// Per feed, the index of its _Arg in the pruned graph, or -1 when nothing
  /// needs it (the fed value is then ignored, as in TensorFlow).
  std::vector<int> feed_arg_index;
};

/// Errors: NotFound for an unknown node, InvalidArgument for a malformed name,
/// an output port out of range, or a tensor fed twice.
Status RewriteGraphForExecution(Graph* g, const std::vector<std::string>& feeds,
                                const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                FeedFetchInfo* info);

/// Removes every node from which none of `roots` can be reached.
void PruneForRoots(Graph* g, const std::vector<Node*>& roots);

}  // namespace actorflow
