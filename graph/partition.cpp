#include "actorflow/graph/partition.hpp"

#include <set>
#include <tuple>
#include <unordered_set>

#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/device_name.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

namespace {


class Partitioner {
 public:
  Partitioner(const Graph& g, const PartitionOptions& o) : g_(g), options_(o) {
    for (Node* n : g.nodes()) used_names_.insert(n->name());
  }

  Status Run(std::vector<GraphPartition>* out) {
    for (Node* n : g_.nodes()) {
      if (n->assigned_device().empty())
        return errors::InvalidArgument("node '", n->name(), "' (op '", n->type_string(), "') has no assigned device");
      Part(n->assigned_device());
    }
    if (HasControlFlow(g_)) {
      AF_RETURN_IF_ERROR(BuildControlFlowInfo(g_, &cf_));
      for (Node* n : g_.nodes()) {
        const ControlFlowInfo& info = cf_[static_cast<size_t>(n->id())];
        if (n->type_string() == "LoopCond") loop_conds_[info.frame_name] = n;
        if (IsEnterOp(n->type_string())) {
          std::string frame;
          AF_RETURN_IF_ERROR(GetNodeAttr(n->def(), "frame_name", &frame));
          frame_enters_.emplace(frame, n);
        }
      }
    }
    for (Node* n : g_.nodes()) AF_RETURN_IF_ERROR(Copy(n));
    // A frame's iterations start on the device of its loop's structure; every
    // other device holding nodes of the frame (or values in it) runs them
    // under a control loop of its own.
    for (Node* n : g_.nodes()) {
      if (cf_.empty()) break;
      for (const std::string& frame : {cf_[static_cast<size_t>(n->id())].frame_name, ValueFrame(n)}) {
        auto cond = loop_conds_.find(frame);
        if (frame.empty() || cond == loop_conds_.end() || cond->second->assigned_device() == n->assigned_device())
          continue;
        std::string merge;
        AF_RETURN_IF_ERROR(ControlLoop(frame, n->assigned_device(), &merge));
      }
    }
    // Recvs inside loop frames run in every iteration of their frame on their
    // device, driven by a control loop there (TensorFlow's AddControlFlow).
    for (size_t i = 0; i < framed_recvs_.size(); ++i) {  // grows while control loops add Recvs
      const FramedRecv r = framed_recvs_[i];
      std::string merge;
      AF_RETURN_IF_ERROR(ControlLoop(r.frame, r.device, &merge));
      pending_controls_[r.device][r.recv].push_back("^" + merge);
    }
    for (auto& [device, controls] : pending_controls_)
      for (auto& def : *Part(device).graph.mutable_node()) {
        auto it = controls.find(def.name());
        if (it == controls.end()) continue;
        for (const std::string& c : it->second) def.add_input(c);
      }
    out->clear();
    for (auto& [device, p] : parts_) out->push_back(std::move(p));
    return Status::OK();
  }

 private:
  GraphPartition& Part(const std::string& device) {
    auto [it, fresh] = parts_.try_emplace(device);
    if (fresh) {
      it->second.device = device;
      *it->second.graph.mutable_versions() = g_.versions();
      *it->second.graph.mutable_library() = g_.library();
    }
    return it->second;
  }

  std::string NewName(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_names_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_names_.insert(name);
    return name;
  }

  // Renumbers an _Arg or _Retval within its partition.
  static void Renumber(proto::NodeDef* def, std::vector<int>* indices) {
    auto& attr = (*def->mutable_attr())["index"];
    indices->push_back(static_cast<int>(attr.i()));
    attr.set_i(static_cast<int64_t>(indices->size()) - 1);
  }

  Status Copy(Node* n) {
    GraphPartition& part = Part(n->assigned_device());
    proto::NodeDef def = n->def();
    def.clear_input();
    def.set_device(n->assigned_device());
    if (n->type_string() == "_Arg") Renumber(&def, &part.arg_indices);
    if (n->type_string() == "_Retval") Renumber(&def, &part.retval_indices);
    std::vector<const Edge*> data(n->num_inputs(), nullptr), control;
    for (const Edge* e : n->in_edges()) (e->IsControlEdge() ? control.push_back(e) : void(data[e->dst_input] = e));
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Edge* e = data[i];
      if (!e) return errors::InvalidArgument("input ", i, " of node '", n->name(), "' is not connected");
      if (e->src->assigned_device() == n->assigned_device()) {
        def.add_input(TensorInputName(e->src->name(), e->src_output));
        continue;
      }
      // A value read (a ref edge into a value input) crosses as the value, read by the _Send.
      if (IsRefType(n->input_type(i)))
        return errors::InvalidArgument("node '", n->name(), "' on ", n->assigned_device(), " takes variable '",
                                       e->src->name(), "' on ", e->src->assigned_device(),
                                       " by reference: such nodes must be colocated with the variable");
      std::string recv;
      AF_RETURN_IF_ERROR(Transfer(e->src, e->src_output, n->assigned_device(), &recv));
      def.add_input(recv);
    }
    std::set<std::string> control_inputs;  // one ^input per source
    for (const Edge* e : control) {
      if (e->src->assigned_device() == n->assigned_device()) {
        control_inputs.insert("^" + e->src->name());
        continue;
      }
      std::string recv;
      AF_RETURN_IF_ERROR(Transfer(e->src, kControlSlot, n->assigned_device(), &recv));
      control_inputs.insert("^" + recv);
    }
    for (const auto& c : control_inputs) def.add_input(c);
    *part.graph.add_node() = std::move(def);
    return Status::OK();
  }

  // The _Recv on `dst_device` of src:port (kControlSlot: of src's completion),
  // with its _Send on src's device; made once per (tensor, destination).
  Status Transfer(Node* src, int port, const std::string& dst_device, std::string* recv_name) {
    const auto key = std::make_tuple(src->id(), port, dst_device);
    auto it = recvs_.find(key);
    if (it != recvs_.end()) {
      *recv_name = it->second;
      return Status::OK();
    }
    const bool control = port == kControlSlot;
    const DataType dtype = control ? DT_FLOAT : BaseType(src->output_type(port));
    const std::string& src_device = src->assigned_device();
    const std::string tensor_name =
        "edge_" + std::to_string(src->id()) + "_" + src->name() + (control ? ":control" : ":" + std::to_string(port));
    GraphPartition& from = Part(src_device);
    GraphPartition& to = Part(dst_device);

    std::string send_input = TensorInputName(src->name(), control ? 0 : port);
    if (control) {
      // A dummy scalar that exists once src has run carries the control edge.
      proto::NodeDef dummy;
      dummy.set_name(NewName(src->name() + "/_control_dummy"));
      dummy.set_op("Const");
      dummy.set_device(src_device);
      dummy.add_input("^" + src->name());
      (*dummy.mutable_attr())["dtype"] = AttrType(DT_FLOAT);
      (*dummy.mutable_attr())["value"] = AttrTensor(Tensor::Scalar<float>(0.f));
      send_input = dummy.name();
      *from.graph.add_node() = std::move(dummy);
    }
    auto common = [&](proto::NodeDef* d) {
      auto& attr = *d->mutable_attr();
      attr["tensor_name"] = AttrString(tensor_name);
      attr["send_device"] = AttrString(src_device);
      attr["send_device_incarnation"] = AttrInt(static_cast<int64_t>(
          options_.incarnation_of ? options_.incarnation_of(src_device) : options_.device_incarnation));
      attr["recv_device"] = AttrString(dst_device);
      attr["client_terminated"] = AttrBool(false);
    };
    proto::NodeDef send;
    send.set_name(NewName(src->name() + "/_send_to_" + ShortDevice(dst_device)));
    send.set_op("_Send");
    send.set_device(src_device);
    send.add_input(send_input);
    (*send.mutable_attr())["T"] = AttrType(dtype);
    common(&send);
    if (!control && dtype == DT_FLOAT && TaskOfDevice(src_device) != TaskOfDevice(dst_device)) {
      std::string asked;
      const bool per_edge = GetNodeAttr(src->def(), "_wire_compression", &asked).ok() && asked == "truncate16";
      if (options_.truncate_float32_on_wire || per_edge) (*send.mutable_attr())["_wire_truncate16"] = AttrBool(true);
    }
    *from.graph.add_node() = std::move(send);
    ++from.num_sends;

    proto::NodeDef recv;
    recv.set_name(NewName(src->name() + "/_recv_on_" + ShortDevice(dst_device)));
    recv.set_op("_Recv");
    recv.set_device(dst_device);
    (*recv.mutable_attr())["tensor_type"] = AttrType(dtype);
    common(&recv);
    *recv_name = recv.name();
    *to.graph.add_node() = std::move(recv);
    ++to.num_recvs;
    recvs_.emplace(key, *recv_name);
    const std::string frame = ValueFrame(src);
    if (!frame.empty()) framed_recvs_.push_back({*recv_name, dst_device, frame});
    return Status::OK();
  }

  // The frame of the values `n` outputs (root: ""): an Enter's are in the
  // frame it enters, an Exit's in the parent of the frame it leaves.
  std::string ValueFrame(const Node* n) const {
    if (cf_.empty()) return "";
    const ControlFlowInfo& info = cf_[static_cast<size_t>(n->id())];
    if (IsEnterOp(n->type_string())) {
      std::string frame;
      return GetNodeAttr(n->def(), "frame_name", &frame).ok() ? frame : info.frame_name;
    }
    if (IsExitOp(n->type_string()) && info.frame) return cf_[static_cast<size_t>(info.frame->id())].frame_name;
    return info.frame_name;
  }

  // A control loop for `frame` on `device`: Enter -> Merge -> Switch on the
  // frame's LoopCond (received from its device) -> NextIteration -> Merge. Its
  // Merge fires once in every iteration of the frame there; the frame's Recvs
  // on `device` wait for it, so each runs (live or dead, as its Send was) once
  // per iteration. Nested frames: the Enter's input is gated by the parent
  // frame's control loop on the same device. `merge`: its Merge's name.
  Status ControlLoop(const std::string& frame, const std::string& device, std::string* merge) {
    const auto key = std::make_pair(frame, device);
    auto it = control_loops_.find(key);
    if (it != control_loops_.end()) {
      *merge = it->second.merge;
      return Status::OK();
    }
    auto cond = loop_conds_.find(frame);
    auto enter = frame_enters_.find(frame);
    if (cond == loop_conds_.end() || enter == frame_enters_.end())
      return errors::InvalidArgument("frame '", frame, "' spans devices but has no LoopCond or Enter to drive it on ",
                                     device);
    const std::string parent = cf_[static_cast<size_t>(enter->second->id())].frame_name;
    int64_t parallel = 10;
    if (enter->second->def().attr().count("parallel_iterations"))
      AF_RETURN_IF_ERROR(GetNodeAttr(enter->second->def(), "parallel_iterations", &parallel));
    GraphPartition& part = Part(device);
    const std::string base = frame + "/_control_loop_" + ShortDevice(device);
    auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> inputs) {
      proto::NodeDef def;
      def.set_name(NewName(base + "/" + name));
      def.set_op(op);
      def.set_device(device);
      for (auto& in : inputs) def.add_input(std::move(in));
      return def;
    };
    ControlLoopNodes loop;
    // The Enter's input, in the parent frame: gated by the parent's control loop.
    proto::NodeDef dummy = node("dummy", "Const", {});
    (*dummy.mutable_attr())["dtype"] = AttrType(DT_FLOAT);
    (*dummy.mutable_attr())["value"] = AttrTensor(Tensor::Scalar<float>(0.f));
    if (!parent.empty()) {
      std::string parent_merge;
      AF_RETURN_IF_ERROR(ControlLoop(parent, device, &parent_merge));
      dummy.add_input("^" + control_loops_.at({parent, device}).pivot);
    }
    proto::NodeDef enter_def = node("Enter", "Enter", {dummy.name()});
    (*enter_def.mutable_attr())["T"] = AttrType(DT_FLOAT);
    (*enter_def.mutable_attr())["frame_name"] = AttrString(frame);
    (*enter_def.mutable_attr())["is_constant"] = AttrBool(false);
    (*enter_def.mutable_attr())["parallel_iterations"] = AttrInt(parallel);
    const std::string merge_name = NewName(base + "/Merge");
    const std::string next_name = NewName(base + "/NextIteration");
    proto::NodeDef merge_def;
    merge_def.set_name(merge_name);
    merge_def.set_op("Merge");
    merge_def.set_device(device);
    merge_def.add_input(enter_def.name());
    merge_def.add_input(next_name);
    (*merge_def.mutable_attr())["T"] = AttrType(DT_FLOAT);
    (*merge_def.mutable_attr())["N"] = AttrInt(2);
    loop.merge = merge_name;
    control_loops_[key] = loop;  // before the LoopCond's transfer, which may ask for it
    std::string pred = cond->second->name();
    if (cond->second->assigned_device() != device) AF_RETURN_IF_ERROR(Transfer(cond->second, 0, device, &pred));
    proto::NodeDef switch_def = node("Switch", "Switch", {merge_name, pred});
    (*switch_def.mutable_attr())["T"] = AttrType(DT_FLOAT);
    proto::NodeDef pivot = node("pivot", "Identity", {switch_def.name() + ":1"});
    (*pivot.mutable_attr())["T"] = AttrType(DT_FLOAT);
    proto::NodeDef next_def;
    next_def.set_name(next_name);
    next_def.set_op("NextIteration");
    next_def.set_device(device);
    next_def.add_input(pivot.name());
    (*next_def.mutable_attr())["T"] = AttrType(DT_FLOAT);
    control_loops_[key].pivot = pivot.name();
    for (proto::NodeDef* d : {&dummy, &enter_def, &merge_def, &switch_def, &pivot, &next_def})
      *part.graph.add_node() = std::move(*d);
    *merge = merge_name;
    return Status::OK();
  }

  // "CPU_1" from ".../device:CPU:1", for readable node names.
  static std::string ShortDevice(const std::string& device) {
    auto pos = device.rfind("device:");
    std::string s = pos == std::string::npos ? device : device.substr(pos + 7);
    for (char& c : s)
      if (c == ':' || c == '/') c = '_';
    return s;
  }

  struct FramedRecv {
    std::string recv, device, frame;
  };
  struct ControlLoopNodes {
    std::string merge, pivot;
  };

  const Graph& g_;
  const PartitionOptions& options_;
  std::vector<ControlFlowInfo> cf_;                     // empty without control flow
  std::map<std::string, Node*> loop_conds_;            // by frame
  std::multimap<std::string, Node*> frame_enters_;     // by the frame they enter
  std::vector<FramedRecv> framed_recvs_;
  std::map<std::pair<std::string, std::string>, ControlLoopNodes> control_loops_;  // by (frame, device)
  std::map<std::string, std::map<std::string, std::vector<std::string>>> pending_controls_;  // device -> recv -> ^inputs
  std::map<std::string, GraphPartition> parts_;  // by device name: a stable order
  std::map<std::tuple<int, int, std::string>, std::string> recvs_;
  std::unordered_set<std::string> used_names_;
};

}  // namespace

namespace {

// Whether every data consumer of node `name` in `p` reads it as the labels
// of a SparseSoftmaxCrossEntropyWithLogits (whose GPU kernel reads them in
// device memory too: OpKernel::ReadsInDeviceMemory, step_capture.hpp).
bool OnlyClassLabels(const GraphPartition& p, const std::string& name) {
  int readers = 0;
  for (const auto& n : p.graph.node())
    for (int i = 0; i < n.input_size(); ++i) {
      const std::string& in = n.input(i);
      if (in != name && in.compare(0, name.size() + 1, name + ":") != 0) continue;  // ^name: a control edge
      if (n.op() != "SparseSoftmaxCrossEntropyWithLogits" || i != 1) return false;
      ++readers;
    }
  return readers > 0;
}

// A GPU partition the master did not mark `_no_capture` may be captured and
// replayed (actors/device/step_capture.hpp): a replay waits for all its
// _Recvs before anything else runs, so none of them may be gated behind
// another node of the partition (recv scheduling's control edges).
// AnalyzeCapture's rule (actors/device/step_capture.cpp) as far as the
// partition's GraphDef shows it: change both together.
bool MayBeCaptured(const GraphPartition& p) {
  if (p.device.find("/device:GPU:") == std::string::npos) return false;
  for (const auto& n : p.graph.node()) {
    if (n.attr().count("_no_capture")) return false;
    const std::string& op = n.op();
    if (op == "Switch" || op == "Merge" || op == "Enter" || op == "Exit" || op == "NextIteration" ||
        op == "RefSwitch" || op == "RefMerge" || op == "RefEnter" || op == "RefExit" || op == "RefNextIteration" ||
        op == "ControlTrigger" || op == "Assign")
      return false;
    // A stateful op other than a variable, a transfer or an update on the
    // device (a random op, a queue): its effect is not only work on the GPU.
    if (op != "_Recv" && op != "_Send" && op != "VariableV2" && op != "Variable" && op.rfind("Apply", 0) != 0 &&
        op.rfind("_FusedApply", 0) != 0 && op != "AssignAdd" && op != "AssignSub") {
      const OpRegistration* reg = OpRegistry::Global()->Find(op);
      if (reg == nullptr || reg->op_def.is_stateful()) return false;
    }
    if (op == "_Recv") {  // only float32 feeds and class labels are captured
      auto t = n.attr().find("tensor_type");
      if (t == n.attr().end()) return false;
      const auto dt = t->second.type();
      if (dt != proto::DT_FLOAT && !((dt == proto::DT_INT32 || dt == proto::DT_INT64) && OnlyClassLabels(p, n.name())))
        return false;
    }
  }
  return true;
}

}  // namespace

Status PartitionGraph(const Graph& g, const PartitionOptions& options, std::vector<GraphPartition>* out) {
  AF_RETURN_IF_ERROR(Partitioner(g, options).Run(out));
  if (options.schedule_recvs_late)
    for (GraphPartition& p : *out)
      if (!MayBeCaptured(p)) AF_RETURN_IF_ERROR(ScheduleRecvsLate(&p.graph, options.recv_scheduling));
  return Status::OK();
}

}  // namespace actorflow
