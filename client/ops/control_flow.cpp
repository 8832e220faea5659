#include "actorflow/client/ops/control_flow.hpp"

#include <map>
#include <utility>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow_ops.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {
namespace ops {

namespace {

// The last component of a node name ("outer/while_1" -> "while_1").
std::string BaseName(const std::string& name) {
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

// A scope whose ops are named under `full_name` (which `scope`'s prefix begins).
Scope ConstructScope(const Scope& scope, const std::string& full_name) {
  return scope.NewSubScope(BaseName(full_name));
}

bool HasEdge(const Node* src, const Node* dst) {
  for (const Edge* e : dst->in_edges())
    if (e->src == src && e->IsControlEdge()) return true;
  return false;
}

void AddControl(Graph* g, Node* src, Node* dst) {
  if (src != dst && !HasEdge(src, dst)) g->AddControlEdge(src, dst);
}

using Port = std::pair<int, int>;  // (node id, output)

// `value` as a loop constant of `frame`; a variable (a ref) enters as a ref,
// so the loop reads its current value and its updates reach it.
Output EnterConstant(const Scope& s, const Output& value, const std::string& frame, int64_t parallel) {
  if (IsRefType(value.node()->output_type(value.index())))
    return ops::RefEnter(s, value, frame, /*is_constant=*/true, parallel);
  return ops::Enter(s, value, frame, /*is_constant=*/true, parallel);
}

// Rewrites the nodes with ids in [begin, end) (built by a loop's cond or
// body) so that they live in the loop's frame: a data input from outside the
// loop (a node with id < `first`) comes through a constant Enter (one per
// tensor); a control input from outside moves to `gate` (the loop starts only
// after it). A node that then depends on nothing of the iteration (no input,
// or only loop constants) gets a control edge from `pivot`: it runs in the
// iterations the pivot runs in, not in every iteration the frame starts
// (TensorFlow's _MaybeAddControlDependency).
void CaptureIntoFrame(const Scope& s, int first, int begin, int end, const std::string& frame, int64_t parallel,
                      Node* pivot, Node* gate, std::map<Port, Output>* entered) {
  Graph* g = s.graph();
  auto is_constant = [&](const Node* n) {
    for (const auto& [port, enter] : *entered)
      if (enter.node() == n) return true;
    return false;
  };
  for (int id = begin; id < end; ++id) {
    Node* n = id < g->num_node_ids() ? g->node(id) : nullptr;
    if (!n) continue;
    if (IsForwardSide(n)) continue;  // added for a gradient: not part of this loop
    bool gated = false;  // depends on something of the iteration
    const std::vector<Edge*> in(n->in_edges().begin(), n->in_edges().end());
    for (Edge* e : in) {
      if (e->src->id() >= first && !IsForwardSide(e->src)) {
        gated = gated || !is_constant(e->src);
        continue;
      }
      if (e->IsControlEdge()) {
        Node* src = e->src;
        g->RemoveEdge(e);
        AddControl(g, src, gate);
        continue;
      }
      const Port key{e->src->id(), e->src_output};
      auto it = entered->find(key);
      if (it == entered->end()) {
        it = entered->emplace(key, EnterConstant(s, Output(e->src, e->src_output), frame, parallel)).first;
        if (!it->second.valid()) return;  // the scope has the error
      }
      g->ReplaceEdgeSource(e, it->second.node(), it->second.index());
    }
    if (!gated) AddControl(g, pivot, n);
  }
}

// Rewrites a cond branch's nodes, ids in [begin, end): a data input from
// before the cond (id < `first`) comes through a Switch on the predicate
// (one per tensor; `side` 1 takes output_true); a node without inputs from
// the branch gets a control edge from the branch's `pivot`, so that it is
// dead when the branch is not taken.
void CaptureIntoBranch(const Scope& s, int first, int begin, int end, Output pred, int side, Node* pivot,
                       std::map<Port, Output>* switched) {
  Graph* g = s.graph();
  for (int id = begin; id < end; ++id) {
    Node* n = id < g->num_node_ids() ? g->node(id) : nullptr;
    if (!n) continue;
    if (IsForwardSide(n)) continue;
    bool guarded = false;  // some input is from the branch (or switched)
    const std::vector<Edge*> in(n->in_edges().begin(), n->in_edges().end());
    for (Edge* e : in) {
      if (e->src->id() >= first && !IsForwardSide(e->src)) {
        guarded = true;
        continue;
      }
      if (e->IsControlEdge()) continue;  // ordering only; the pivot guards the node
      const Port key{e->src->id(), e->src_output};
      auto it = switched->find(key);
      if (it == switched->end()) {
        const Output value(e->src, e->src_output);
        // A variable (a ref) stays a ref, so the branch's updates reach it.
        SwitchOutputs sw = IsRefType(value.node()->output_type(value.index())) ? ops::RefSwitch(s, value, pred)
                                                                               : ops::Switch(s, value, pred);
        if (!sw.output_true.valid()) return;
        it = switched->emplace(key, side == 1 ? sw.output_true : sw.output_false).first;
      }
      g->ReplaceEdgeSource(e, it->second.node(), it->second.index());
      guarded = true;
    }
    if (!guarded) AddControl(g, pivot, n);
  }
}

std::string Describe(const Output& o) { return o.valid() ? "'" + o.name() + "'" : "<invalid>"; }

// Whether `got` may stand where `want` is expected (every known dimension agrees).
bool Fits(const PartialTensorShape& want, const PartialTensorShape& got) { return want.IsCompatibleWith(got) && (want.unknown_rank() || !got.unknown_rank()); }

}  // namespace

Status WhileLoop(const Scope& scope, const OutputList& loop_vars, const WhileCondFn& cond, const WhileBodyFn& body,
                 OutputList* outputs, const WhileOptions& options) {
  AF_RETURN_IF_ERROR(scope.status());
  if (loop_vars.empty()) return errors::InvalidArgument("WhileLoop needs at least one loop variable");
  if (options.parallel_iterations < 1)
    return errors::InvalidArgument("WhileLoop: parallel_iterations must be at least 1, got ",
                                   options.parallel_iterations);
  if (!options.shape_invariants.empty() && options.shape_invariants.size() != loop_vars.size())
    return errors::InvalidArgument("WhileLoop: ", options.shape_invariants.size(), " shape invariants for ",
                                   loop_vars.size(), " loop variables");
  for (const Output& v : loop_vars)
    if (!v.valid()) return errors::InvalidArgument("WhileLoop: a loop variable is not a valid output");
  Graph* g = scope.graph();
  const std::string frame = scope.GetUniqueNameForOp(options.name);
  const Scope s = ConstructScope(scope, frame);
  const int first = g->num_node_ids();
  const int64_t parallel = options.parallel_iterations;
  // With maximum_iterations, a counter runs as loop variable 0.
  const bool counted = options.maximum_iterations >= 0;
  OutputList vars = loop_vars;
  if (counted) vars.insert(vars.begin(), ops::Const(s.WithOpName("iteration_counter"), 0));
  const size_t n = vars.size();

  OutputList enters(n), merges(n), switches_false(n), identities(n);
  std::vector<SwitchOutputs> switches(n);
  for (size_t i = 0; i < n; ++i) enters[i] = ops::Enter(s.WithOpName("Enter"), vars[i], frame, false, parallel);
  for (size_t i = 0; i < n; ++i) merges[i] = ops::Merge(s.WithOpName("Merge"), {enters[i], enters[i]}).output;
  AF_RETURN_IF_ERROR(s.status());

  // The condition.
  const int cond_begin = g->num_node_ids();
  OutputList cond_vars(merges.begin() + (counted ? 1 : 0), merges.end());
  Output pred;
  AF_RETURN_IF_ERROR(cond(s, cond_vars, &pred));
  AF_RETURN_IF_ERROR(s.status());
  if (!pred.valid() || pred.type() != DT_BOOL)
    return errors::InvalidArgument("WhileLoop '", frame, "': the condition must be a bool, got ",
                                   pred.valid() ? DataTypeString(pred.type()) : std::string("nothing"));
  if (counted) pred = ops::LogicalAnd(s, ops::Less(s, merges[0], ops::Const(s, static_cast<int32_t>(std::min<int64_t>(options.maximum_iterations, INT32_MAX)))), pred);
  const int cond_end = g->num_node_ids();
  Output loop_cond = ops::LoopCond(s.WithOpName("LoopCond"), pred);
  for (size_t i = 0; i < n; ++i) switches[i] = ops::Switch(s.WithOpName("Switch"), merges[i], loop_cond);
  for (size_t i = 0; i < n; ++i) identities[i] = ops::Identity(s.WithOpName("Identity"), switches[i].output_true);
  AF_RETURN_IF_ERROR(s.status());

  // The body.
  const int body_begin = g->num_node_ids();
  OutputList body_vars(identities.begin() + (counted ? 1 : 0), identities.end());
  OutputList next;
  AF_RETURN_IF_ERROR(body(s, body_vars, &next));
  AF_RETURN_IF_ERROR(s.status());
  if (next.size() != body_vars.size())
    return errors::InvalidArgument("WhileLoop '", frame, "': the body gives ", next.size(), " values for ",
                                   body_vars.size(), " loop variables");
  if (counted) next.insert(next.begin(), ops::Add(s, identities[0], ops::Const(s, 1)));
  const int body_end = g->num_node_ids();
  for (size_t i = 0; i < n; ++i) {
    const size_t user = counted ? i - 1 : i;  // index among the caller's loop variables
    if (!next[i].valid()) return errors::InvalidArgument("WhileLoop '", frame, "': body result ", user, " is not valid");
    if (next[i].type() != vars[i].type())
      return errors::InvalidArgument("WhileLoop '", frame, "': loop variable ", user, " (", Describe(vars[i]),
                                     ") enters as ", DataTypeString(vars[i].type()), " but the body gives ",
                                     DataTypeString(next[i].type()));
    if (counted && i == 0) continue;
    const PartialTensorShape entered = scope.InferredShape(vars[i]);
    const PartialTensorShape after = scope.InferredShape(next[i]);
    if (options.shape_invariants.empty()) {
      // Without an invariant the shape may not change (where both are known).
      if (!after.unknown_rank() && !entered.unknown_rank() && !entered.IsCompatibleWith(after))
        return errors::InvalidArgument(
            "WhileLoop '", frame, "': loop variable ", user, " (", Describe(vars[i]), ") enters the loop with shape ",
            entered.DebugString(), " but has shape ", after.DebugString(),
            " after one iteration; give a shape invariant (WhileOptions::shape_invariants) to let its shape vary");
    } else {
      const PartialTensorShape& inv = options.shape_invariants[user];
      if (!Fits(inv, entered) && !entered.unknown_rank())
        return errors::InvalidArgument("WhileLoop '", frame, "': loop variable ", user, " (", Describe(vars[i]),
                                       ") enters with shape ", entered.DebugString(),
                                       ", not compatible with its shape invariant ", inv.DebugString());
      if (!inv.IsCompatibleWith(after))
        return errors::InvalidArgument("WhileLoop '", frame, "': loop variable ", user, " (", Describe(vars[i]),
                                       ") has shape ", after.DebugString(),
                                       " after one iteration, not compatible with its shape invariant ",
                                       inv.DebugString());
    }
  }

  // The back edges, then the exits.
  OutputList next_iterations(n);
  for (size_t i = 0; i < n; ++i) next_iterations[i] = ops::NextIteration(s.WithOpName("NextIteration"), next[i]);
  AF_RETURN_IF_ERROR(s.status());
  for (size_t i = 0; i < n; ++i) {
    for (const Edge* e : merges[i].node()->in_edges()) {
      if (e->IsControlEdge() || e->dst_input != 1) continue;
      g->ReplaceEdgeSource(e, next_iterations[i].node(), next_iterations[i].index());
      break;
    }
  }
  OutputList exits(n);
  for (size_t i = 0; i < n; ++i) exits[i] = ops::Exit(s.WithOpName("Exit"), switches[i].output_false);
  AF_RETURN_IF_ERROR(s.status());

  // Outside tensors the cond and body use enter as loop constants.
  std::map<Port, Output> entered;
  CaptureIntoFrame(s, first, cond_begin, cond_end, frame, parallel, merges[0].node(), enters[0].node(), &entered);
  CaptureIntoFrame(s, first, body_begin, body_end, frame, parallel, identities[0].node(), enters[0].node(), &entered);
  // A body result that is an outside tensor (returned as is) enters too.
  for (size_t i = 0; i < n; ++i) {
    const Edge* e = next_iterations[i].node()->input_edge(0);
    if (e && e->src->id() < first) {
      const Port key{e->src->id(), e->src_output};
      auto it = entered.find(key);
      if (it == entered.end())
        it = entered.emplace(key, EnterConstant(s, Output(e->src, e->src_output), frame, parallel)).first;
      g->ReplaceEdgeSource(e, it->second.node(), it->second.index());
    }
  }
  AF_RETURN_IF_ERROR(s.status());
  outputs->assign(exits.begin() + (counted ? 1 : 0), exits.end());
  return Status::OK();
}

Status Cond(const Scope& scope, Input pred_in, const BranchFn& true_fn, const BranchFn& false_fn, OutputList* outputs,
            const std::string& name) {
  AF_RETURN_IF_ERROR(scope.status());
  Graph* g = scope.graph();
  const std::string full = scope.GetUniqueNameForOp(name);
  const Scope s = ConstructScope(scope, full);
  const Output pred = scope.AsOutput(pred_in);
  AF_RETURN_IF_ERROR(scope.status());
  if (pred.type() != DT_BOOL)
    return errors::InvalidArgument("Cond '", full, "': the predicate must be a bool, got ", DataTypeString(pred.type()));
  const int first = g->num_node_ids();
  SwitchOutputs p = ops::Switch(s.WithOpName("Switch"), pred, pred);
  Output switch_t = ops::Identity(s.WithOpName("switch_t"), p.output_true);
  Output switch_f = ops::Identity(s.WithOpName("switch_f"), p.output_false);
  Output pred_id = ops::Identity(s.WithOpName("pred_id"), pred);
  AF_RETURN_IF_ERROR(s.status());

  OutputList results[2];  // [0]: false branch, [1]: true branch
  const BranchFn* fns[2] = {&false_fn, &true_fn};
  const Output pivots[2] = {switch_f, switch_t};
  for (int side : {1, 0}) {
    const int begin = g->num_node_ids();
    AF_RETURN_IF_ERROR((*fns[side])(s, &results[side]));
    AF_RETURN_IF_ERROR(s.status());
    const int end = g->num_node_ids();
    std::map<Port, Output> switched;
    CaptureIntoBranch(s, first, begin, end, pred_id, side, pivots[side].node(), &switched);
    // A result from outside the cond is switched too: the branch not taken gives it dead.
    for (Output& r : results[side]) {
      if (!r.valid())
        return errors::InvalidArgument("Cond '", full, "': the ", side ? "true" : "false", " branch gave an invalid output");
      if (r.node()->id() >= first) continue;
      const Port key{r.node()->id(), r.index()};
      auto it = switched.find(key);
      if (it == switched.end()) {
        SwitchOutputs sw = ops::Switch(s, r, pred_id);
        it = switched.emplace(key, side ? sw.output_true : sw.output_false).first;
      }
      r = it->second;
    }
    AF_RETURN_IF_ERROR(s.status());
  }
  if (results[0].size() != results[1].size())
    return errors::InvalidArgument("Cond '", full, "': the true branch gives ", results[1].size(),
                                   " results, the false branch ", results[0].size());
  outputs->clear();
  for (size_t i = 0; i < results[0].size(); ++i) {
    if (results[0][i].type() != results[1][i].type())
      return errors::InvalidArgument("Cond '", full, "': result ", i, " is ", DataTypeString(results[1][i].type()),
                                     " in the true branch but ", DataTypeString(results[0][i].type()),
                                     " in the false branch");
    outputs->push_back(ops::Merge(s.WithOpName("Merge"), {results[0][i], results[1][i]}).output);
  }
  return s.status();
}

}  // namespace ops
}  // namespace actorflow
