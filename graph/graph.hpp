// Graph: nodes (ops with attrs) joined by data edges (src:port -> dst:input) and
// control edges (src -> ^dst). The Graph owns its nodes and edges; passes take
// it by reference and handles (Node*) stay valid until the node is removed.
//
// Nodes are created from NodeDefs; the op registry supplies defaults for
// omitted attrs and the dtypes of the node's inputs and outputs. Import and
// export use GraphDef (TensorFlow's wire form), see graph_def_io.hpp.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

struct OpRegistration;
class Node;

/// src_output / dst_input of a control edge.
constexpr int kControlSlot = -1;

struct Edge {
  Node* src;
  int src_output;  // kControlSlot for a control edge
  Node* dst;
  int dst_input;   // kControlSlot for a control edge
  bool IsControlEdge() const { return src_output == kControlSlot; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return def_.name(); }
  const std::string& type_string() const { return def_.op(); }
  const proto::NodeDef& def() const { return def_; }
  /// For passes that rewrite attrs or the requested device.
  proto::NodeDef* mutable_def() { return &def_; }
  const proto::OpDef& op_def() const;
  bool is_stateful() const;

  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const DataTypeVector& input_types() const { return input_types_; }
  const DataTypeVector& output_types() const { return output_types_; }

  const std::vector<Edge*>& in_edges() const { return in_edges_; }
  const std::vector<Edge*>& out_edges() const { return out_edges_; }
  /// The edge feeding data input i, or nullptr when not connected yet.
  const Edge* input_edge(int i) const;

  /// The device requested by the user ("" when none), and the one assigned.
  const std::string& requested_device() const { return def_.device(); }
  const std::string& assigned_device() const { return assigned_device_; }
  void set_assigned_device(std::string d) { assigned_device_ = std::move(d); }

 private:
  friend class Graph;
  int id_ = -1;
  proto::NodeDef def_;
  const OpRegistration* reg_ = nullptr;
  DataTypeVector input_types_, output_types_;
  std::vector<Edge*> in_edges_, out_edges_;
  std::string assigned_device_;
};

/// The GraphDef version (VersionDef.producer) of graphs made here: a new
/// Graph carries it, ToGraphDef writes it, and TensorFlow's semantics of that
/// version apply to them (ImportGraphDef keeps an imported graph's own and
/// applies TensorFlow's rules for old producers: graph/graph_def_io.hpp).
constexpr int kGraphDefVersion = 1087;
/// VersionDef{producer: kGraphDefVersion}.
proto::VersionDef DefaultVersions();

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Adds a node from `def` (its inputs are ignored: connect them with AddEdge).
  /// Fills attr defaults and validates attrs; errors name the node. With
  /// `num_data_inputs` >= 0 (what an imported NodeDef lists), the count and
  /// type-list attrs sizing the inputs must agree with it, checked before
  /// anything is sized by them (CheckDataInputCounts); every count is bounded
  /// by kMaxArgCount either way.
  Status AddNode(proto::NodeDef def, Node** out, int num_data_inputs = -1);
  const Edge* AddEdge(Node* src, int src_output, Node* dst, int dst_input);
  const Edge* AddControlEdge(Node* src, Node* dst);
  void RemoveEdge(const Edge* e);
  /// Makes `e` start at new_src:new_src_output instead (kControlSlot for a
  /// control edge), keeping its destination; returns the edge now joining them.
  /// A control edge from new_src to e's destination already there is kept and
  /// `e` removed, so control edges stay unique. nullptr, and nothing changed,
  /// when a data edge would become a control edge or the reverse. For passes
  /// that merge or replace nodes.
  const Edge* ReplaceEdgeSource(const Edge* e, Node* new_src, int new_src_output);
  void RemoveNode(Node* n);
  /// Removes several nodes in one pass over the edges (RemoveNode scans them all).
  void RemoveNodes(const std::vector<Node*>& nodes);

  Node* FindNode(const std::string& name) const;
  /// Live nodes in id order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return num_nodes_; }
  /// Upper bound on node ids (ids of removed nodes are not reused).
  int num_node_ids() const { return static_cast<int>(nodes_.size()); }
  Node* node(int id) const { return nodes_[id].get(); }

  /// A name not used by any node, made from `prefix` ("prefix", "prefix_1", ...).
  std::string NewName(const std::string& prefix) const;

  /// Writes the graph as a GraphDef; inputs listed data first (by input index), then controls.
  void ToGraphDef(proto::GraphDef* out) const;
  /// A deep copy.
  Status CopyFrom(const Graph& other);

  const proto::VersionDef& versions() const { return versions_; }
  void set_versions(const proto::VersionDef& v) { versions_ = v; }
  const proto::FunctionDefLibrary& library() const { return library_; }
  void set_library(const proto::FunctionDefLibrary& l) { library_ = l; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;  // indexed by id; null once removed
  std::vector<std::unique_ptr<Edge>> edges_;
  std::unordered_map<std::string, Node*> by_name_;
  int num_nodes_ = 0;
  proto::VersionDef versions_;
  proto::FunctionDefLibrary library_;
};

/// Parses "name", "name:port" or "^name" (control); port is -1 for control.
bool ParseTensorName(const std::string& s, std::string* node, int* port);
/// "name:port" for port > 0, "name" for port 0 — TensorFlow's input form.
std::string TensorInputName(const std::string& node, int port);

/// Checks that data edges join equal dtypes, every data input is connected once,
/// and the graph has no cycle except through NextIteration (loop back edges).
Status ValidateGraph(const Graph& g);

/// Nodes in an order where every node follows its inputs (back edges from
/// NextIteration ignored); InvalidArgument naming nodes on a cycle otherwise.
Status TopologicalOrder(const Graph& g, std::vector<Node*>* order);

}  // namespace actorflow
