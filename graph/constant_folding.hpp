// Constant folding (the TensorFlow whitepaper, section 5.1; TensorFlow's
// graph optimizer): the part of a graph that computes the same values at
// every step is computed once, when the graph is prepared, and replaced by
// Const nodes holding the results.
//
// A node is folded when it is a Const, or when all its data inputs come from
// folded nodes and it is stateless, not an _Arg, Placeholder,
// PlaceholderWithDefault, Send or Recv, has outputs and consumers, takes no
// ref input and gives no ref output, and its CPU kernel builds, is
// synchronous (OpKernel::AsAsync() is nullptr) and computes without error on
// the host. Kernels run once each, in topological order, on `cpu`. A kernel
// that cannot be built or fails leaves its node (and what depends on it)
// unfolded: the error comes at run time, naming the node, as without folding.
//
// Each folded output that an unfolded node consumes becomes a new Const,
// named "node/_folded_PORT" (made unique), on the node's requested device.
// The Const gets control edges from the nodes outside the folded part that
// the folded nodes it derives from waited on (their control inputs), and a
// node that waited on a folded node through a control edge waits on those
// instead, so the order of effects is kept. The folded nodes are then
// removed, and so are Const nodes whose consumers were all removed.
//
// An output that a Const cannot hold (larger than max_constant_size_in_bytes,
// or of a dtype Const does not support) is left to run time: its node stays,
// fed by folded Consts in turn. Shape-like ops on inputs whose static shapes
// are fully known are not folded (their inputs are not Const).
#pragma once

#include <cstdint>

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

class Device;

struct ConstantFoldingOptions {
  /// False turns the pass off (FoldConstants then changes nothing).
  bool enabled = true;
  /// The largest folded constant, in bytes of its elements (TensorPayloadBytes:
  /// strings by their contents); TensorFlow's limit, 10 MiB, by default.
  int64_t max_constant_size_in_bytes = int64_t{10} << 20;
};

/// Folds the constant parts of `g` (see above), computing them on `cpu` (a
/// device of type CPU: InvalidArgument otherwise). `changed`: whether the
/// graph was modified. InvalidArgument when `g` has a cycle.
Status FoldConstants(Graph* g, Device* cpu, const ConstantFoldingOptions& options, bool* changed = nullptr);

}  // namespace actorflow
