// Which loop frame each node of a graph runs in (TensorFlow's
// BuildControlFlowInfo): the root frame "" for nodes outside loops; an Enter's
// output is in the frame its frame_name attr names, an Exit's output in the
// parent of the Exit's frame; every other node is in the frame of its inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

class Graph;
class Node;

/// The control-flow primitives (Switch, Merge, Enter, Exit, NextIteration,
/// LoopCond, ControlTrigger and their Ref variants) by op name.
bool IsControlFlowOp(const std::string& op);
bool IsEnterOp(const std::string& op);
bool IsExitOp(const std::string& op);
bool IsMergeOp(const std::string& op);
bool IsSwitchOp(const std::string& op);
bool IsNextIterationOp(const std::string& op);

struct ControlFlowInfo {
  std::string frame_name;     // "" for the root frame
  const Node* frame = nullptr;         // an Enter of the frame (frames are told apart by name); null in the root
  const Node* parent_frame = nullptr;  // an Enter of the parent frame; null when the parent is the root
  int32_t depth = 0;                   // loops enclosing the node: 0 in the root frame
  int64_t path_bytes = 0;              // the names of its frame and of the frames enclosing it, together
};

/// A run-time frame is named by its ancestors' names and iterations and
/// knows their iterations (TensorFlow's frame names), so nested loops cost
/// their depth times their names' length, per frame: both are bounded (no
/// real graph comes near), so a small hostile GraphDef of loops nested
/// 100,000 deep is refused instead of taking quadratic memory in a step.
constexpr int32_t kMaxFrameDepth = 1000;
constexpr int64_t kMaxFramePathBytes = int64_t{1} << 16;

/// Per node id (Graph::num_node_ids()), its frame. InvalidArgument when a node
/// has inputs from two different frames (naming the node, both inputs and both
/// frames), an Exit or NextIteration is outside any frame, or an Enter nests
/// its frame past kMaxFrameDepth or kMaxFramePathBytes.
/// `tolerant`: a node reached from two frames keeps the first, no error (for
/// reading the frames of a graph that is being built).
Status BuildControlFlowInfo(const Graph& g, std::vector<ControlFlowInfo>* info, bool tolerant = false);

/// Nodes a gradient adds to a forward loop or for it (stacks, pushes, the
/// iteration counter) while it builds a backward loop: they are not part of
/// the backward loop, whatever their ids (WhileLoop's capture skips them).
void MarkForwardSide(Node* n);
bool IsForwardSide(const Node* n);

/// Whether the graph has any control-flow primitive.
bool HasControlFlow(const Graph& g);

}  // namespace actorflow
