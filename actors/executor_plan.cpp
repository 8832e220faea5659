#include "actors/executor_plan.hpp"

#include <algorithm>
#include <unordered_map>

#include "actors/kernel_segment.hpp"
#include "graph/graph.hpp"
#include "ops/sendrecv/rendezvous_access.hpp"

namespace actorflow {

Status ExecutorPlan::Build(const Graph& g, Device* device, std::unique_ptr<ExecutorPlan>* out,
                           KernelSegment* segment) {
  auto plan = std::make_unique<ExecutorPlan>();
  plan->device_ = device;
  const std::vector<Node*> nodes = g.nodes();
  std::unordered_map<const Node*, int32_t> index;
  index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = static_cast<int32_t>(i);

  plan->items_.resize(nodes.size());
  plan->kernels_.reserve(nodes.size());
  int32_t slot = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    std::shared_ptr<OpKernel> k;
    if (segment) {
      AF_RETURN_IF_ERROR(segment->Get(n->def(), n->is_stateful(), device, &k));
    } else {
      std::unique_ptr<OpKernel> own;
      AF_RETURN_IF_ERROR(CreateOpKernel(device, n->def(), &own));
      k = std::move(own);
    }
    NodeItem& item = plan->items_[i];
    item.kernel = k.get();
    item.num_inputs = n->num_inputs();
    item.num_outputs = n->num_outputs();
    item.input_start = slot;
    slot += item.num_inputs;
    item.pending = static_cast<int32_t>(n->in_edges().size());
    item.is_async = k->AsAsync() != nullptr;
    item.is_transfer = n->type_string() == "_Send" || n->type_string() == "_Recv";
    plan->has_transfers_ = plan->has_transfers_ || item.is_transfer;
    if (const auto* direct = dynamic_cast<const DirectRecvKernel*>(item.kernel)) {
      item.is_direct_recv = true;
      plan->recv_keys_.resize(plan->items_.size());
      plan->recv_keys_[i] = &direct->rendezvous_key();
    }
    item.deref_start = static_cast<int32_t>(plan->deref_inputs_.size());
    for (int in = 0; in < n->num_inputs(); ++in) {
      const Edge* e = n->input_edge(in);
      if (e && IsRefType(e->src->output_type(e->src_output)) && !IsRefType(n->input_type(in)))
        plan->deref_inputs_.push_back(in);
    }
    item.num_deref = static_cast<int32_t>(plan->deref_inputs_.size()) - item.deref_start;
    plan->max_outputs_ = std::max(plan->max_outputs_, item.num_outputs);
    if (n->type_string() == "_Arg") ++plan->num_args_;
    if (n->type_string() == "_Retval") ++plan->num_retvals_;
    plan->initial_pending_.push_back(item.pending);
    if (item.pending == 0) plan->roots_.push_back(static_cast<int32_t>(i));
    plan->kernels_.push_back(std::move(k));
  }
  plan->total_input_slots_ = slot;

  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeItem& item = plan->items_[i];
    std::vector<const Edge*> data, control;
    for (const Edge* e : nodes[i]->out_edges()) (e->IsControlEdge() ? control : data).push_back(e);
    std::stable_sort(data.begin(), data.end(), [](const Edge* a, const Edge* b) { return a->src_output < b->src_output; });
    item.out_start = static_cast<int32_t>(plan->out_edges_.size());
    item.num_out = static_cast<int32_t>(data.size());
    for (size_t j = 0; j < data.size(); ++j) {
      const Edge* e = data[j];
      const int32_t dst = index.at(e->dst);
      const bool last = j + 1 == data.size() || data[j + 1]->src_output != e->src_output;
      plan->out_edges_.push_back({dst, plan->items_[dst].input_start + e->dst_input, e->src_output, last});
    }
    item.ctrl_start = static_cast<int32_t>(plan->ctrl_edges_.size());
    item.num_ctrl = static_cast<int32_t>(control.size());
    for (const Edge* e : control) plan->ctrl_edges_.push_back(index.at(e->dst));
  }
  // The ready queue is LIFO: roots that are transfers (a _Recv to register
  // early) go last, so they run first.
  std::stable_partition(plan->roots_.begin(), plan->roots_.end(),
                        [&](int32_t r) { return !plan->items_[r].is_transfer; });
  *out = std::move(plan);
  return Status::OK();
}

}  // namespace actorflow
