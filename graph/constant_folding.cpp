#include "actorflow/graph/constant_folding.hpp"

#include "actorflow/graph/control_flow_info.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

namespace {

// Ops whose nodes stand for a value from outside (a feed, a transfer): never
// constant, even though they are not marked stateful.
constexpr const char* kNeverFolded[] = {"_Arg", "_Retval", "Placeholder", "PlaceholderWithDefault", "Send",
                                        "Recv", "_Send",   "_Recv",       "_HostSend",              "_HostRecv"};

bool IsConst(const Node* n) { return n->type_string() == "Const"; }

bool HasRefType(const DataTypeVector& types) { return std::any_of(types.begin(), types.end(), IsRefType); }

// Whether `n` may be folded, its sources' fate known (`evaluated`); its
// kernel decides the rest.
bool MayFold(const Node* n, const std::vector<char>& evaluated) {
  if (IsConst(n)) return true;
  if (n->is_stateful() || n->num_outputs() == 0 || n->out_edges().empty()) return false;
  if (IsControlFlowOp(n->type_string())) return false;  // they route tensors through frames: not values
  for (const char* op : kNeverFolded)
    if (n->type_string() == op) return false;
  if (HasRefType(n->input_types()) || HasRefType(n->output_types())) return false;
  int data_inputs = 0;
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) continue;
    if (!evaluated[e->src->id()]) return false;  // a run-time value, or a loop's back edge
    ++data_inputs;
  }
  return data_inputs == n->num_inputs();
}

// Runs `n`'s kernel once on `cpu`. False, with `outputs` cleared, when the
// kernel cannot be built, is asynchronous, fails, throws or gives an output
// of the wrong dtype. `inputs` hold their own references, so no kernel
// forwards (overwrites) a buffer that another consumer still reads.
bool Evaluate(const Node* n, Device* cpu, std::vector<Tensor> inputs, std::vector<Tensor>* outputs) noexcept {
  try {
    std::unique_ptr<OpKernel> kernel;
    if (!CreateOpKernel(cpu, n->def(), &kernel).ok() || kernel->AsAsync() != nullptr) return false;
    outputs->assign(n->num_outputs(), Tensor());
    OpKernelContext::Params p;
    p.device = cpu;
    p.op_kernel = kernel.get();
    p.inputs = inputs.data();
    p.num_inputs = static_cast<int>(inputs.size());
    p.outputs = outputs->data();
    p.num_outputs = static_cast<int>(outputs->size());
    OpKernelContext ctx(&p);
    kernel->Compute(&ctx);
    bool ok = ctx.status().ok();
    for (int i = 0; ok && i < n->num_outputs(); ++i)
      ok = (*outputs)[i].IsInitialized() && (*outputs)[i].dtype() == n->output_type(i);
    if (!ok) outputs->clear();
    return ok;
  } catch (...) {
    outputs->clear();
    return false;
  }
}

// Whether a Const can hold `t` within the size limit.
bool FitsConst(const Tensor& t, const ConstantFoldingOptions& options) {
  return DataTypeIsSupported(t.dtype()) &&
         static_cast<int64_t>(TensorPayloadBytes(t)) <= options.max_constant_size_in_bytes;
}

// Appends `more` to the sorted id set `set`.
void Merge(std::vector<int>* set, const std::vector<int>& more) {
  std::vector<int> out;
  out.reserve(set->size() + more.size());
  std::set_union(set->begin(), set->end(), more.begin(), more.end(), std::back_inserter(out));
  set->swap(out);
}

// The Const replacing output `port` of the folded node `n`.
Status AddFoldedConst(Graph* g, const Node* n, int port, const Tensor& value, Node** out) {
  proto::NodeDef def;
  def.set_name(g->NewName(n->name() + "/_folded_" + std::to_string(port)));
  def.set_op("Const");
  def.set_device(n->requested_device());
  (*def.mutable_attr())["dtype"] = AttrType(value.dtype());
  TensorToProto(value, (*def.mutable_attr())["value"].mutable_tensor());
  AF_RETURN_IF_ERROR(g->AddNode(std::move(def), out).WithContext("folding node '" + n->name() + "'"));
  (*out)->set_assigned_device(n->assigned_device());
  return Status::OK();
}

}  // namespace

Status FoldConstants(Graph* g, Device* cpu, const ConstantFoldingOptions& options, bool* changed) {
  if (changed) *changed = false;
  if (!options.enabled) return Status::OK();
  if (!cpu || cpu->device_type() != DEVICE_CPU)
    return errors::InvalidArgument("constant folding runs kernels on a CPU device, got ",
                                   cpu ? "'" + cpu->name() + "'" : std::string("none"));
  std::vector<Node*> order;
  AF_RETURN_IF_ERROR(TopologicalOrder(*g, &order));
  const int ids = g->num_node_ids();

  // Compute every foldable node once, in topological order.
  std::vector<char> evaluated(ids, 0);
  std::vector<std::vector<Tensor>> values(ids);
  for (Node* n : order) {
    if (!MayFold(n, evaluated)) continue;
    std::vector<Tensor> inputs(n->num_inputs());
    for (const Edge* e : n->in_edges())
      if (!e->IsControlEdge()) inputs[e->dst_input] = values[e->src->id()][e->src_output];
    evaluated[n->id()] = Evaluate(n, cpu, std::move(inputs), &values[n->id()]);
  }

  // An output consumed at run time that no Const can hold keeps its node at
  // run time; the node's inputs are then consumed at run time in turn. Every
  // consumer comes before its inputs in reverse topological order: one pass.
  std::vector<char> folded(evaluated);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node* n = *it;
    if (!folded[n->id()] || IsConst(n)) continue;
    for (const Edge* e : n->out_edges()) {
      if (!e->IsControlEdge() && !folded[e->dst->id()] && !FitsConst(values[n->id()][e->src_output], options)) {
        folded[n->id()] = 0;
        break;
      }
    }
  }

  // What each computed node waited on outside the computed part (ids, sorted).
  std::vector<std::vector<int>> waits(ids);
  for (const Node* n : order) {
    if (!evaluated[n->id()]) continue;
    for (const Edge* e : n->in_edges()) {
      if (evaluated[e->src->id()]) Merge(&waits[n->id()], waits[e->src->id()]);
      else if (e->IsControlEdge()) Merge(&waits[n->id()], {e->src->id()});
    }
  }

  // Folded nodes go; so do Consts all of whose consumers go.
  std::vector<char> removed(ids, 0);
  std::vector<Node*> doomed;
  for (Node* n : order)
    if (folded[n->id()] && !IsConst(n)) removed[n->id()] = 1;
  for (Node* n : order) {
    if (!folded[n->id()] || !IsConst(n) || n->out_edges().empty()) continue;
    removed[n->id()] = std::all_of(n->out_edges().begin(), n->out_edges().end(),
                                   [&removed](const Edge* e) { return removed[e->dst->id()] != 0; });
  }

  // The Consts first, so that a failure leaves the graph as it was.
  struct Replacement {
    const Node* node;
    int port;
    Node* constant;
  };
  std::vector<Replacement> replacements;
  for (Node* n : order) {
    if (!removed[n->id()]) continue;
    doomed.push_back(n);
    std::vector<bool> consumed(n->num_outputs(), false);
    for (const Edge* e : n->out_edges())
      if (!e->IsControlEdge() && !removed[e->dst->id()]) consumed[e->src_output] = true;
    for (int port = 0; port < n->num_outputs(); ++port) {
      if (!consumed[port]) continue;
      Node* c;
      Status s = AddFoldedConst(g, n, port, values[n->id()][port], &c);
      if (!s.ok()) {
        std::vector<Node*> added;
        for (const auto& r : replacements) added.push_back(r.constant);
        g->RemoveNodes(added);
        return s;
      }
      replacements.push_back({n, port, c});
    }
  }
  for (const auto& r : replacements) {
    for (int w : waits[r.node->id()]) g->AddControlEdge(g->node(w), r.constant);
    const std::vector<Edge*> out = r.node->out_edges();
    for (const Edge* e : out) {
      if (!e->IsControlEdge() && e->src_output == r.port && !removed[e->dst->id()])
        g->ReplaceEdgeSource(e, r.constant, 0);
    }
  }
  for (Node* n : doomed) {
    for (const Edge* e : n->out_edges()) {
      if (!e->IsControlEdge() || removed[e->dst->id()]) continue;
      for (int w : waits[n->id()]) g->AddControlEdge(g->node(w), e->dst);
    }
  }
  g->RemoveNodes(doomed);
  if (changed) *changed = !doomed.empty();
  return Status::OK();
}

}  // namespace actorflow
