// The graph optimizations a Session applies to each pruned graph before
// registering it: common subexpression elimination (graph/cse.hpp), constant
// folding on the host (graph/constant_folding.hpp), then CSE again, since
// folding can leave equal Consts behind. Both are on by default
// (SessionOptions::graph_options); turning them off runs the graph as written.
// Results are the same either way, bit for bit: folded nodes run the same
// kernels, once, on the CPU device.
#pragma once

#include "actorflow/core/status.hpp"
#include "actorflow/graph/fuse_updates.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

class Device;

struct GraphOptions {
  bool do_common_subexpression_elimination = true;
  bool do_constant_folding = true;
  /// Which devices' optimizer updates become one node per optimizer, after
  /// placement (graph/fuse_updates.hpp, graph/preparation.hpp).
  FuseUpdates fuse_optimizer_updates = FuseUpdates::kOnGpus;
  /// Whether MatMul (Conv2D) -> BiasAdd [-> Relu | Relu6 | LeakyRelu] chains
  /// on a CPU become one _FusedMatMul (_FusedConv2D), after placement
  /// (graph/remapper.hpp):
  /// TensorFlow's RewriterConfig.remapping, on by default there too.
  bool do_remapping = true;
  /// Whether a GPU partition's steps may be captured into a CUDA graph and
  /// replayed (actors/device/step_capture.hpp); false marks every node placed
  /// on a GPU `_no_capture` (graph/preparation.cpp).
  bool capture_gpu_steps = true;
};

/// Runs the passes `options` selects over `g`, folding on `cpu` (a CPU
/// device). Errors name the pass; they leave `g` valid.
Status OptimizeGraph(Graph* g, Device* cpu, const GraphOptions& options);

}  // namespace actorflow
