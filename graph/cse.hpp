// Common subexpression elimination (the TensorFlow whitepaper, section 5.1):
// nodes that compute the same value are merged into one, so it runs once.
//
// Two nodes are equivalent when they have the same op, the same attrs (each
// value compared by its deterministic serialization, so the unordered attr
// map and float signs such as 0.0 / -0.0 are handled exactly), the same data
// inputs (equivalent source nodes and the same output port, in order), the
// same control inputs (as a set of equivalent nodes) and the same requested
// and assigned device. Nodes are numbered in topological order, each input by
// the class of its source, so merging parents makes their children equal in
// the same pass: one pass reaches the fixed point. The survivor of a class is
// its node with the smallest id; the others' consumers (data and control) are
// rewired to it and they are removed.
//
// Never merged: stateful ops (variables, random ops, Save/Restore, Assert,
// _Retval...: each node is its own state or effect), _Arg, Placeholder,
// PlaceholderWithDefault, Send/Recv, and nodes with a ref input or output
// (Assign, the Apply* updates: each is an effect on a variable).
#pragma once

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

/// Merges equivalent nodes of `g` (see above); `num_removed` gets how many
/// nodes were removed. InvalidArgument when `g` has a cycle.
Status EliminateCommonSubexpressions(Graph* g, int* num_removed = nullptr);

/// Whether CSE may merge `n` with an equivalent node.
bool IsCseCandidate(const Node& n);

}  // namespace actorflow
