#include "graph/partition.hpp"

#include <set>
#include <tuple>
#include <unordered_set>

#include "core/tensor.hpp"
#include "ops/attrs.hpp"

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
    for (Node* n : g_.nodes()) AF_RETURN_IF_ERROR(Copy(n));
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
      attr["send_device_incarnation"] = AttrInt(static_cast<int64_t>(options_.device_incarnation));
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

  const Graph& g_;
  const PartitionOptions& options_;
  std::map<std::string, GraphPartition> parts_;  // by device name: a stable order
  std::map<std::tuple<int, int, std::string>, std::string> recvs_;
  std::unordered_set<std::string> used_names_;
};

}  // namespace

Status PartitionGraph(const Graph& g, const PartitionOptions& options, std::vector<GraphPartition>* out) {
  AF_RETURN_IF_ERROR(Partitioner(g, options).Run(out));
  if (options.schedule_recvs_late)
    for (GraphPartition& p : *out) AF_RETURN_IF_ERROR(ScheduleRecvsLate(&p.graph, options.recv_scheduling));
  return Status::OK();
}

}  // namespace actorflow
