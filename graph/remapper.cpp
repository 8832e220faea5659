#include "actorflow/graph/remapper.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/devices/device_name.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

namespace {

bool OnCpu(const Node& n) {
  DeviceName name;
  return ParseDeviceName(n.assigned_device(), &name).ok() && name.has_type && name.type == "CPU";
}

bool FloatNode(const Node& n, const char* op) {
  return n.type_string() == op && n.num_outputs() == 1 && n.output_type(0) == DT_FLOAT && OnCpu(n);
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
  Node* matmul;
  Node* bias_add;
  Node* activation;  // nullptr: the chain ends at the BiasAdd
};

bool FindChain(Node* n, Chain* chain) {
  if (!FloatNode(*n, "MatMul")) return false;
  Node* bias_add = OnlyConsumer(*n);
  if (!bias_add || !FloatNode(*bias_add, "BiasAdd") || !bias_add->input_edge(1) || !n->input_edge(0) ||
      !n->input_edge(1))
    return false;
  Node* act = OnlyConsumer(*bias_add);
  if (act && !FloatNode(*act, "Relu") && !FloatNode(*act, "Relu6") && !FloatNode(*act, "LeakyRelu")) act = nullptr;
  *chain = Chain{n, bias_add, act};
  return true;
}

Status Fuse(Graph* g, const Chain& chain) {
  Node* last = chain.activation ? chain.activation : chain.bias_add;
  const std::vector<Node*> members =
      chain.activation ? std::vector<Node*>{chain.matmul, chain.bias_add, chain.activation}
                       : std::vector<Node*>{chain.matmul, chain.bias_add};
  proto::NodeDef def;
  def.set_name(last->name());
  def.set_op("_FusedMatMul");
  def.set_device(last->requested_device());
  auto& attr = *def.mutable_attr();
  attr["T"] = AttrType(DT_FLOAT);
  for (const char* t : {"transpose_a", "transpose_b"}) {
    bool v = false;
    AF_RETURN_IF_ERROR(GetNodeAttr(chain.matmul->def(), t, &v));
    attr[t] = AttrBool(v);
  }
  attr["num_args"] = AttrInt(1);
  std::vector<std::string> fused_ops{"BiasAdd"};
  if (chain.activation) fused_ops.push_back(chain.activation->type_string());
  attr["fused_ops"] = AttrStringList(fused_ops);
  float alpha = 0.2f;
  if (chain.activation && chain.activation->type_string() == "LeakyRelu")
    AF_RETURN_IF_ERROR(GetNodeAttr(chain.activation->def(), "alpha", &alpha));
  attr["leakyrelu_alpha"] = AttrFloat(alpha);

  // What the fused node takes over, recorded before the members go.
  struct Source {
    Node* node;
    int output;
  };
  const std::vector<Source> inputs{{chain.matmul->input_edge(0)->src, chain.matmul->input_edge(0)->src_output},
                                   {chain.matmul->input_edge(1)->src, chain.matmul->input_edge(1)->src_output},
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
  // predecessor's only consumer, and the first is a MatMul), so fusing one
  // leaves the others as they were found.
  for (const Chain& chain : chains) {
    const std::string what = "fusing " + chain.matmul->name() + " into _FusedMatMul";
    AF_RETURN_IF_ERROR(Fuse(g, chain).WithContext(what));
    if (num_fused) ++*num_fused;
  }
  return Status::OK();
}

}  // namespace actorflow
