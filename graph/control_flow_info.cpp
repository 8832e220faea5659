#include "actorflow/graph/control_flow_info.hpp"

#include <deque>

#include "actorflow/graph/graph.hpp"

namespace actorflow {

namespace {
bool OneOf(const std::string& op, const char* a, const char* b) { return op == a || op == b; }
}  // namespace

bool IsEnterOp(const std::string& op) { return OneOf(op, "Enter", "RefEnter"); }
bool IsExitOp(const std::string& op) { return OneOf(op, "Exit", "RefExit"); }
bool IsMergeOp(const std::string& op) { return OneOf(op, "Merge", "RefMerge"); }
bool IsSwitchOp(const std::string& op) { return OneOf(op, "Switch", "RefSwitch"); }
bool IsNextIterationOp(const std::string& op) { return OneOf(op, "NextIteration", "RefNextIteration"); }

bool IsControlFlowOp(const std::string& op) {
  return IsEnterOp(op) || IsExitOp(op) || IsMergeOp(op) || IsSwitchOp(op) || IsNextIterationOp(op) ||
         op == "LoopCond" || op == "ControlTrigger";
}

bool HasControlFlow(const Graph& g) {
  for (const Node* n : g.nodes())
    if (IsControlFlowOp(n->type_string())) return true;
  return false;
}

namespace {
constexpr const char* kForwardSide = "_forward_side";
}  // namespace

void MarkForwardSide(Node* n) { (*n->mutable_def()->mutable_attr())[kForwardSide].set_b(true); }
bool IsForwardSide(const Node* n) { return n->def().attr().count(kForwardSide) != 0; }

Status BuildControlFlowInfo(const Graph& g, std::vector<ControlFlowInfo>* info, bool tolerant) {
  info->assign(static_cast<size_t>(g.num_node_ids()), ControlFlowInfo());
  std::vector<char> visited(static_cast<size_t>(g.num_node_ids()), 0);
  std::vector<const Node*> reached_from(static_cast<size_t>(g.num_node_ids()), nullptr);
  std::deque<const Node*> todo;
  for (const Node* n : g.nodes()) {
    if (!n->in_edges().empty()) continue;
    visited[static_cast<size_t>(n->id())] = 1;
    todo.push_back(n);
  }
  while (!todo.empty()) {
    const Node* cur = todo.front();
    todo.pop_front();
    const ControlFlowInfo& mine = (*info)[static_cast<size_t>(cur->id())];
    // The frame of cur's outputs.
    ControlFlowInfo out = mine;
    const std::string& op = cur->type_string();
    if (IsEnterOp(op)) {
      std::string name;
      AF_RETURN_IF_ERROR(GetNodeAttr(cur->def(), "frame_name", &name));
      if (name.empty()) return errors::InvalidArgument("node '", cur->name(), "' (op '", op, "') has an empty frame_name");
      out.frame_name = name;
      out.frame = cur;
      out.parent_frame = mine.frame;
      out.depth = mine.depth + 1;
      out.path_bytes = mine.path_bytes + static_cast<int64_t>(name.size());
      if (out.depth > kMaxFrameDepth)
        return errors::InvalidArgument("node '", cur->name(), "' (op '", op, "') opens a loop frame nested ",
                                       out.depth, " deep, more than the ", kMaxFrameDepth, " a graph may nest");
      if (out.path_bytes > kMaxFramePathBytes)
        return errors::InvalidArgument("node '", cur->name(), "' (op '", op, "') opens a loop frame whose name and ",
                                       "enclosing frames' names take ", out.path_bytes, " bytes, more than the ",
                                       kMaxFramePathBytes, " nested frames' names may take");
    } else if (IsExitOp(op)) {
      if (!mine.frame)
        return errors::InvalidArgument("node '", cur->name(), "' (op '", op, "') is not inside any loop frame");
      const ControlFlowInfo& parent = (*info)[static_cast<size_t>(mine.frame->id())];
      out = parent;  // the frame the Enter itself is in
    }
    for (const Edge* e : cur->out_edges()) {
      const Node* dst = e->dst;
      const size_t d = static_cast<size_t>(dst->id());
      if (!visited[d]) {
        visited[d] = 1;
        (*info)[d] = out;
        reached_from[d] = cur;
        todo.push_back(dst);
      } else if ((*info)[d].frame_name != out.frame_name && !tolerant) {
        auto frame = [](const std::string& f) { return f.empty() ? std::string("the root frame") : "frame '" + f + "'"; };
        return errors::InvalidArgument("node '", dst->name(), "' has inputs from different frames: the input '",
                                       reached_from[d]->name(), "' is in ", frame((*info)[d].frame_name),
                                       ", the input '", cur->name(), "' is in ", frame(out.frame_name));
      }
    }
  }
  for (const Node* n : g.nodes())
    if (IsNextIterationOp(n->type_string()) && !(*info)[static_cast<size_t>(n->id())].frame)
      return errors::InvalidArgument("node '", n->name(), "' (op '", n->type_string(),
                                     "') is not inside any loop frame");
  return Status::OK();
}

}  // namespace actorflow
