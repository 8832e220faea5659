#include "tools/graph_dot.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/static_shapes.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

using ShapeTable = StaticShapes;

// One graph being written: its nodes' DOT ids are `prefix` + "n" + node id.
struct DotGraph {
  const Graph* graph;
  std::string prefix;
  ShapeTable shapes;

  std::string Id(const Node* n) const { return prefix + "n" + std::to_string(n->id()); }
};

bool IsSendOrRecv(const Node* n) { return n->type_string() == "_Send" || n->type_string() == "_Recv"; }

// `indent` + `id [label="name\nop"];`, with "\n@device" when `requested` and
// the node asks for one (placed graphs show the device as their cluster).
void WriteNode(const DotGraph& dg, const Node* n, bool requested, const std::string& indent, std::string* out) {
  std::string label = DotEscape(n->name()) + "\\n" + DotEscape(n->type_string());
  if (requested && !n->requested_device().empty()) label += "\\n@" + DotEscape(n->requested_device());
  *out += indent + dg.Id(n) + " [label=\"" + label + "\"";
  if (IsSendOrRecv(n)) *out += ", style=filled, fillcolor=lightgrey";
  *out += "];\n";
}

// "float [?,2]", or "float" when the shape is unknown.
std::string EdgeLabel(const DotGraph& dg, const Edge* e) {
  std::string label = DataTypeString(e->src->output_type(e->src_output));
  const auto& outs = dg.shapes[e->src->id()];
  if (e->src_output < static_cast<int>(outs.size()) && !outs[e->src_output].unknown_rank())
    label += " " + outs[e->src_output].DebugString();
  return DotEscape(label);
}

void WriteEdges(const DotGraph& dg, std::string* out) {
  for (const Node* n : dg.graph->nodes()) {
    for (const Edge* e : n->out_edges()) {
      *out += "  " + dg.Id(e->src) + " -> " + dg.Id(e->dst);
      *out += e->IsControlEdge() ? " [style=dashed];\n" : " [label=\"" + EdgeLabel(dg, e) + "\"];\n";
    }
  }
}

// `subgraph cluster_K { label="..."; nodes }`
void WriteCluster(int index, const std::string& label, const DotGraph& dg, const std::vector<const Node*>& nodes,
                  std::string* out) {
  *out += "  subgraph cluster_" + std::to_string(index) + " {\n";
  *out += "    label=\"" + DotEscape(label) + "\";\n";
  for (const Node* n : nodes) WriteNode(dg, n, /*requested=*/false, "    ", out);
  *out += "  }\n";
}

std::string Header() {
  return "digraph actorflow {\n"
         "  node [shape=box, fontname=\"Helvetica\"];\n"
         "  edge [fontname=\"Helvetica\", fontsize=10];\n";
}

// The attr `name` of a _Send/_Recv, "" when missing.
std::string StringAttr(const Node* n, const std::string& name) {
  std::string v;
  return GetNodeAttr(n->def(), name, &v).ok() ? v : std::string();
}

// What pairs a _Send with its _Recv: the rendezvous key's parts.
std::string RendezvousKey(const Node* n) {
  return StringAttr(n, "send_device") + '\x1f' + StringAttr(n, "recv_device") + '\x1f' +
         StringAttr(n, "tensor_name");
}

}  // namespace

std::string DotEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  return out;
}

std::string GraphToDot(const Graph& g, DotGrouping grouping) {
  const DotGraph dg{&g, "", InferStaticShapes(g)};
  std::string out = Header();
  std::map<std::string, std::vector<const Node*>> by_device;  // ordered by device name
  for (const Node* n : g.nodes()) {
    const bool clustered = grouping == DotGrouping::kByDevice && !n->assigned_device().empty();
    if (clustered) by_device[n->assigned_device()].push_back(n);
    else WriteNode(dg, n, grouping == DotGrouping::kNone, "  ", &out);
  }
  int index = 0;
  for (const auto& [device, nodes] : by_device) WriteCluster(index++, device, dg, nodes, &out);
  WriteEdges(dg, &out);
  return out + "}\n";
}

Status PartitionsToDot(const std::vector<GraphPartition>& partitions, std::string* out) {
  std::vector<Graph> graphs(partitions.size());
  std::vector<DotGraph> dgs;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const Status s = ImportGraphDef(partitions[i].graph, &graphs[i]);
    if (!s.ok())
      return errors::InvalidArgument("the partition for device '", partitions[i].device,
                                     "' does not import: ", s.message());
    dgs.push_back(DotGraph{&graphs[i], "p" + std::to_string(i) + "_", InferStaticShapes(graphs[i])});
  }
  std::string text = Header();
  std::map<std::string, std::string> recvs;  // rendezvous key -> the _Recv's DOT id
  for (size_t i = 0; i < dgs.size(); ++i) {
    std::vector<const Node*> nodes;
    for (const Node* n : graphs[i].nodes()) {
      nodes.push_back(n);
      if (n->type_string() == "_Recv") recvs[RendezvousKey(n)] = dgs[i].Id(n);
    }
    WriteCluster(static_cast<int>(i), partitions[i].device, dgs[i], nodes, &text);
  }
  for (const DotGraph& dg : dgs) WriteEdges(dg, &text);
  for (const DotGraph& dg : dgs) {
    for (const Node* n : dg.graph->nodes()) {
      if (n->type_string() != "_Send") continue;
      auto it = recvs.find(RendezvousKey(n));
      if (it != recvs.end()) text += "  " + dg.Id(n) + " -> " + it->second + " [style=dotted];\n";
    }
  }
  *out = text + "}\n";
  return Status::OK();
}

}  // namespace actorflow
