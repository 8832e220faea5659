#include "actorflow/graph/remapper.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/devices/device_name.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

namespace {

bool OnCpu(const Node& n) {
  DeviceName name;
  return ParseDeviceName(n.assigned_device(), &name).ok() && name.has_type && name.type == "CPU";
}

// A node of `op` with one output of `dtype`, on a CPU.
bool NodeOf(const Node& n, const char* op, DataType dtype) {
  return n.type_string() == op && n.num_outputs() == 1 && n.output_type(0) == dtype && OnCpu(n);
}

std::string StringAttr(const Node& n, const char* name, const char* absent) {
  std::string v = absent;
  GetNodeAttr(n.def(), name, &v);
  return v;
}

// The one consumer of `n`'s only output when it is a data edge into input 0
// of a node on the same device; nullptr otherwise (more consumers, a control
// consumer, another device).
Node* OnlyConsumer(const Node& n) {
  if (n.out_edges().size() != 1) return nullptr;
  const Edge* e = n.out_edges()[0];
  if (e->IsControlEdge() || e->dst_input != 0 || e->dst->assigned_device() != n.assigned_device()) return nullptr;
  return e->dst;
}

struct Chain {
  Node* head;  // the MatMul or Conv2D
  Node* bias_add;
  Node* activation;  // nullptr: the chain ends at the BiasAdd
};

bool FindChain(Node* n, Chain* chain) {
  // MatMul: float32 (TensorFlow's _FusedMatMul on CPUs); Conv2D: float32 or
  // float64, NHWC, its bias on the last dimension.
  const bool conv = n->type_string() == "Conv2D";
  if (!NodeOf(*n, "MatMul", DT_FLOAT) && !(conv && (NodeOf(*n, "Conv2D", DT_FLOAT) || NodeOf(*n, "Conv2D", DT_DOUBLE))))
    return false;
  const DataType dtype = n->output_type(0);
  if (conv && StringAttr(*n, "data_format", "NHWC") != "NHWC") return false;
  Node* bias_add = OnlyConsumer(*n);
  if (!bias_add || !NodeOf(*bias_add, "BiasAdd", dtype) || !bias_add->input_edge(1) || !n->input_edge(0) ||
      !n->input_edge(1))
    return false;
  if (conv && StringAttr(*bias_add, "data_format", "NHWC") != "NHWC") return false;  // (a matrix's last dimension is its second)
  Node* act = OnlyConsumer(*bias_add);
  if (act && !NodeOf(*act, "Relu", dtype) && !NodeOf(*act, "Relu6", dtype) && !NodeOf(*act, "LeakyRelu", dtype))
    act = nullptr;
  *chain = Chain{n, bias_add, act};
  return true;
}

// Fuses `chain`; `*done` says whether it did.
Status Fuse(Graph* g, const Chain& chain, bool* done) {
  *done = false;
  Node* last = chain.activation ? chain.activation : chain.bias_add;
  const std::vector<Node*> members =
      chain.activation ? std::vector<Node*>{chain.head, chain.bias_add, chain.activation}
                       : std::vector<Node*>{chain.head, chain.bias_add};
  proto::NodeDef def;
  def.set_name(last->name());
  def.set_op(chain.head->type_string() == "MatMul" ? "_FusedMatMul" : "_FusedConv2D");
  def.set_device(last->requested_device());
  auto& attr = *def.mutable_attr();
  // The head's op attrs (T, transposes; strides, padding, data_format...);
  // the internal ones ("_wire_compression", read where the output is sent)
  // from the last node, whose outputs the fused node sends; no colocation.
  for (const auto& [name, value] : chain.head->def().attr())
    if (name[0] != '_') attr[name] = value;
  for (const auto& [name, value] : last->def().attr())
    if (name[0] == '_' && name != "_class") attr[name] = value;
  attr["num_args"] = AttrInt(1);
  std::vector<std::string> fused_ops{"BiasAdd"};
  if (chain.activation) fused_ops.push_back(chain.activation->type_string());
  attr["fused_ops"] = AttrStringList(fused_ops);
  float alpha = 0.2f;
  if (chain.activation && chain.activation->type_string() == "LeakyRelu")
    AF_RETURN_IF_ERROR(GetNodeAttr(chain.activation->def(), "alpha", &alpha));
  attr["leakyrelu_alpha"] = AttrFloat(alpha);
  // Checked before anything is removed: a fused node that would not be
  // valid (an attr out of the fused op's range) leaves its chain as it is.
  const OpRegistration* reg = OpRegistry::Global()->Find(def.op());
  proto::NodeDef checked = def;
  if (reg) AddDefaultsToNodeDef(reg->op_def, &checked);
  if (!reg || !ValidateNodeAttrs(checked, reg->op_def).ok()) return Status::OK();

  // What the fused node takes over, recorded before the members go.
  struct Source {
    Node* node;
    int output;
  };
  const std::vector<Source> inputs{{chain.head->input_edge(0)->src, chain.head->input_edge(0)->src_output},
                                   {chain.head->input_edge(1)->src, chain.head->input_edge(1)->src_output},
                                   {chain.bias_add->input_edge(1)->src, chain.bias_add->input_edge(1)->src_output}};
  std::vector<Node*> control_inputs;
  for (const Node* m : members)
    for (const Edge* e : m->in_edges())
      if (e->IsControlEdge() && std::find(control_inputs.begin(), control_inputs.end(), e->src) == control_inputs.end())
        control_inputs.push_back(e->src);
  struct Consumer {
    Node* node;
    int input;  // kControlSlot for a control consumer
  };
  std::vector<Consumer> consumers;
  for (const Edge* e : last->out_edges()) consumers.push_back({e->dst, e->IsControlEdge() ? kControlSlot : e->dst_input});
  const std::string device = last->assigned_device();

  g->RemoveNodes(members);
  Node* fused = nullptr;
  AF_RETURN_IF_ERROR(g->AddNode(std::move(def), &fused));
  fused->set_assigned_device(device);
  for (int i = 0; i < 3; ++i) g->AddEdge(inputs[i].node, inputs[i].output, fused, i);
  for (Node* c : control_inputs) g->AddControlEdge(c, fused);
  for (const Consumer& c : consumers) {
    if (c.input == kControlSlot) g->AddControlEdge(fused, c.node);
    else g->AddEdge(fused, 0, c.node, c.input);
  }
  *done = true;
  return Status::OK();
}

}  // namespace

Status FuseMatMulChains(Graph* g, int* num_fused) {
  if (num_fused) *num_fused = 0;
  std::vector<Chain> chains;
  for (Node* n : g->nodes()) {
    Chain chain;
    if (FindChain(n, &chain)) chains.push_back(chain);
  }
  // Chains never share a node (each member but the first is its
  // predecessor's only consumer, and the first is a MatMul or Conv2D), so
  // fusing one leaves the others as they were found.
  for (const Chain& chain : chains) {
    const std::string what = "fusing " + chain.head->name() + " and its BiasAdd";
    bool done = false;
    AF_RETURN_IF_ERROR(Fuse(g, chain, &done).WithContext(what));
    if (num_fused && done) ++*num_fused;
  }
  return Status::OK();
}

}  // namespace actorflow
