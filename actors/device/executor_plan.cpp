#include "actorflow/actors/device/executor_plan.hpp"

#include <algorithm>
#include <unordered_map>

#include "actorflow/actors/device/kernel_segment.hpp"
#include "actorflow/actors/device/step_state.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"

namespace actorflow {

ExecutorPlan::ExecutorPlan() = default;
ExecutorPlan::~ExecutorPlan() = default;

Status ExecutorPlan::Build(const Graph& g, Device* device, std::unique_ptr<ExecutorPlan>* out,
                           KernelSegment* segment) {
  auto plan = std::make_unique<ExecutorPlan>();
  plan->device_ = device;
  const std::vector<Node*> nodes = g.nodes();
  std::unordered_map<const Node*, int32_t> index;
  index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = static_cast<int32_t>(i);

  std::vector<ControlFlowInfo> cf;
  AF_RETURN_IF_ERROR(BuildControlFlowInfo(g, &cf));
  std::unordered_map<std::string, int32_t> frame_index{{"", 0}};
  plan->frames_.resize(1);

  plan->items_.resize(nodes.size());
  plan->kernels_.reserve(nodes.size());
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
    item.is_stateful = n->is_stateful();
    if (HasNodeAttr(n->def(), "_no_capture")) {
      auto it = n->def().attr().find("_no_capture");
      item.no_capture = it->second.s().empty() ? "capture is off for it" : it->second.s();
    }
    item.num_inputs = n->num_inputs();
    item.num_outputs = n->num_outputs();
    // Its frame, and its place there.
    const std::string& frame_name = cf[static_cast<size_t>(n->id())].frame_name;
    auto f = frame_index.find(frame_name);
    if (f == frame_index.end()) {
      f = frame_index.emplace(frame_name, static_cast<int32_t>(plan->frames_.size())).first;
      plan->frames_.emplace_back();
      plan->frames_.back().name = frame_name;
    }
    FrameInfo& frame = plan->frames_[static_cast<size_t>(f->second)];
    item.frame = f->second;
    item.local = frame.num_nodes++;
    item.input_start = frame.total_input_slots;
    frame.total_input_slots += item.num_inputs;
    const std::string& op = n->type_string();
    if (IsSwitchOp(op)) item.kind = NodeKind::kSwitch;
    else if (IsMergeOp(op)) item.kind = NodeKind::kMerge;
    else if (IsEnterOp(op)) item.kind = NodeKind::kEnter;
    else if (IsExitOp(op)) item.kind = NodeKind::kExit;
    else if (IsNextIterationOp(op)) item.kind = NodeKind::kNextIteration;
    else if (op == "ControlTrigger") item.kind = NodeKind::kControlTrigger;
    plan->has_control_flow_ = plan->has_control_flow_ || item.kind != NodeKind::kNormal;
    item.pending = static_cast<int32_t>(n->in_edges().size());
    if (item.kind == NodeKind::kMerge) {
      // Bit 0: no live data input has come yet; above it, the control inputs
      // still to come (TensorFlow's encoding).
      int32_t control = 0;
      for (const Edge* e : n->in_edges()) control += e->IsControlEdge() ? 1 : 0;
      item.pending = 1 + (control << 1);
    }
    if (item.kind == NodeKind::kEnter) {
      if (n->def().attr().count("is_constant")) AF_RETURN_IF_ERROR(GetNodeAttr(n->def(), "is_constant", &item.is_constant_enter));
      int64_t parallel = 10;
      if (n->def().attr().count("parallel_iterations"))
        AF_RETURN_IF_ERROR(GetNodeAttr(n->def(), "parallel_iterations", &parallel));
      if (parallel < 1)
        return errors::InvalidArgument("node '", n->name(), "' (op '", op, "'): parallel_iterations must be at least 1, got ",
                                       parallel);
      item.parallel_iterations = static_cast<int32_t>(std::min<int64_t>(parallel, 1 << 20));
      item.enter_frame = -1;  // resolved below, once every frame has its index
    }
    item.is_async = k->AsAsync() != nullptr;
    item.is_transfer = op == "_Send" || op == "_Recv";
    plan->has_transfers_ = plan->has_transfers_ || item.is_transfer;
    if (const auto* direct = dynamic_cast<const DirectRecvKernel*>(item.kernel)) {
      item.is_direct_recv = true;
      plan->direct_recvs_.resize(plan->items_.size());
      plan->direct_recvs_[i] = direct;
    }
    item.deref_start = static_cast<int32_t>(plan->deref_inputs_.size());
    for (int in = 0; in < n->num_inputs(); ++in) {
      const Edge* e = n->input_edge(in);
      if (e && IsRefType(e->src->output_type(e->src_output)) && !IsRefType(n->input_type(in)))
        plan->deref_inputs_.push_back(in);
    }
    item.num_deref = static_cast<int32_t>(plan->deref_inputs_.size()) - item.deref_start;
    item.deref_local = frame.num_deref;
    frame.num_deref += item.num_deref;
    plan->max_outputs_ = std::max(plan->max_outputs_, item.num_outputs);
    if (op == "_Arg") ++plan->num_args_;
    if (op == "_Retval") ++plan->num_retvals_;
    item.is_retval = op == "_Retval";
    frame.initial_pending.push_back(item.pending);
    if (item.pending == 0) plan->roots_.push_back(static_cast<int32_t>(i));
    plan->kernels_.push_back(std::move(k));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeItem& item = plan->items_[i];
    if (item.kind != NodeKind::kEnter) continue;
    std::string child;
    AF_RETURN_IF_ERROR(GetNodeAttr(nodes[i]->def(), "frame_name", &child));
    auto f = frame_index.find(child);
    if (f == frame_index.end()) {  // an Enter nothing consumes: its frame has no nodes
      f = frame_index.emplace(child, static_cast<int32_t>(plan->frames_.size())).first;
      plan->frames_.emplace_back();
      plan->frames_.back().name = child;
    }
    item.enter_frame = f->second;
    ++plan->frames_[static_cast<size_t>(f->second)].num_enters;
  }

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
      const NodeItem& d = plan->items_[static_cast<size_t>(dst)];
      const bool last = j + 1 == data.size() || data[j + 1]->src_output != e->src_output;
      plan->out_edges_.push_back({dst, d.local, d.input_start + e->dst_input, e->src_output, last});
    }
    item.ctrl_start = static_cast<int32_t>(plan->ctrl_edges_.size());
    item.num_ctrl = static_cast<int32_t>(control.size());
    for (const Edge* e : control) {
      const int32_t dst = index.at(e->dst);
      plan->ctrl_edges_.push_back({dst, plan->items_[static_cast<size_t>(dst)].local});
    }
  }
  // The ready queue is LIFO: roots that are transfers (a _Recv to register
  // early) go last, so they run first.
  std::stable_partition(plan->roots_.begin(), plan->roots_.end(),
                        [&](int32_t r) { return !plan->items_[r].is_transfer; });
  *out = std::move(plan);
  return Status::OK();
}

}  // namespace actorflow
