#include "actorflow/actors/device/propagation.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "actorflow/actors/device/executor_plan.hpp"

namespace actorflow {

namespace {

void Push(StepState* step, IterationState* iter, int32_t node, bool dead, std::vector<TaggedNode>* ready) {
  ++step->outstanding;
  ++iter->outstanding_ops;
  ready->push_back({step, iter, node, dead});
}

// One input of `dst` (in `iter`) arrived, live or dead: counts it and queues
// `dst` when that made it ready.
inline void Activate(StepState* step, IterationState* iter, const NodeItem& dst, int32_t dst_index, int32_t dst_local,
                     bool control, bool live, bool from_enter, std::vector<TaggedNode>* ready, bool* need_input) {
  int32_t& pending = iter->pending[static_cast<size_t>(dst_local)];
  bool now = false;
  bool dead = false;
  *need_input = false;
  if (dst.kind == NodeKind::kMerge) {
    int32_t& dead_count = iter->dead_count[static_cast<size_t>(dst_local)];
    if (control) {
      pending -= 2;
      dead = dead_count == dst.num_inputs;
      now = pending == 0 || (pending == 1 && dead);
    } else if (live) {
      // Only the first live input is kept; the merge runs when it came and
      // no control input is still due (pending was exactly 1).
      now = pending == 1;
      *need_input = (pending & 1) == 1;
      pending &= ~1;
    } else {
      // A dead Enter makes a loop's merge dead at once: its other input, the
      // back edge, never comes to iteration 0 (a loop in a branch not taken).
      // (counted as all inputs dead, so a control input arriving later sees it too).
      dead_count = from_enter ? dst.num_inputs : dead_count + 1;
      dead = dead_count == dst.num_inputs;
      now = pending == 1 && dead;
    }
  } else {
    *need_input = live && !control;
    if (!live) ++iter->dead_count[static_cast<size_t>(dst_local)];
    now = --pending == 0;
    dead = now && !iter->dead_count.empty() && iter->dead_count[static_cast<size_t>(dst_local)] > 0;
  }
  if (now) Push(step, iter, dst_index, dead && dst.kind != NodeKind::kControlTrigger, ready);
}

// Hands `item`'s outputs to its consumers in `iter` (its own iteration, or
// the one its value enters).
void ActivateNodes(StepState* step, const NodeItem& item, bool is_dead, IterationState* iter, Tensor* outputs,
                   std::vector<TaggedNode>* ready) {
  const ExecutorPlan& plan = step->plan();
  const bool from_enter = item.kind == NodeKind::kEnter;
  const OutEdgeItem* edges = plan.out_edges(item);
  for (int32_t e = 0; e < item.num_out; ++e) {
    const OutEdgeItem& edge = edges[e];
    Tensor& out = outputs[edge.src_output];
    const bool live = !is_dead && out.IsInitialized();
    bool need_input = false;
    // The input goes in before the node may be queued: the ready queue is
    // only run after propagation, but a merge reads the slot it was given.
    const NodeItem& dst = plan.item(edge.dst);
    if (dst.kind != NodeKind::kMerge && live) {
      if (edge.last_use) iter->inputs[static_cast<size_t>(edge.dst_slot)] = std::move(out);
      else iter->inputs[static_cast<size_t>(edge.dst_slot)] = out;
      Activate(step, iter, dst, edge.dst, edge.dst_local, false, true, from_enter, ready, &need_input);
      continue;
    }
    const bool was_pending_merge = dst.kind == NodeKind::kMerge && live &&
                                   (iter->pending[static_cast<size_t>(edge.dst_local)] & 1) == 1;
    if (was_pending_merge) {
      if (edge.last_use) iter->inputs[static_cast<size_t>(edge.dst_slot)] = std::move(out);
      else iter->inputs[static_cast<size_t>(edge.dst_slot)] = out;
    }
    Activate(step, iter, dst, edge.dst, edge.dst_local, false, live, from_enter, ready, &need_input);
  }
  const CtrlEdgeItem* ctrl = plan.ctrl_edges(item);
  for (int32_t e = 0; e < item.num_ctrl; ++e) {
    bool need_input = false;
    Activate(step, iter, plan.item(ctrl[e].dst), ctrl[e].dst, ctrl[e].dst_local, true, !is_dead, from_enter, ready,
             &need_input);
  }
}

// Enter, Exit and NextIteration have exactly one output.
void ActivateInvariant(StepState* step, const FrameState::Value& inv, IterationState* iter,
                       std::vector<TaggedNode>* ready) {
  Tensor output;
  if (!inv.dead) output = inv.value;  // shared, not copied
  ActivateNodes(step, step->plan().item(inv.node), inv.dead, iter, &output, ready);
}

// Starts the next iteration of `frame`: the NextIteration values waiting
// for it and the loop invariants go in.
void IncrementIteration(StepState* step, FrameState* frame, std::vector<TaggedNode>* ready) {
  const int64_t next = ++frame->iteration_count;
  auto& slot = NewIterationSlot(frame, next);
  if (!frame->spare.empty()) {
    slot = std::move(frame->spare.back());
    frame->spare.pop_back();
    slot->Reset(*frame->info, next);
  } else {
    slot = std::make_unique<IterationState>(*frame->info, true, frame, next);
  }
  IterationState* iter = slot.get();
  ++frame->num_outstanding_iterations;
  frame->dead_exits.clear();
  std::vector<FrameState::Value> nexts;
  nexts.swap(frame->next_iter_roots);
  for (FrameState::Value& v : nexts) ActivateNodes(step, step->plan().item(v.node), false, iter, &v.value, ready);
  for (const FrameState::Value& inv : frame->loop_invariants) ActivateInvariant(step, inv, iter, ready);
}

bool IsIterationDone(const FrameState* frame, int64_t i) {
  const IterationState* it = frame->iteration(i);
  if (it->outstanding_ops != 0 || it->outstanding_frame_count != 0) return false;
  if (i == 0) return frame->num_pending_inputs == 0;
  return frame->iteration(i - 1) == nullptr;
}

// Frees the finished iterations of `frame` from `i` on, in order (starting
// waiting ones as room frees up); ends the frame when nothing is left.
void CleanupIterations(StepState* step, FrameState* frame, int64_t i, std::vector<TaggedNode>* ready) {
  for (int64_t cur = i; cur <= frame->iteration_count && frame->iteration(cur) && IsIterationDone(frame, cur); ++cur) {
    frame->spare.push_back(std::move(frame->iteration_slot(cur)));
    --frame->num_outstanding_iterations;
    if (!frame->next_iter_roots.empty()) IncrementIteration(step, frame, ready);
  }
  if (frame->num_pending_inputs != 0 || frame->num_outstanding_iterations != 0) return;
  // The frame is done: its dead exits go to the parent, dead; then it goes.
  FrameState* parent = frame->parent;
  IterationState* parent_iter = frame->parent_iter;
  for (int32_t node : frame->dead_exits) {
    Tensor none;
    ActivateNodes(step, step->plan().item(node), true, parent_iter, &none, ready);
  }
  const std::string name = frame->name;
  step->frames.erase(name);  // frees `frame`
  --parent_iter->outstanding_frame_count;
  if (parent->parent != nullptr && IsIterationDone(parent, parent_iter->iter))
    CleanupIterations(step, parent, parent_iter->iter, ready);
}

FrameState* FindOrCreateChildFrame(StepState* step, IterationState* iter, const NodeItem& enter) {
  const FrameInfo& info = step->plan().frame(enter.enter_frame);
  std::string name = iter->frame->name;
  name += ';';
  name += std::to_string(iter->iter);
  name += ';';
  name += info.name;
  auto it = step->frames.find(name);
  if (it != step->frames.end()) return it->second.get();
  auto frame = std::make_unique<FrameState>();
  frame->info = &info;
  frame->name = name;
  frame->id = static_cast<int64_t>(std::hash<std::string>()(name) | 1);  // never 0, the root's
  frame->parent = iter->frame;
  frame->parent_iter = iter;
  frame->parent_iterations = iter->frame->parent_iterations;
  if (iter->frame->parent != nullptr) frame->parent_iterations.push_back(iter->iter);  // the root's is no loop's
  frame->parallel_iterations = enter.parallel_iterations;
  frame->num_pending_inputs = info.num_enters;
  // The ring starts small and grows with the iterations actually live
  // (NewIterationSlot): a parallel_iterations of 2^20 costs nothing up front.
  frame->iterations.resize(std::min<size_t>(static_cast<size_t>(enter.parallel_iterations) + 1, kInitialIterationRing));
  frame->iterations[0] = std::make_unique<IterationState>(info, true, frame.get(), 0);
  ++iter->outstanding_frame_count;
  FrameState* raw = frame.get();
  step->frames.emplace(std::move(name), std::move(frame));
  return raw;
}

}  // namespace

std::unique_ptr<IterationState>& NewIterationSlot(FrameState* frame, int64_t next) {
  // Live before `next`: the num_outstanding_iterations iterations just below
  // it (freed in order). With `next`, they must leave a slot free, so that a
  // just-freed iteration (IsIterationDone asks for next - live - 1) reads null.
  const size_t needed = static_cast<size_t>(frame->num_outstanding_iterations) + 2;
  const size_t size = frame->iterations.size();
  if (needed > size) {
    const size_t cap = static_cast<size_t>(frame->parallel_iterations) + 1;
    const size_t grown = std::max(needed, std::min(2 * size, cap));
    std::vector<std::unique_ptr<IterationState>> ring(grown);
    for (auto& it : frame->iterations)
      if (it) ring[static_cast<size_t>(it->iter % static_cast<int64_t>(grown))] = std::move(it);
    frame->iterations.swap(ring);
  }
  return frame->iteration_slot(next);
}

void PropagateOutputs(StepState* step, IterationState* iter, int32_t node, Tensor* outputs, bool is_dead,
                      std::vector<TaggedNode>* ready) {
  const NodeItem& item = step->plan().item(node);
  FrameState* frame = iter->frame;
  switch (item.kind) {
    case NodeKind::kEnter: {
      FrameState* child = FindOrCreateChildFrame(step, iter, item);
      if (item.is_constant_enter) {
        FrameState::Value inv{node, is_dead ? Tensor() : outputs[0], is_dead || !outputs[0].IsInitialized()};
        for (int64_t i = 0; i <= child->iteration_count; ++i)
          if (IterationState* it = child->iteration(i)) ActivateInvariant(step, inv, it, ready);
        child->loop_invariants.push_back(std::move(inv));
      } else {
        ActivateNodes(step, item, is_dead, child->iteration(0), outputs, ready);
      }
      if (--child->num_pending_inputs == 0 && child->iteration(0) && IsIterationDone(child, 0))
        CleanupIterations(step, child, 0, ready);  // nothing in the frame consumed what entered
      break;
    }
    case NodeKind::kExit:
      if (is_dead) {
        if (iter->iter == frame->iteration_count) frame->dead_exits.push_back(node);
      } else {
        ActivateNodes(step, item, false, frame->parent_iter, outputs, ready);
      }
      break;
    case NodeKind::kNextIteration: {
      if (is_dead) break;  // the loop ends here: no next iteration from this value
      const int64_t next = iter->iter + 1;
      if (next > frame->iteration_count) {
        if (frame->num_outstanding_iterations >= frame->parallel_iterations) {
          frame->next_iter_roots.push_back({node, std::move(outputs[0]), false});
          break;
        }
        IncrementIteration(step, frame, ready);
      }
      ActivateNodes(step, item, false, frame->iteration(next), outputs, ready);
      break;
    }
    default:
      ActivateNodes(step, item, is_dead, iter, outputs, ready);
  }
  // Retire the node from its iteration.
  if (--iter->outstanding_ops == 0 && frame->parent != nullptr && IsIterationDone(frame, iter->iter))
    CleanupIterations(step, frame, iter->iter, ready);
}

}  // namespace actorflow
