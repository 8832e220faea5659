#include "actorflow/graph/graph.hpp"

#include "actorflow/graph/control_flow_info.hpp"

#include <algorithm>
#include <deque>

#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

const proto::OpDef& Node::op_def() const { return reg_->op_def; }
bool Node::is_stateful() const { return reg_->op_def.is_stateful(); }

const Edge* Node::input_edge(int i) const {
  for (const Edge* e : in_edges_)
    if (e->dst_input == i) return e;
  return nullptr;
}

proto::VersionDef DefaultVersions() {
  proto::VersionDef v;
  v.set_producer(kGraphDefVersion);
  return v;
}

Graph::Graph() : versions_(DefaultVersions()) {}
Graph::~Graph() = default;

Status Graph::AddNode(proto::NodeDef def, Node** out, int num_data_inputs) {
  if (def.name().empty()) return errors::InvalidArgument("a node of op '", def.op(), "' has an empty name");
  if (by_name_.count(def.name())) return errors::InvalidArgument("duplicate node name '", def.name(), "'");
  const OpRegistration* reg = OpRegistry::Global()->Find(def.op());
  if (!reg) return errors::NotFound("node '", def.name(), "': op type not registered '", def.op(), "'");
  AddDefaultsToNodeDef(reg->op_def, &def);
  if (num_data_inputs >= 0) AF_RETURN_IF_ERROR(CheckDataInputCounts(def, reg->op_def, num_data_inputs));
  AF_RETURN_IF_ERROR(ValidateNodeAttrs(def, reg->op_def));
  auto node = std::make_unique<Node>();
  AF_RETURN_IF_ERROR(InOutTypesForNode(def, reg->op_def, &node->input_types_, &node->output_types_)
                         .WithContext("in node '" + def.name() + "'"));
  for (auto t : node->input_types_)
    if (!DataTypeIsSupported(t) && BaseType(t) != DT_RESOURCE)
      return errors::InvalidArgument("node '", def.name(), "' (op '", def.op(), "') uses unsupported dtype ",
                                     DataTypeString(t));
  def.clear_input();
  node->id_ = static_cast<int>(nodes_.size());
  node->def_ = std::move(def);
  node->reg_ = reg;
  *out = node.get();
  by_name_[node->name()] = node.get();
  nodes_.push_back(std::move(node));
  ++num_nodes_;
  return Status::OK();
}

const Edge* Graph::AddEdge(Node* src, int src_output, Node* dst, int dst_input) {
  edges_.push_back(std::make_unique<Edge>(Edge{src, src_output, dst, dst_input}));
  Edge* e = edges_.back().get();
  src->out_edges_.push_back(e);
  dst->in_edges_.push_back(e);
  return e;
}

const Edge* Graph::AddControlEdge(Node* src, Node* dst) {
  for (const Edge* e : dst->in_edges_)
    if (e->IsControlEdge() && e->src == src) return e;  // already present
  return AddEdge(src, kControlSlot, dst, kControlSlot);
}

void Graph::RemoveEdge(const Edge* e) {
  auto erase = [e](std::vector<Edge*>& v) { v.erase(std::remove(v.begin(), v.end(), e), v.end()); };
  erase(e->src->out_edges_);
  erase(e->dst->in_edges_);
  edges_.erase(std::remove_if(edges_.begin(), edges_.end(), [e](const auto& p) { return p.get() == e; }), edges_.end());
}

const Edge* Graph::ReplaceEdgeSource(const Edge* e, Node* new_src, int new_src_output) {
  if (e->IsControlEdge() != (new_src_output == kControlSlot)) return nullptr;  // data stays data, control control
  if (e->IsControlEdge()) {
    for (const Edge* other : e->dst->in_edges_) {
      if (other != e && other->IsControlEdge() && other->src == new_src) {
        RemoveEdge(e);
        return other;
      }
    }
  }
  Edge* edge = const_cast<Edge*>(e);  // the graph owns its edges; handles are const for users
  auto& old_out = edge->src->out_edges_;
  old_out.erase(std::remove(old_out.begin(), old_out.end(), edge), old_out.end());
  edge->src = new_src;
  edge->src_output = new_src_output;
  new_src->out_edges_.push_back(edge);
  return edge;
}

void Graph::RemoveNodes(const std::vector<Node*>& nodes) {
  std::vector<bool> doomed(nodes_.size(), false);
  for (Node* n : nodes) doomed[n->id()] = true;
  auto is_doomed = [&doomed](const Edge* e) { return doomed[e->src->id()] || doomed[e->dst->id()]; };
  for (Node* n : nodes) {
    for (Edge* e : n->in_edges_) {
      auto& v = e->src->out_edges_;
      if (!doomed[e->src->id()]) v.erase(std::remove(v.begin(), v.end(), e), v.end());
    }
    for (Edge* e : n->out_edges_) {
      auto& v = e->dst->in_edges_;
      if (!doomed[e->dst->id()]) v.erase(std::remove(v.begin(), v.end(), e), v.end());
    }
  }
  edges_.erase(std::remove_if(edges_.begin(), edges_.end(), [&](const auto& p) { return is_doomed(p.get()); }),
               edges_.end());
  for (size_t id = 0; id < doomed.size(); ++id) {  // by id: a node listed twice is removed once
    if (!doomed[id]) continue;
    by_name_.erase(nodes_[id]->name());
    nodes_[id].reset();
    --num_nodes_;
  }
}

void Graph::RemoveNode(Node* n) {
  std::vector<const Edge*> edges(n->in_edges_.begin(), n->in_edges_.end());
  edges.insert(edges.end(), n->out_edges_.begin(), n->out_edges_.end());
  // Collect first, then erase in one pass (edges_ can be large).
  for (const Edge* e : edges) {
    auto erase = [e](std::vector<Edge*>& v) { v.erase(std::remove(v.begin(), v.end(), e), v.end()); };
    if (e->src != n) erase(e->src->out_edges_);
    if (e->dst != n) erase(e->dst->in_edges_);
  }
  edges_.erase(std::remove_if(edges_.begin(), edges_.end(),
                              [n](const auto& p) { return p->src == n || p->dst == n; }),
               edges_.end());
  by_name_.erase(n->name());
  nodes_[n->id()].reset();
  --num_nodes_;
}

Node* Graph::FindNode(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (const auto& n : nodes_)
    if (n) out.push_back(n.get());
  return out;
}

std::string Graph::NewName(const std::string& prefix) const {
  if (!by_name_.count(prefix)) return prefix;
  for (int i = 1;; ++i) {
    std::string name = prefix + "_" + std::to_string(i);
    if (!by_name_.count(name)) return name;
  }
}

void Graph::ToGraphDef(proto::GraphDef* out) const {
  out->Clear();
  *out->mutable_versions() = versions_;
  if (library_.function_size() > 0 || library_.gradient_size() > 0) *out->mutable_library() = library_;
  for (const Node* n : nodes()) {
    proto::NodeDef* def = out->add_node();
    *def = n->def_;
    def->clear_input();
    std::vector<const Edge*> data(n->num_inputs(), nullptr);
    std::vector<const Edge*> control;
    for (const Edge* e : n->in_edges_) {
      if (e->IsControlEdge()) control.push_back(e);
      else if (e->dst_input < static_cast<int>(data.size())) data[e->dst_input] = e;
    }
    for (const Edge* e : data) {
      if (e) def->add_input(TensorInputName(e->src->name(), e->src_output));
    }
    std::sort(control.begin(), control.end(), [](const Edge* a, const Edge* b) { return a->src->id() < b->src->id(); });
    for (const Edge* e : control) def->add_input("^" + e->src->name());
  }
}

Status Graph::CopyFrom(const Graph& other) {
  proto::GraphDef def;
  other.ToGraphDef(&def);
  nodes_.clear();
  edges_.clear();
  by_name_.clear();
  num_nodes_ = 0;
  versions_ = other.versions_;
  library_ = other.library_;
  std::vector<Node*> map(other.num_node_ids(), nullptr);
  for (const Node* n : other.nodes()) {
    Node* copy;
    AF_RETURN_IF_ERROR(AddNode(n->def_, &copy));
    copy->assigned_device_ = n->assigned_device_;
    map[n->id()] = copy;
  }
  for (const Node* n : other.nodes()) {
    for (const Edge* e : n->in_edges_) AddEdge(map[e->src->id()], e->src_output, map[n->id()], e->dst_input);
  }
  return Status::OK();
}

bool ParseTensorName(const std::string& s, std::string* node, int* port) {
  if (s.empty()) return false;
  if (s[0] == '^') {
    *node = s.substr(1);
    *port = kControlSlot;
    return !node->empty();
  }
  auto colon = s.rfind(':');
  if (colon == std::string::npos) {
    *node = s;
    *port = 0;
    return true;
  }
  const std::string digits = s.substr(colon + 1);
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return false;
  *node = s.substr(0, colon);
  *port = std::stoi(digits);
  return !node->empty();
}

std::string TensorInputName(const std::string& node, int port) {
  return port == 0 ? node : node + ":" + std::to_string(port);
}

Status TopologicalOrder(const Graph& g, std::vector<Node*>* order) {
  std::vector<int> pending(g.num_node_ids(), 0);
  auto is_back_edge = [](const Edge* e) { return IsNextIterationOp(e->src->type_string()); };
  std::deque<Node*> ready;
  for (Node* n : g.nodes()) {
    for (const Edge* e : n->in_edges())
      if (!is_back_edge(e)) ++pending[n->id()];
    if (pending[n->id()] == 0) ready.push_back(n);
  }
  order->clear();
  while (!ready.empty()) {
    Node* n = ready.front();
    ready.pop_front();
    order->push_back(n);
    for (const Edge* e : n->out_edges()) {
      if (is_back_edge(e)) continue;
      if (--pending[e->dst->id()] == 0) ready.push_back(e->dst);
    }
  }
  if (static_cast<int>(order->size()) != g.num_nodes()) {
    std::string names;
    int shown = 0;
    for (Node* n : g.nodes()) {
      if (pending[n->id()] > 0 && shown++ < 5) names += (names.empty() ? "'" : ", '") + n->name() + "'";
    }
    return errors::InvalidArgument("graph has a cycle outside of a loop frame, involving nodes ", names);
  }
  return Status::OK();
}

Status ValidateGraph(const Graph& g) {
  for (const Node* n : g.nodes()) {
    std::vector<int> seen(n->num_inputs(), 0);
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) continue;
      if (e->dst_input < 0 || e->dst_input >= n->num_inputs())
        return errors::InvalidArgument("node '", n->name(), "' (op '", n->type_string(), "') has input ",
                                       e->dst_input, " but takes ", n->num_inputs());
      ++seen[e->dst_input];
      if (e->src_output < 0 || e->src_output >= e->src->num_outputs())
        return errors::InvalidArgument("node '", n->name(), "' input ", e->dst_input, " refers to output ",
                                       e->src_output, " of '", e->src->name(), "', which has ",
                                       e->src->num_outputs(), " outputs");
      DataType want = n->input_type(e->dst_input), got = e->src->output_type(e->src_output);
      if (BaseType(want) != BaseType(got) || (IsRefType(want) && !IsRefType(got)))
        return errors::InvalidArgument("Input ", e->dst_input, " of node '", n->name(), "' (op '", n->type_string(),
                                       "') was passed ", DataTypeString(got), " from '",
                                       TensorInputName(e->src->name(), e->src_output), "' incompatible with expected ",
                                       DataTypeString(want));
    }
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (seen[i] != 1)
        return errors::InvalidArgument("node '", n->name(), "' (op '", n->type_string(), "') input ", i,
                                       seen[i] == 0 ? " is not connected" : " is connected more than once");
    }
  }
  std::vector<Node*> order;
  return TopologicalOrder(g, &order);
}

}  // namespace actorflow
