// Static output shapes of a whole graph: every node's shape function run in
// topological order, with constant inputs' values (for Reshape, Fill, ...).
// Used where sizes help but are not required (the placer's cost estimates,
// `actorflow graph --dot` labels).
//
// Safe on hostile graphs: only small constants (ConstValueForShapeFn) are
// read, shape functions bound ranks and check dims for overflow, and one that
// fails or throws leaves its node's outputs unknown (see shape_inference.hpp).
#pragma once

#include <vector>

#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

/// Per node id, the shape of each output; unknown where inference cannot tell
/// (a failing shape function, a feed of unknown shape, a graph with a cycle).
using StaticShapes = std::vector<std::vector<PartialTensorShape>>;

StaticShapes InferStaticShapes(const Graph& g);

}  // namespace actorflow
