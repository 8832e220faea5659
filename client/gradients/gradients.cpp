#include "actorflow/client/gradients/gradients.hpp"

#include "actorflow/client/gradients/while_gradients.hpp"

#include <cstdlib>
#include <deque>
#include <iostream>
#include <memory>
#include <set>
#include <unordered_map>

#include "actorflow/client/ops/cc_ops.hpp"

namespace actorflow {

// ---------------------------------------------------------------------------
// GradOpRegistry

GradOpRegistry* GradOpRegistry::Global() {
  static auto* registry = new GradOpRegistry;  // never destroyed: registrations outlive static destructors
  return registry;
}

bool GradOpRegistry::Register(const std::string& op, GradFunc fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!grads_.emplace(op, fn).second) {
    std::cerr << "actorflow: gradient of op '" << op << "' registered twice\n";
    std::abort();
  }
  return true;
}

Status GradOpRegistry::Lookup(const std::string& op, GradFunc* fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = grads_.find(op);
  if (it != grads_.end()) {
    *fn = it->second;
    return Status::OK();
  }
  if (OpRegistry::Global()->IsNotDifferentiable(op)) {  // declared with the op
    *fn = nullptr;
    return Status::OK();
  }
  return errors::NotFound("No gradient defined for op '", op, "'");
}

std::vector<std::string> GradOpRegistry::ListOps() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& entry : grads_) out.insert(entry.first);
  for (const std::string& op : OpRegistry::Global()->ListNotDifferentiable()) out.insert(op);
  return std::vector<std::string>(out.begin(), out.end());
}

bool IsDifferentiableType(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_FLOAT: case DT_DOUBLE: case DT_HALF: case DT_BFLOAT16: case DT_COMPLEX64: case DT_COMPLEX128:
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------
// SymbolicGradientBuilder

namespace {

// One AddSymbolicGradients call (TensorFlow's SymbolicGradientBuilder).
//
// Nodes that some x reaches forward and that reach some y backward ("on the
// path") get a list of incoming gradients per output and a count of the
// gradients still to come: one per data out-edge to a node on the path, one
// per ys entry naming the node. A node whose count reaches zero is ready: its
// outputs' gradients are summed, its gradient function is called, and the
// results flow along its data in-edges. Everything built goes under
// "gradients/"; on error, every node built is removed again.
class SymbolicGradientBuilder {
 public:
  SymbolicGradientBuilder(const Scope& scope, const OutputList& ys, const OutputList& xs, const OutputList* grad_ys,
                          OutputList* grad_outputs, bool stop_at_xs = false)
      : scope_(scope), grad_scope_(stop_at_xs ? scope : scope.NewSubScope("gradients")), ys_(ys), xs_(xs),
        grad_ys_(grad_ys), grad_outputs_(grad_outputs), stop_at_xs_(stop_at_xs) {}

  Status Build() {
    Graph* g = scope_.graph();
    const int first_new_id = g->num_node_ids();
    Status s = BuildGradients();
    if (s.ok()) s = scope_.status();
    if (!s.ok()) {  // take every node this call built out again
      std::vector<Node*> built;
      for (int id = first_new_id; id < g->num_node_ids(); ++id)
        if (Node* n = g->node(id)) built.push_back(n);
      g->RemoveNodes(built);  // one batch: RemoveNode scans every edge
      grad_outputs_->clear();
    }
    return s;
  }

 private:
  Status BuildGradients();
  Status CheckArgs() const;
  Status CheckOutput(const Output& o, const char* what, size_t i) const;
  void Initialize();
  /// Adds `grad` (invalid: none) to the gradients of `src` when src is on the path.
  void BackpropAlongEdge(const Output& grad, const Output& src);
  /// The sum of the gradients received by `src` (invalid when none).
  Output SumGradients(const Scope& scope, Node* n, int index);
  Status ProcessNode(Node* n);
  /// A while loop is one node of the path: its Exits are its outputs, its
  /// Enters' inputs its inputs (client/gradients/while_gradients.hpp).
  struct Loop {
    WhileLoopInfo info;
    std::vector<Node*> enters;  // its variables' and its constants' Enters
    int exits_on_path = 0;
    int exits_ready = 0;
  };
  /// The loop `n` (an Exit) leaves, found on first use; null if `n` is none.
  Loop* LoopOf(Node* n);
  /// Every Exit of the loop is ready: builds its gradient loop.
  Status ProcessLoop(Loop* loop);

  const Scope& scope_;
  const Scope grad_scope_;
  const OutputList& ys_;
  const OutputList& xs_;
  const OutputList* grad_ys_;  // null: ones
  OutputList* grad_outputs_;

  // By node id; backprops_[id] is empty for nodes off the path.
  std::vector<std::vector<std::vector<Output>>> backprops_;
  std::vector<int> pending_;
  std::deque<Node*> ready_;
  // (node id, output index) -> indices into xs_ of that output.
  std::unordered_multimap<int64_t, size_t> x_index_;
  int nodes_on_path_ = 0;
  int nodes_processed_ = 0;
  const bool stop_at_xs_;  // gradients do not flow on past an x (a loop's body)
  std::vector<bool> is_x_;  // by node id
  std::vector<std::unique_ptr<Loop>> loops_;
  std::unordered_map<int, Loop*> loop_of_exit_;     // by Exit node id
  std::unordered_map<int, Loop*> loop_of_enter_;    // by Enter node id
  Status loop_status_;  // the first error finding a loop
};

int64_t Key(const Node* n, int index) { return (static_cast<int64_t>(n->id()) << 32) | static_cast<uint32_t>(index); }

Status SymbolicGradientBuilder::CheckOutput(const Output& o, const char* what, size_t i) const {
  const Graph* g = scope_.graph();
  if (!o.valid()) return errors::InvalidArgument(what, "[", i, "] is not a valid Output");
  const int id = o.node()->id();
  if (id < 0 || id >= g->num_node_ids() || g->node(id) != o.node())
    return errors::InvalidArgument(what, "[", i, "] ('", o.name(), "') is not a node of this scope's graph");
  if (o.index() < 0 || o.index() >= o.node()->num_outputs())
    return errors::InvalidArgument(what, "[", i, "] refers to output ", o.index(), " of node '", o.node()->name(),
                                   "' (op '", o.node()->type_string(), "'), which has ", o.node()->num_outputs(),
                                   " outputs");
  return Status::OK();
}

Status SymbolicGradientBuilder::CheckArgs() const {
  for (size_t i = 0; i < ys_.size(); ++i) AF_RETURN_IF_ERROR(CheckOutput(ys_[i], "ys", i));
  for (size_t i = 0; i < xs_.size(); ++i) AF_RETURN_IF_ERROR(CheckOutput(xs_[i], "xs", i));
  if (grad_ys_ == nullptr) return Status::OK();
  if (grad_ys_->size() != ys_.size())
    return errors::InvalidArgument("AddSymbolicGradients: ", ys_.size(), " ys but ", grad_ys_->size(), " grad_ys");
  for (size_t i = 0; i < grad_ys_->size(); ++i) {
    const Output& dy = (*grad_ys_)[i];
    AF_RETURN_IF_ERROR(CheckOutput(dy, "grad_ys", i));
    if (dy.type() != ys_[i].type())
      return errors::InvalidArgument("grad_ys[", i, "] ('", dy.name(), "') is ", DataTypeString(dy.type()),
                                     " but ys[", i, "] ('", ys_[i].name(), "') is ", DataTypeString(ys_[i].type()));
  }
  return Status::OK();
}

void SymbolicGradientBuilder::Initialize() {
  const Graph* g = scope_.graph();
  const int n_ids = g->num_node_ids();
  // Backward from the ys along data edges: the nodes that reach some y.
  std::vector<bool> reaches_y(n_ids, false);
  std::deque<Node*> queue;
  is_x_.assign(n_ids, false);
  for (const Output& x : xs_) is_x_[x.node()->id()] = true;
  for (const Output& y : ys_) {
    if (reaches_y[y.node()->id()]) continue;
    reaches_y[y.node()->id()] = true;
    queue.push_back(y.node());
  }
  auto reach = [&](Node* src) {
    if (reaches_y[src->id()]) return;
    reaches_y[src->id()] = true;
    queue.push_back(src);
  };
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    if (stop_at_xs_ && is_x_[n->id()]) continue;
    if (Loop* loop = LoopOf(n)) {  // an Exit: the loop's inputs reach y
      for (Node* enter : loop->enters) {
        const Edge* in = enter->input_edge(0);
        if (in) reach(in->src);
      }
      continue;
    }
    for (const Edge* e : n->in_edges())
      if (!e->IsControlEdge()) reach(e->src);
  }
  std::vector<int> y_refs(n_ids, 0);
  for (const Output& y : ys_) ++y_refs[y.node()->id()];

  // Forward from the xs along data edges into nodes that reach some y.
  backprops_.assign(n_ids, {});
  pending_.assign(n_ids, 0);
  std::vector<bool> visited(n_ids, false);
  for (size_t i = 0; i < xs_.size(); ++i) {
    Node* n = xs_[i].node();
    x_index_.emplace(Key(n, xs_[i].index()), i);
    if (visited[n->id()]) continue;
    visited[n->id()] = true;
    queue.push_back(n);
  }
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    if (!reaches_y[n->id()]) continue;  // an x that no y depends on
    backprops_[n->id()].resize(n->num_outputs());
    ++nodes_on_path_;
    if (Loop* loop = LoopOf(n)) ++loop->exits_on_path;
    int expected = y_refs[n->id()];
    for (const Edge* e : n->out_edges()) {
      if (e->IsControlEdge()) continue;
      auto entered = loop_of_enter_.find(e->dst->id());
      if (entered != loop_of_enter_.end()) {
        // Into a loop: the gradient comes back from the loop as a whole, once
        // per Enter, if any of its Exits reaches a y.
        bool on = false;
        for (const auto& v : entered->second->info.vars) {
          if (!v.exit || !reaches_y[v.exit->id()]) continue;
          on = true;
          if (!visited[v.exit->id()]) {
            visited[v.exit->id()] = true;
            queue.push_back(v.exit);
          }
        }
        if (on) ++expected;
        continue;
      }
      if (!reaches_y[e->dst->id()]) continue;
      ++expected;
      if (!visited[e->dst->id()]) {
        visited[e->dst->id()] = true;
        queue.push_back(e->dst);
      }
    }
    pending_[n->id()] = expected;
  }
}

void SymbolicGradientBuilder::BackpropAlongEdge(const Output& grad, const Output& src) {
  auto& lists = backprops_[src.node()->id()];
  if (lists.empty()) return;  // src is off the path
  // A resource variable's handle collects the gradients of the values read through it.
  const bool carries = IsDifferentiableType(src.type()) || src.type() == DT_RESOURCE;
  lists[src.index()].push_back(carries ? grad : Output());
  if (--pending_[src.node()->id()] == 0) ready_.push_back(src.node());
}

Output SymbolicGradientBuilder::SumGradients(const Scope& scope, Node* n, int index) {
  OutputList grads;
  for (const Output& o : backprops_[n->id()][index])
    if (o.valid()) grads.push_back(o);
  if (grads.empty()) return Output();
  if (grads.size() == 1) return grads[0];
  return ops::AddN(scope, std::vector<Input>(grads.begin(), grads.end()));
}

Status SymbolicGradientBuilder::ProcessNode(Node* n) {
  ++nodes_processed_;
  const Scope scope = grad_scope_.NewSubScope(n->name() + "_grad");
  const int num_y = n->num_outputs();
  std::vector<Output> dy(num_y);
  int num_no_grad = 0;
  for (int i = 0; i < num_y; ++i) {
    dy[i] = SumGradients(scope, n, i);
    if (!dy[i].valid()) ++num_no_grad;
    auto range = x_index_.equal_range(Key(n, i));
    for (auto it = range.first; it != range.second; ++it) (*grad_outputs_)[it->second] = dy[i];
  }
  AF_RETURN_IF_ERROR(scope.status());
  if (stop_at_xs_ && is_x_[n->id()]) return Status::OK();
  if (Loop* loop = LoopOf(n)) {
    if (++loop->exits_ready == loop->exits_on_path) return ProcessLoop(loop);
    return Status::OK();
  }

  // Stop unless some data input comes from a node on the path.
  bool inputs_on_path = false;
  for (const Edge* e : n->in_edges())
    if (!e->IsControlEdge() && !backprops_[e->src->id()].empty()) inputs_on_path = true;
  if (!inputs_on_path) return Status::OK();

  GradFunc fn = nullptr;
  if (num_no_grad < num_y) {
    Status found = GradOpRegistry::Global()->Lookup(n->type_string(), &fn);
    if (!found.ok())
      return errors::NotFound("No gradient defined for op '", n->type_string(), "' of node '", n->name(),
                              "' (register one with AF_REGISTER_GRADIENT, or AF_REGISTER_NO_GRADIENT)");
  }
  std::vector<Output> dx;
  if (fn != nullptr) {
    for (int i = 0; i < num_y; ++i)
      if (!dy[i].valid()) dy[i] = ops::ZerosLike(scope, Output(n, i));
    Status s = fn(scope, Operation(n), dy, &dx);
    if (s.ok()) s = scope.status();
    if (!s.ok())
      return s.WithContext("computing the gradient of node '" + n->name() + "' (op '" + n->type_string() + "')");
    if (static_cast<int>(dx.size()) != n->num_inputs())
      return errors::Internal("the gradient function of op '", n->type_string(), "' returned ", dx.size(),
                              " gradients for node '", n->name(), "', which has ", n->num_inputs(), " inputs");
    for (int i = 0; i < n->num_inputs(); ++i) {
      // A resource variable's handle takes the gradient of the value read through it.
      if (dx[i].valid() && dx[i].type() != BaseType(n->input_type(i)) && n->input_type(i) != DT_RESOURCE)
        return errors::Internal("the gradient function of op '", n->type_string(), "' returned a ",
                                DataTypeString(dx[i].type()), " gradient for input ", i, " of node '", n->name(),
                                "', which is ", DataTypeString(BaseType(n->input_type(i))));
    }
  }
  // No gradient function (not differentiable, or no gradient arrived): none flows on.
  dx.resize(n->num_inputs());
  for (const Edge* e : n->in_edges())
    if (!e->IsControlEdge()) BackpropAlongEdge(dx[e->dst_input], Output(e->src, e->src_output));
  return Status::OK();
}

SymbolicGradientBuilder::Loop* SymbolicGradientBuilder::LoopOf(Node* n) {
  if (!IsLoopExit(n)) return nullptr;
  auto it = loop_of_exit_.find(n->id());
  if (it != loop_of_exit_.end()) return it->second;
  auto loop = std::make_unique<Loop>();
  Status s = FindWhileLoop(*scope_.graph(), n, &loop->info);
  if (!s.ok()) {
    loop_status_.Update(s);
    return nullptr;
  }
  for (const auto& v : loop->info.vars) {
    loop->enters.push_back(v.enter);
    if (v.exit) loop_of_exit_[v.exit->id()] = loop.get();
  }
  for (Node* c : loop->info.const_enters) loop->enters.push_back(c);
  for (Node* e : loop->enters) loop_of_enter_[e->id()] = loop.get();
  loop_of_exit_[n->id()] = loop.get();
  loops_.push_back(std::move(loop));
  return loops_.back().get();
}

Status SymbolicGradientBuilder::ProcessLoop(Loop* loop) {
  const WhileLoopInfo& info = loop->info;
  const Scope scope = grad_scope_.NewSubScope(info.vars[0].exit ? info.vars[0].exit->name() + "_grad" : "while_grad");
  std::vector<Output> dy(info.vars.size());
  for (size_t k = 0; k < info.vars.size(); ++k)
    if (info.vars[k].exit && !backprops_[info.vars[k].exit->id()].empty()) dy[k] = SumGradients(scope, info.vars[k].exit, 0);
  std::vector<Output> d_inits, d_consts;
  Status s = AddWhileLoopGradient(scope, info, dy, &d_inits, &d_consts);
  if (!s.ok()) return s.WithContext("computing the gradient of the while loop '" + info.frame + "'");
  for (size_t k = 0; k < info.vars.size(); ++k) {
    const Edge* in = info.vars[k].enter->input_edge(0);
    BackpropAlongEdge(d_inits[k], Output(in->src, in->src_output));
  }
  for (size_t c = 0; c < info.const_enters.size(); ++c) {
    const Edge* in = info.const_enters[c]->input_edge(0);
    BackpropAlongEdge(d_consts[c], Output(in->src, in->src_output));
  }
  return Status::OK();
}

Status SymbolicGradientBuilder::BuildGradients() {
  AF_RETURN_IF_ERROR(scope_.status());
  AF_RETURN_IF_ERROR(CheckArgs());
  grad_outputs_->assign(xs_.size(), Output());
  Initialize();
  AF_RETURN_IF_ERROR(loop_status_);
  for (size_t i = 0; i < ys_.size(); ++i) {
    if (backprops_[ys_[i].node()->id()].empty()) continue;  // no x reaches this y
    Output dy;  // none for a y of an integer, bool or string dtype
    if (grad_ys_) dy = (*grad_ys_)[i];
    else if (IsDifferentiableType(ys_[i].type())) dy = ops::OnesLike(grad_scope_, ys_[i]);
    AF_RETURN_IF_ERROR(grad_scope_.status());
    BackpropAlongEdge(dy, ys_[i]);
  }
  while (!ready_.empty()) {
    Node* n = ready_.front();
    ready_.pop_front();
    AF_RETURN_IF_ERROR(ProcessNode(n));
  }
  if (nodes_processed_ != nodes_on_path_) {
    for (Node* n : scope_.graph()->nodes()) {
      if (!backprops_[n->id()].empty() && pending_[n->id()] > 0)
        return errors::Unimplemented("cannot compute gradients through the cycle at node '", n->name(), "' (op '",
                                     n->type_string(), "')");
    }
  }
  for (size_t i = 0; i < xs_.size(); ++i) {
    if ((*grad_outputs_)[i].valid()) continue;
    // No dtype to make zeros of: a handle no read connects to ys has no gradient.
    if (xs_[i].type() == DT_RESOURCE)
      return errors::InvalidArgument("no gradient reaches the resource handle '", xs_[i].name(),
                                     "': none of its reads leads to the ys");
    (*grad_outputs_)[i] = ops::ZerosLike(grad_scope_, xs_[i]);
  }
  return grad_scope_.status();
}

}  // namespace

Status AddSymbolicGradients(const Scope& scope, const OutputList& ys, const OutputList& xs, const OutputList& grad_ys,
                            OutputList* grad_outputs) {
  return SymbolicGradientBuilder(scope, ys, xs, &grad_ys, grad_outputs).Build();
}

Status AddSymbolicGradients(const Scope& scope, const OutputList& ys, const OutputList& xs, OutputList* grad_outputs) {
  return SymbolicGradientBuilder(scope, ys, xs, nullptr, grad_outputs).Build();
}

Status AddSymbolicGradientsStoppingAtXs(const Scope& scope, const OutputList& ys, const OutputList& xs,
                                        const OutputList& grad_ys, OutputList* grad_outputs) {
  return SymbolicGradientBuilder(scope, ys, xs, &grad_ys, grad_outputs, /*stop_at_xs=*/true).Build();
}

}  // namespace actorflow
