#include "actorflow/client/gradients/while_gradients.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <map>
#include <utility>

#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/ops/control_flow_ops.hpp"
#include "actorflow/client/ops/stack_ops.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

namespace {

struct FrameLink {
  std::string name;
  int64_t parallel = 10;
};

Status EnterAttrs(const Node* enter, FrameLink* link) {
  AF_RETURN_IF_ERROR(GetNodeAttr(enter->def(), "frame_name", &link->name));
  if (enter->def().attr().count("parallel_iterations"))
    AF_RETURN_IF_ERROR(GetNodeAttr(enter->def(), "parallel_iterations", &link->parallel));
  return Status::OK();
}

// The frames from the root down to the one `enter` enters, outermost first.
Status FramePath(const std::vector<ControlFlowInfo>& cf, const Node* enter, std::vector<FrameLink>* path) {
  path->clear();
  for (const Node* e = enter; e != nullptr; e = cf[static_cast<size_t>(e->id())].frame) {
    FrameLink link;
    AF_RETURN_IF_ERROR(EnterAttrs(e, &link));
    path->push_back(link);
  }
  std::reverse(path->begin(), path->end());
  return Status::OK();
}

// `value` (of the root frame) as a constant of the innermost frame of `path`.
Output EnterPath(const Scope& s, Output value, const std::vector<FrameLink>& path) {
  for (const FrameLink& f : path) value = ops::Enter(s, value, f.name, /*is_constant=*/true, f.parallel);
  return value;
}

bool IsConstantEnter(const Node* n) {
  bool constant = false;
  return IsEnterOp(n->type_string()) && n->def().attr().count("is_constant") &&
         GetNodeAttr(n->def(), "is_constant", &constant).ok() && constant;
}

// Adds an iteration counter to `loop` (a new loop variable of its frame):
// `next` is its NextIteration (what must happen in an iteration before the
// count may go on), `count` its Exit: how many times the body ran.
void AddCounter(const Scope& s, const WhileLoopInfo& loop, const std::vector<FrameLink>& parent_path, Node** next,
                Output* count) {
  Graph* g = s.graph();
  Output zero = EnterPath(s, ops::Const(s, 0), parent_path);
  Output enter = ops::Enter(s, zero, loop.frame, /*is_constant=*/false, loop.parallel_iterations);
  ops::MergeOutputs merge = ops::Merge(s, {enter, enter});
  ops::SwitchOutputs sw = ops::Switch(s, merge.output, Output(loop.loop_cond, 0));
  Output body = ops::Identity(s, sw.output_true);
  Output one = ops::Const(s.WithControlDependencies({body.op()}), 1);
  Output nx = ops::NextIteration(s, ops::Add(s, body, one));
  *count = ops::Exit(s, sw.output_false);
  if (!s.ok()) return;
  for (const Edge* e : merge.output.node()->in_edges())
    if (!e->IsControlEdge() && e->dst_input == 1) {
      g->ReplaceEdgeSource(e, nx.node(), nx.index());
      break;
    }
  *next = nx.node();
}

using Port = std::pair<int, int>;

// The frame of the values `n` outputs: an Exit's go to its frame's parent
// (the node itself belongs to the frame it leaves).
// A Switch's predicate, looking through Identities (a Cond switches its
// values on pred_id = Identity(pred), and its pivots on pred itself).
Port Predicate(const Node* sw) {
  const Edge* e = sw->input_edge(1);
  while (e && e->src->type_string() == "Identity") e = e->src->input_edge(0);
  return e ? Port{e->src->id(), e->src_output} : Port{-1, -1};
}

std::string ValueFrame(const std::vector<ControlFlowInfo>& cf, const Node* n) {
  const ControlFlowInfo& info = cf[static_cast<size_t>(n->id())];
  if (IsExitOp(n->type_string()) && info.frame) return cf[static_cast<size_t>(info.frame->id())].frame_name;
  return info.frame_name;
}

}  // namespace

bool IsLoopExit(const Node* n) { return IsExitOp(n->type_string()); }

Status FindWhileLoop(const Graph& g, Node* exit, WhileLoopInfo* loop) {
  auto bad = [exit](const std::string& why) {
    return errors::InvalidArgument("node '", exit->name(), "' (op '", exit->type_string(),
                                   "') does not leave a while loop: ", why);
  };
  *loop = WhileLoopInfo();
  const Edge* e = exit->input_edge(0);
  if (!e || !IsSwitchOp(e->src->type_string())) return bad("its input is not a Switch");
  const Edge* pred = e->src->input_edge(1);
  if (!pred || pred->src->type_string() != "LoopCond") return bad("its Switch's predicate is not a LoopCond");
  loop->loop_cond = pred->src;
  for (const Edge* out : loop->loop_cond->out_edges()) {
    if (out->IsControlEdge() || out->dst_input != 1 || !IsSwitchOp(out->dst->type_string())) continue;
    WhileLoopInfo::Var v;
    v.sw = out->dst;
    const Edge* m = v.sw->input_edge(0);
    if (!m || !IsMergeOp(m->src->type_string())) return bad("Switch '" + v.sw->name() + "' does not switch a Merge");
    v.merge = m->src;
    for (int i = 0; i < v.merge->num_inputs(); ++i) {
      const Edge* in = v.merge->input_edge(i);
      if (!in) continue;
      if (IsEnterOp(in->src->type_string())) v.enter = in->src;
      else if (IsNextIterationOp(in->src->type_string())) v.next = in->src;
    }
    if (!v.enter || !v.next) return bad("Merge '" + v.merge->name() + "' lacks an Enter or a NextIteration input");
    for (const Edge* o : v.sw->out_edges())
      if (!o->IsControlEdge() && o->src_output == 0 && IsExitOp(o->dst->type_string())) v.exit = o->dst;
    loop->vars.push_back(v);
  }
  if (loop->vars.empty()) return bad("its LoopCond switches nothing");
  FrameLink link;
  AF_RETURN_IF_ERROR(EnterAttrs(loop->vars[0].enter, &link));
  loop->frame = link.name;
  loop->parallel_iterations = link.parallel;
  for (Node* n : g.nodes()) {
    if (!IsConstantEnter(n)) continue;
    std::string frame;
    if (GetNodeAttr(n->def(), "frame_name", &frame).ok() && frame == loop->frame) loop->const_enters.push_back(n);
  }
  return Status::OK();
}

Status AddWhileLoopGradient(const Scope& scope, const WhileLoopInfo& loop, const std::vector<Output>& dy_exits,
                            std::vector<Output>* d_inits, std::vector<Output>* d_consts) {
  Graph* g = scope.graph();
  // Tolerant: an enclosing gradient loop may be half built (its body not yet
  // captured into its frame); the forward graph's frames are unaffected.
  std::vector<ControlFlowInfo> cf;
  AF_RETURN_IF_ERROR(BuildControlFlowInfo(*g, &cf, /*tolerant=*/true));
  const int forward_end = g->num_node_ids();  // the nodes before: the forward graph
  std::vector<FrameLink> path;
  AF_RETURN_IF_ERROR(FramePath(cf, loop.vars[0].enter, &path));
  const std::vector<FrameLink> parent_path(path.begin(), path.end() - 1);
  // Everything built for the forward loop is marked so that enclosing
  // backward loops do not take it in.
  auto mark_since = [g](int first) {
    for (int id = first; id < g->num_node_ids(); ++id)
      if (Node* n = g->node(id)) MarkForwardSide(n);
  };
  Node* counter_next = nullptr;
  Output count;
  AddCounter(scope, loop, parent_path, &counter_next, &count);
  AF_RETURN_IF_ERROR(scope.status());
  mark_since(forward_end);

  // The backward loop's variables: the iteration, the gradient of each
  // differentiable loop variable, the sum of each differentiable constant's.
  std::vector<size_t> vars, consts;
  for (size_t k = 0; k < loop.vars.size(); ++k)
    if (IsDifferentiableType(loop.vars[k].merge->output_type(0))) vars.push_back(k);
  for (size_t c = 0; c < loop.const_enters.size(); ++c)
    if (IsDifferentiableType(loop.const_enters[c]->output_type(0))) consts.push_back(c);
  OutputList init{ops::Const(scope, 0)};
  for (size_t k : vars) {
    const Output& dy = k < dy_exits.size() ? dy_exits[k] : Output();
    const WhileLoopInfo::Var& v = loop.vars[k];
    init.push_back(dy.valid() ? dy
                              : ops::ZerosLike(scope, v.exit ? Output(v.exit, 0)
                                                             : Output(v.enter->input_edge(0)->src,
                                                                      v.enter->input_edge(0)->src_output)));
  }
  for (size_t c : consts) {
    const Edge* in = loop.const_enters[c]->input_edge(0);
    init.push_back(ops::ZerosLike(scope, Output(in->src, in->src_output)));
  }
  // Backward iterations run in parallel as the forward ones did, but each
  // iteration's pops wait for the previous iteration's (a token carried from
  // iteration to iteration), so they take the stacks' values in order. With a
  // loop nested in the body, its backward loops' pops of one backward
  // iteration are not covered by the token: then one iteration at a time.
  bool nested = false;
  for (const Node* n : g->nodes())
    if (n->id() < forward_end && IsExitOp(n->type_string()) && ValueFrame(cf, n) == loop.frame) nested = true;
  const size_t token_index = init.size();
  if (!nested) init.push_back(ops::Const(scope, 0.f));
  AF_RETURN_IF_ERROR(scope.status());
  Output token;  // the body's token: set when the body is built

  std::map<Port, Output> popped;
  // The forward value at `port` (of the loop's frame), popped in the backward
  // iteration from the stack the forward iteration pushed it on.
  // The cond branch a body value lives in: the (Switch, side) it is computed
  // under, or none. A value of a branch exists only in the iterations that
  // took it: it is pushed then, and popped only in the backward iterations
  // of those (gated by the cond's predicate, itself popped).
  std::set<const Node*> loop_nodes;
  for (const auto& v : loop.vars) loop_nodes.insert({v.sw, v.merge});
  std::vector<ControlFlowInfo> now;  // the frames as the graph has them when the body's gradient is built
  Status context_error;
  std::map<const Node*, std::pair<const Node*, int>> contexts;  // of non-Switch nodes, once found
  std::function<std::pair<const Node*, int>(const Node*, int)> context = [&](const Node* node,
                                                                             int port) -> std::pair<const Node*, int> {
    if (IsSwitchOp(node->type_string()) && !loop_nodes.count(node)) return {node, port};
    auto known = contexts.find(node);
    if (known != contexts.end()) return known->second;
    contexts[node] = {nullptr, 0};  // a cycle (there should be none within an iteration) finds nothing more
    std::set<std::pair<const Node*, int>> found;
    std::set<const Node*> seen{node};
    std::vector<const Node*> todo{node};
    if (IsExitOp(node->type_string())) {  // a loop inside the body: it lives where its Enters' inputs do
      WhileLoopInfo inner;
      if (FindWhileLoop(*g, const_cast<Node*>(node), &inner).ok()) {
        todo.clear();
        for (const auto& v : inner.vars)
          if (seen.insert(v.enter).second) todo.push_back(v.enter);
        for (const Node* c : inner.const_enters)
          if (seen.insert(c).second) todo.push_back(c);
      }
    }
    while (!todo.empty()) {
      const Node* n = todo.back();
      todo.pop_back();
      for (const Edge* e : n->in_edges()) {  // control edges too: a branch's Consts hang on its pivot
        const Node* src = e->src;
        if (!seen.insert(src).second || loop_nodes.count(src)) continue;
        if (src->type_string() == "ControlTrigger") continue;  // never dead: tells nothing of a branch
        if (IsExitOp(src->type_string()) && ValueFrame(now, src) == loop.frame) {
          // A loop inside the body: it lives where its Enters' inputs do.
          WhileLoopInfo inner;
          if (FindWhileLoop(*g, const_cast<Node*>(src), &inner).ok()) {
            for (const auto& v : inner.vars)
              if (seen.insert(v.enter).second) todo.push_back(v.enter);
            for (const Node* c : inner.const_enters)
              if (seen.insert(c).second) todo.push_back(c);
          }
          continue;
        }
        if (ValueFrame(now, src) != loop.frame) continue;  // constants, outer values
        if (IsMergeOp(src->type_string())) {
          // A cond's result is outside its branches, in the branch (if any)
          // the cond itself lies in.
          const auto outer = context(src, 0);
          if (outer.first) found.insert(outer);
          continue;
        }
        if (IsSwitchOp(src->type_string())) {
          // A control edge from a Switch is live whichever side it took: it
          // is no branch; walk on from its inputs.
          if (e->IsControlEdge()) todo.push_back(src);
          else found.insert({src, e->src_output});
          continue;
        }
        todo.push_back(src);
      }
    }
    std::pair<const Node*, int> result{nullptr, 0};
    if (IsMergeOp(node->type_string()) && !found.empty()) {
      // A cond's Merge is outside its branches: it lives where the cond's
      // predicate does (every Switch of one cond switches on that predicate).
      const Port pred = Predicate(found.begin()->first);
      bool one_cond = true;
      for (const auto& [sw, side] : found) one_cond = one_cond && Predicate(sw) == pred;
      if (one_cond && pred.first >= 0) return contexts[node] = context(g->node(pred.first), pred.second);
    } else if (!found.empty()) {
      // One branch of one cond: every Switch found has its predicate and side.
      const auto& [first_sw, first_side] = *found.begin();
      const Port pred = Predicate(first_sw);
      bool one_branch = true;
      for (const auto& [sw, side] : found) one_branch = one_branch && side == first_side && Predicate(sw) == pred;
      if (one_branch) return contexts[node] = *found.begin();
    } else {
      return result;
    }
    context_error.Update(errors::Unimplemented("the gradient of while loop '", loop.frame, "' needs '", node->name(),
                                               "', which depends on several conds' branches at once"));
    return result;
  };
  Node* pushes_done = nullptr;  // a ControlTrigger after every push (live or dead) of an iteration
  std::function<Output(const Scope&, const Port&)> pop = [&](const Scope& s, const Port& port) -> Output {
    auto it = popped.find(port);
    if (it != popped.end()) return it->second;
    Node* src = g->node(port.first);
    const DataType dtype = BaseType(src->output_type(port.second));
    const int first = g->num_node_ids();
    Output handle = ops::Stack(scope, dtype);
    Output pushed = ops::StackPush(scope, EnterPath(scope, handle, path), Output(src, port.second));
    if (!scope.ok()) return Output();
    if (!pushes_done) {
      // The count leaves the loop after every push. A push in a branch not
      // taken is dead; the ControlTrigger still fires, so the count goes on.
      pushes_done = ops::ControlTrigger(scope).node();
      g->AddControlEdge(pushes_done, counter_next);
    }
    g->AddControlEdge(pushed.node(), pushes_done);
    mark_since(first);
    Output value = ops::StackPop(s, handle, dtype);
    if (token.valid()) g->AddControlEdge(token.node(), value.node());
    popped.emplace(port, value);
    const auto [sw, side] = context(src, port.second);
    if (sw) {
      // Popped only when the forward iteration took this branch.
      const Edge* pred_edge = sw->input_edge(1);
      Output pred;
      if (std::find(loop.const_enters.begin(), loop.const_enters.end(), pred_edge->src) != loop.const_enters.end()) {
        const Edge* outside = pred_edge->src->input_edge(0);  // a loop constant: the same every iteration
        pred = Output(outside->src, outside->src_output);
      } else if (ValueFrame(now, pred_edge->src) != loop.frame) {
        pred = Output(pred_edge->src, pred_edge->src_output);
      } else {
        pred = pop(s, {pred_edge->src->id(), pred_edge->src_output});
      }
      Output taken = side == 1 ? pred : ops::LogicalNot(s, pred);
      // An Identity of the taken side: a control edge from a Switch itself is
      // live whichever side it took (as a Cond's switch_t is).
      Output gate = ops::Identity(s, ops::Switch(s, taken, taken).output_true);
      if (!s.ok()) return Output();
      g->AddControlEdge(gate.node(), value.node());
    }
    return value;
  };

  auto cond = [count](const Scope& s, const OutputList& v, Output* pred) {
    *pred = ops::Less(s, v[0], count);
    return s.status();
  };
  auto body = [&](const Scope& s, const OutputList& v, OutputList* next) -> Status {
    if (!nested) token = v[token_index];
    OutputList ys, xs, grad_ys;
    for (size_t i = 0; i < vars.size(); ++i) {
      const Edge* result = loop.vars[vars[i]].next->input_edge(0);
      ys.push_back(Output(result->src, result->src_output));
      xs.push_back(Output(loop.vars[vars[i]].sw, 1));
      grad_ys.push_back(v[1 + i]);
    }
    for (size_t c : consts) xs.push_back(Output(loop.const_enters[c], 0));
    const int mark = g->num_node_ids();
    OutputList grads;
    AF_RETURN_IF_ERROR(AddSymbolicGradientsStoppingAtXs(s, ys, xs, grad_ys, &grads));
    // Forward values the gradient reads come from the stacks; loop constants
    // from outside, as the backward loop's own constants.
    // Forward values are the forward graph's, and what inner loops' gradients
    // added to it (their counters); frames as the graph has them now.
    const int end = g->num_node_ids();
    AF_RETURN_IF_ERROR(BuildControlFlowInfo(*g, &now, /*tolerant=*/true));
    for (int id = mark; id < end; ++id) {
      Node* n = g->node(id);
      if (!n || IsForwardSide(n)) continue;
      const std::vector<Edge*> in(n->in_edges().begin(), n->in_edges().end());
      for (Edge* e : in) {
        if (e->IsControlEdge() || (e->src->id() >= forward_end && !IsForwardSide(e->src))) continue;
        if (std::find(loop.const_enters.begin(), loop.const_enters.end(), e->src) != loop.const_enters.end()) {
          const Edge* outside = e->src->input_edge(0);
          g->ReplaceEdgeSource(e, outside->src, outside->src_output);
          continue;
        }
        if (ValueFrame(now, e->src) != loop.frame) continue;  // outside: a constant
        Output value = pop(s, {e->src->id(), e->src_output});
        AF_RETURN_IF_ERROR(scope.status());
        AF_RETURN_IF_ERROR(context_error);
        g->ReplaceEdgeSource(e, value.node(), value.index());
      }
    }
    next->clear();
    next->push_back(ops::Add(s, v[0], 1));
    for (size_t i = 0; i < vars.size(); ++i) next->push_back(grads[i].valid() ? grads[i] : ops::ZerosLike(s, v[1 + i]));
    for (size_t i = 0; i < consts.size(); ++i) {
      const Output& d = grads[vars.size() + i];
      const Output& acc = v[1 + vars.size() + i];
      next->push_back(d.valid() ? ops::Add(s, acc, d) : acc);
    }
    if (!nested) {
      // The next iteration's token: after this iteration's pops, whether they
      // ran or were dead (a branch not taken).
      std::vector<Operation> pops;
      for (const auto& [port, value] : popped) pops.push_back(value.op());
      if (pops.empty()) {
        next->push_back(token);
      } else {
        Operation all_popped = ops::ControlTrigger(s.WithControlDependencies(pops));
        next->push_back(ops::Identity(s.WithControlDependencies({all_popped}), token));
      }
    }
    return s.status();
  };
  ops::WhileOptions options;
  options.parallel_iterations = nested ? 1 : loop.parallel_iterations;
  options.name = "while_grad";
  OutputList out;
  AF_RETURN_IF_ERROR(ops::WhileLoop(scope, init, cond, body, &out, options));
  d_inits->assign(loop.vars.size(), Output());
  d_consts->assign(loop.const_enters.size(), Output());
  for (size_t i = 0; i < vars.size(); ++i) (*d_inits)[vars[i]] = out[1 + i];
  for (size_t i = 0; i < consts.size(); ++i) (*d_consts)[consts[i]] = out[1 + vars.size() + i];
  return scope.status();
}

}  // namespace actorflow
