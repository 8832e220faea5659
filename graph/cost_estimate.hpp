// A static estimate of what each node costs, before any step has measured it:
// a MatMul (or _FusedMatMul) by its flops (~50 GFLOP/s), anything else 1 us plus its output
// bytes at ~2 GB/s, from the graph's static shapes (unknown dims count as 1,
// unknown shapes as 0 bytes). The placer's cost model starts from it; the
// Recv scheduler uses it for start times.
#pragma once

#include <vector>

#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/static_shapes.hpp"

namespace actorflow {

/// Bytes of output `port` of `n` by its static shape; 0 when unknown.
double StaticOutputBytes(const Node* n, int port, const StaticShapes& shapes);

/// Microseconds per node id.
std::vector<double> StaticNodeCosts(const Graph& g, const StaticShapes& shapes);

}  // namespace actorflow
