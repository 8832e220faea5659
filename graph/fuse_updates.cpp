#include "actorflow/graph/fuse_updates.hpp"

#include <map>
#include <tuple>
#include <vector>

#include "actorflow/devices/device_name.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/ops/state/fused_apply.hpp"

namespace actorflow {

const char* FusedApplyOp(const std::string& op) {
  const FusedApplySpec* spec = FindFusedApplySpec(op);
  return spec && op == spec->op ? spec->fused_op : "";
}

namespace {

// Nodes fuse only with nodes of the same key: op, device, attrs that change
// the update, and the sources of its scalar arguments.
using Key = std::tuple<std::string, std::string, std::string, std::vector<std::pair<int, int>>>;

std::string AttrKey(const Node& n) {
  std::string key;
  for (const char* attr : {"T", "use_locking", "use_nesterov", "update_slots"}) {
    auto it = n.def().attr().find(attr);
    if (it == n.def().attr().end()) continue;
    key += attr;
    key += '=';
    key += it->second.ShortDebugString();
    key += ';';
  }
  return key;
}

bool OnFusingDevice(const Node& n, FuseUpdates mode) {
  if (mode == FuseUpdates::kEverywhere) return true;
  DeviceName name;
  if (!ParseDeviceName(n.assigned_device(), &name).ok() || !name.has_type) return false;
  return name.type == "GPU";
}

struct Group {
  const FusedApplySpec* spec;
  std::vector<Node*> members;
  std::vector<char> below;  // by node id: reachable from a member (adding such a node makes a cycle)
};

void MarkBelow(const Node* from, std::vector<char>* below) {
  std::vector<const Node*> stack{from};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge* e : n->out_edges()) {
      if ((*below)[static_cast<size_t>(e->dst->id())]) continue;
      (*below)[static_cast<size_t>(e->dst->id())] = 1;
      stack.push_back(e->dst);
    }
  }
}

Status Fuse(Graph* g, const Group& group) {
  const FusedApplySpec& spec = *group.spec;
  const int n = static_cast<int>(group.members.size());
  const Node& first = *group.members[0];
  proto::NodeDef def;
  def.set_name(g->NewName(first.name() + "/" + spec.fused_op));
  def.set_op(spec.fused_op);
  def.set_device(first.requested_device());
  for (const auto& [name, value] : first.def().attr())
    if (name != "_class") (*def.mutable_attr())[name] = value;  // colocation: first's variable only; placed already
  (*def.mutable_attr())["N"].set_i(n);
  Node* fused = nullptr;
  AF_RETURN_IF_ERROR(g->AddNode(std::move(def), &fused));
  fused->set_assigned_device(first.assigned_device());
  const int inputs = spec.num_vars + spec.num_args;
  for (int m = 0; m < n; ++m) {
    const Node* member = group.members[static_cast<size_t>(m)];
    for (int in = 0; in < inputs; ++in) {
      if (m > 0 && !FusedApplyPerVariable(spec, in)) continue;  // a scalar, connected once
      const Edge* e = member->input_edge(in);
      if (!e) return errors::Internal("input ", in, " of ", member->name(), " is not connected");
      g->AddEdge(e->src, e->src_output, fused, FusedApplyInput(spec, n, in, m));
    }
  }
  for (int m = 0; m < n; ++m) {
    Node* member = group.members[static_cast<size_t>(m)];
    for (const Edge* e : std::vector<Edge*>(member->in_edges()))
      if (e->IsControlEdge()) g->AddControlEdge(e->src, fused);
    for (const Edge* e : std::vector<Edge*>(member->out_edges())) {
      if (!g->ReplaceEdgeSource(e, fused, e->IsControlEdge() ? kControlSlot : m))
        return errors::Internal("rewiring ", member->name(), "'s consumer ", e->dst->name());
    }
  }
  g->RemoveNodes(group.members);
  return Status::OK();
}

// The groups of the graph as it is now, each with two members or more.
Status FindGroups(const Graph& g, FuseUpdates mode, std::vector<Group>* out) {
  std::vector<Node*> order;
  AF_RETURN_IF_ERROR(TopologicalOrder(g, &order));
  std::map<Key, std::vector<Node*>> by_key;  // candidates in topological order
  for (Node* node : order) {
    const FusedApplySpec* spec = FindFusedApplySpec(node->type_string());
    if (!spec || node->type_string() != spec->op || !OnFusingDevice(*node, mode)) continue;
    std::vector<std::pair<int, int>> scalars;
    bool connected = true;
    for (int in = 0; in < spec->num_vars + spec->num_args; ++in) {
      const Edge* e = node->input_edge(in);
      if (!e) connected = false;
      else if (!FusedApplyPerVariable(*spec, in)) scalars.emplace_back(e->src->id(), e->src_output);
    }
    if (connected)
      by_key[Key{node->type_string(), node->assigned_device(), AttrKey(*node), std::move(scalars)}].push_back(node);
  }
  for (auto& [key, nodes] : by_key) {
    if (nodes.size() < 2) continue;
    std::vector<Group> groups;
    for (Node* node : nodes) {
      // The first group it can join without a cycle: no member may reach it.
      Group* home = nullptr;
      for (Group& group : groups)
        if (!group.below[static_cast<size_t>(node->id())]) {
          home = &group;
          break;
        }
      if (!home) {
        groups.push_back(Group{FindFusedApplySpec(node->type_string()), {},
                               std::vector<char>(static_cast<size_t>(g.num_node_ids()), 0)});
        home = &groups.back();
      }
      home->members.push_back(node);
      MarkBelow(node, &home->below);
    }
    for (Group& group : groups)
      if (group.members.size() >= 2) out->push_back(std::move(group));
  }
  return Status::OK();
}

}  // namespace

// One group at a time, the groups found again after each: fusing one group
// joins paths (a node reaching one member now reaches all its consumers), so
// another group's cycle check holds only on the graph as it is then.
Status FuseOptimizerUpdates(Graph* g, FuseUpdates mode, int* num_fused) {
  if (num_fused) *num_fused = 0;
  if (mode == FuseUpdates::kOff) return Status::OK();
  int candidates = 0;  // most graphs have fewer than two: no further work
  for (const Node* n : g->nodes())
    candidates += FusedApplyOp(n->type_string())[0] != '\0' && OnFusingDevice(*n, mode);
  if (candidates < 2 || HasControlFlow(*g)) return Status::OK();
  for (;;) {
    std::vector<Group> groups;
    AF_RETURN_IF_ERROR(FindGroups(*g, mode, &groups));
    if (groups.empty()) return Status::OK();
    const Group& group = groups.front();
    const std::string what = "fusing " + group.members[0]->name() + " and " +
                             std::to_string(group.members.size() - 1) + " other " + group.spec->op + " nodes";
    AF_RETURN_IF_ERROR(Fuse(g, group).WithContext(what));  // (the members are gone once it returns)
    if (num_fused) ++*num_fused;
  }
}

}  // namespace actorflow
