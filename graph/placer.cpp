#include "actorflow/graph/placer.hpp"

#include "actorflow/graph/control_flow_info.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/devices/device_name.hpp"
#include "actorflow/graph/cost_estimate.hpp"
#include "actorflow/graph/static_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

void CostModel::Record(const std::string& node, const std::string& device, double micros) {
  std::lock_guard<std::mutex> l(mu_);
  auto& e = costs_[{node, device}];
  e.first += micros;
  ++e.second;
}

bool CostModel::Lookup(const std::string& node, const std::string& device, double* micros) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = costs_.find({node, device});
  if (it == costs_.end() || it->second.second == 0) return false;
  *micros = it->second.first / static_cast<double>(it->second.second);
  return true;
}

size_t CostModel::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return costs_.size();
}

namespace {

struct UnionFind {
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the lowest id is the root: stable
  }
  std::vector<int> parent;
};

struct Group {
  std::vector<Node*> members;
  DeviceName spec;          // merged requested devices
  Node* spec_source = nullptr;  // a member whose request shaped `spec`
  std::vector<int> feasible;    // device indices
  int preferred = -1;           // a feasible device a stateful member was placed on before
  std::vector<int> candidates;  // those the strategy picks from (see PickFrom)
  bool soft_placed = false;     // its request could not be met: placed as if it made none
  int device = -1;              // chosen
};

bool IsFreeSource(const Node* n) {
  const std::string& op = n->type_string();
  return n->in_edges().empty() && (op == "Const" || op == "_Arg" || op == "Placeholder");
}

class Placer {
 public:
  Placer(Graph* g, const DeviceManager& devices, const PlacerOptions& o) : g_(g), devices_(devices), o_(o) {}

  Status Run() {
    if (devices_.size() == 0) return errors::FailedPrecondition("no devices to place the graph on");
    AF_RETURN_IF_ERROR(TopologicalOrder(*g_, &order_));
    AF_RETURN_IF_ERROR(BuildGroups());
    for (auto& [root, group] : groups_) AF_RETURN_IF_ERROR(Feasible(&group));
    InferShapes();
    Assign();
    for (Node* n : g_->nodes()) {
      const std::string& name = devices_.devices()[GroupOf(n).device]->name();
      n->set_assigned_device(name);
      n->mutable_def()->set_device(name);
    }
    return Status::OK();
  }

 private:
  Group& GroupOf(const Node* n) { return groups_.at(uf_->Find(n->id())); }

  Status BuildGroups() {
    uf_ = std::make_unique<UnionFind>(g_->num_node_ids());
    for (Node* n : g_->nodes()) {
      // _class: ["loc:@name", ...]
      std::vector<std::string> classes;
      if (HasNodeAttr(n->def(), "_class") && GetNodeAttr(n->def(), "_class", &classes).ok()) {
        for (const auto& c : classes) {
          if (c.rfind("loc:@", 0) != 0) continue;
          if (Node* other = g_->FindNode(c.substr(5))) uf_->Union(n->id(), other->id());
        }
      }
      // A node that takes a variable by reference (Assign, the Apply ops: a
      // ref input) runs where the variable is. One that takes the variable's
      // value is free: across devices, the _Send on the variable's device
      // reads the value and sends that (as in TensorFlow).
      for (const Edge* e : n->in_edges())
        if (!e->IsControlEdge() && IsRefType(n->input_type(e->dst_input))) uf_->Union(n->id(), e->src->id());
    }
    ColocateStepResources();
    ColocateLoopStructure();
    for (Node* n : g_->nodes()) groups_[uf_->Find(n->id())].members.push_back(n);
    for (auto& [root, group] : groups_) {
      for (Node* n : group.members) {
        if (n->requested_device().empty()) continue;
        DeviceName spec;
        Status s = ParseDeviceName(n->requested_device(), &spec);
        if (!s.ok())
          return errors::InvalidArgument("node '", n->name(), "' requests an invalid device: ", s.message());
        if (!group.spec_source) {
          group.spec = spec;
          group.spec_source = n;
          continue;
        }
        s = MergeDeviceNames(&group.spec, spec);
        if (!s.ok() && !o_.allow_soft_placement) {
          const bool loop = IsControlFlowOp(n->type_string()) && IsControlFlowOp(group.spec_source->type_string());
          return errors::InvalidArgument("cannot colocate node '", n->name(), "' (requests '", n->requested_device(),
                                         "') with node '", group.spec_source->name(), "' (requests '",
                                         group.spec_source->requested_device(), "'): ", s.message(),
                                         loop ? " (a while loop's Enters, Merges, Switches, NextIterations, Exits and "
                                                "LoopCond run on one device)"
                                              : "");
        }
      }
    }
    // A resource (a queue, a reader, a resource variable) lives in the
    // container of its task's process: whoever takes its handle runs in that
    // task too (on any of its devices), unless it names a task itself.
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* n : g_->nodes()) {
        for (const Edge* e : n->in_edges()) {
          if (e->IsControlEdge() || e->src->output_type(e->src_output) != DT_RESOURCE) continue;
          const Group& from = groups_[uf_->Find(e->src->id())];
          Group& to = groups_[uf_->Find(n->id())];
          if (&from == &to || !(from.spec.has_job || from.spec.has_task) || to.spec.has_job || to.spec.has_task) continue;
          to.spec.has_job = from.spec.has_job;
          to.spec.job = from.spec.job;
          to.spec.has_replica = from.spec.has_replica;
          to.spec.replica = from.spec.replica;
          to.spec.has_task = from.spec.has_task;
          to.spec.task = from.spec.task;
          if (!to.spec_source) to.spec_source = to.members.front();
          changed = true;
        }
      }
    }
    if (!o_.default_task.empty()) {
      DeviceName task;
      AF_RETURN_IF_ERROR(ParseDeviceName(o_.default_task, &task));
      for (auto& [root, group] : groups_) {
        if (group.spec.has_job || group.spec.has_task) continue;
        group.spec.has_job = task.has_job;
        group.spec.job = task.job;
        if (!group.spec.has_replica && task.has_replica) {
          group.spec.has_replica = true;
          group.spec.replica = task.replica;
        }
        group.spec.has_task = task.has_task;
        group.spec.task = task.task;
        if (!group.spec_source) group.spec_source = group.members.front();
      }
    }
    return Status::OK();
  }

  // A loop's own structure (its variables' Enters, Merges, Switches,
  // NextIterations and Exits, and its LoopCond) runs on one device: the
  // iterations of its frame start there. Its body may run anywhere; the
  // partitioner drives the frame on other devices with control loops.
  void ColocateLoopStructure() {
    for (Node* n : g_->nodes()) {
      const std::string& op = n->type_string();
      const bool merge = IsMergeOp(op), sw = IsSwitchOp(op), exit = IsExitOp(op);
      if (!merge && !sw && !exit) continue;
      for (const Edge* e : n->in_edges()) {
        if (e->IsControlEdge()) continue;
        const std::string& src = e->src->type_string();
        bool constant = false;
        if (IsEnterOp(src) && HasNodeAttr(e->src->def(), "is_constant"))
          (void)GetNodeAttr(e->src->def(), "is_constant", &constant);
        if ((merge && (IsNextIterationOp(src) || (IsEnterOp(src) && !constant))) ||
            (sw && (src == "LoopCond" || (e->dst_input == 0 && IsMergeOp(src) && IsLoopSwitch(n)))) ||
            (exit && IsSwitchOp(src)))
          uf_->Union(n->id(), e->src->id());
      }
    }
  }

  static bool IsLoopSwitch(const Node* sw) {
    const Edge* pred = sw->input_edge(1);
    return pred && pred->src->type_string() == "LoopCond";
  }

  // A per-step resource (a stack: ops/step_resources.hpp) lives in the step
  // state of the device that made it, so every node its handle reaches
  // (through Enter, Identity, Switch, ...: DT_RESOURCE edges) runs there.
  // Queue and reader handles name actors that any device reaches: their
  // DT_RESOURCE edges constrain nothing.
  void ColocateStepResources() {
    UnionFind handles(g_->num_node_ids());
    std::vector<Node*> makers;
    for (Node* n : g_->nodes()) {
      if (n->type_string() == "StackV2") makers.push_back(n);
      for (const Edge* e : n->in_edges())
        if (!e->IsControlEdge() && n->input_type(e->dst_input) == DT_RESOURCE) handles.Union(n->id(), e->src->id());
    }
    if (makers.empty()) return;
    std::vector<bool> reached(static_cast<size_t>(g_->num_node_ids()), false);
    for (Node* m : makers) reached[static_cast<size_t>(handles.Find(m->id()))] = true;
    for (Node* n : g_->nodes()) {
      const int root = handles.Find(n->id());
      if (root != n->id() && reached[static_cast<size_t>(root)]) uf_->Union(n->id(), root);
    }
  }

  // The devices matching the group's spec on which each member has a kernel.
  Status Feasible(Group* group) {
    const auto& devs = devices_.devices();
    auto kernels_everywhere = [&](int d, Node** missing) {
      for (Node* n : group->members)
        if (!HasKernel(n->def(), devs[d]->device_type())) {
          *missing = n;
          return false;
        }
      return true;
    };
    std::vector<int> matching, no_kernel;
    Node* missing = nullptr;
    for (int d = 0; d < static_cast<int>(devs.size()); ++d) {
      DeviceName full;
      if (!ParseDeviceName(devs[d]->name(), &full).ok()) continue;
      if (group->spec_source && !DeviceNameMatches(group->spec, full)) continue;
      matching.push_back(d);
      if (kernels_everywhere(d, &missing)) group->feasible.push_back(d);
    }
    if (o_.allow_soft_placement && group->spec_source && group->feasible.empty()) {
      for (int d = 0; d < static_cast<int>(devs.size()); ++d)
        if (kernels_everywhere(d, &missing)) group->feasible.push_back(d);
      group->soft_placed = true;
    }
    if (!group->feasible.empty()) {
      Prefer(group);
      PickFrom(group);
      return Status::OK();
    }
    Node* who = group->spec_source ? group->spec_source : group->members.front();
    std::string colocated;
    if (group->members.size() > 1) {
      colocated = " (colocated with";
      for (size_t i = 0; i < group->members.size() && i < 5; ++i)
        if (group->members[i] != who) colocated += " '" + group->members[i]->name() + "'";
      colocated += group->members.size() > 5 ? " ...)" : ")";
    }
    std::string asked = group->spec_source ? "'" + DeviceNameString(group->spec) + "'" : "any device";
    if (matching.empty())
      return errors::InvalidArgument("cannot assign a device for node '", who->name(), "' (op '", who->type_string(),
                                     "')", colocated, ": it asks for ", asked,
                                     ", which matches none of this process's devices: ", devices_.DebugString());
    return errors::InvalidArgument("cannot assign a device for node '", who->name(), "' (op '", who->type_string(),
                                   "')", colocated, ": it asks for ", asked, ", but node '",
                                   missing ? missing->name() : "?", "' (op '",
                                   missing ? missing->type_string() : "?", "') has no kernel for ",
                                   devs[matching.front()]->device_type());
  }

  // A group that asks for no device goes to a GPU whenever one can run all of
  // it, as in TensorFlow (the GPU device type ranks first), else to a CPU; a
  // GPU runs shape and index arithmetic in host memory (host kernels,
  // ops/gpu/host_kernels.cpp), so those follow the GPU ops they feed without
  // waiting for it. Measured costs can overrule the preference: once the cost
  // model has timed the group's first node on a GPU and on a CPU (a tiny op
  // between host-only ops), both are candidates and the earliest finish time
  // decides.
  void PickFrom(Group* group) const {
    group->candidates = group->feasible;
    if (group->spec_source && !group->soft_placed && group->spec.has_type) return;  // a type was asked for
    std::vector<int> cpu, gpu;
    for (int d : group->feasible) {
      const std::string& type = devices_.devices()[d]->device_type();
      if (type == DEVICE_CPU) cpu.push_back(d);
      else if (type == DEVICE_GPU) gpu.push_back(d);
    }
    if (!gpu.empty()) {
      if (cpu.empty() || !MeasuredOn(group, gpu) || !MeasuredOn(group, cpu)) group->candidates = std::move(gpu);
      return;
    }
    if (!cpu.empty()) group->candidates = std::move(cpu);
  }

  // Whether the cost model has timed the group's first node on one of `devices`.
  bool MeasuredOn(const Group* group, const std::vector<int>& devices) const {
    if (!o_.cost_model || group->members.empty()) return false;
    double micros;
    for (int d : devices)
      if (o_.cost_model->Lookup(group->members.front()->name(), devices_.devices()[d]->name(), &micros)) return true;
    return false;
  }

  // Sets the group's preferred device: a feasible one a stateful member was placed on before.
  void Prefer(Group* group) const {
    if (!o_.stateful_placements) return;
    for (Node* n : group->members) {
      auto it = o_.stateful_placements->find(n->name());
      if (it == o_.stateful_placements->end()) continue;
      for (int d : group->feasible)
        if (devices_.devices()[d]->name() == it->second) {
          group->preferred = d;
          return;
        }
    }
  }

  // Static output shapes (unknown where they depend on feeds), for sizes.
  void InferShapes() {
    shapes_ = InferStaticShapes(*g_);
    static_costs_ = StaticNodeCosts(*g_, shapes_);
  }

  // Estimated microseconds of `n` on device d: measured when known, else the
  // static estimate (graph/cost_estimate.hpp); free sources cost nothing.
  double Cost(const Node* n, int d) const {
    double measured;
    if (o_.cost_model && o_.cost_model->Lookup(n->name(), devices_.devices()[d]->name(), &measured)) return measured;
    if (IsFreeSource(n)) return 0;
    return static_costs_[n->id()];
  }

  double Transfer(const Node* src, int port) const {
    return o_.transfer_fixed_us + (port >= 0 ? StaticOutputBytes(src, port, shapes_) * o_.transfer_us_per_byte : 0);
  }

  void Assign() {
    const int num_devices = devices_.size();
    std::vector<double> finish(g_->num_node_ids(), 0), device_free(num_devices, 0);
    std::vector<int> where(g_->num_node_ids(), -1);
    int next_round_robin = 0;
    std::vector<Node*> deferred;  // free sources of groups not yet placed
    for (Node* n : order_) {
      Group& group = GroupOf(n);
      if (group.device < 0 && group.preferred >= 0) group.device = group.preferred;
      if (group.device < 0 && group.feasible.size() == 1) group.device = group.feasible[0];
      if (group.device < 0 && group.members.size() == 1 && IsFreeSource(n)) {
        deferred.push_back(n);  // placed with its first consumer below
        continue;
      }
      auto ready_on = [&](int d) {
        double t = 0;
        for (const Edge* e : n->in_edges()) {
          const int from = where[e->src->id()];
          const double arrive = finish[e->src->id()] + (from >= 0 && from != d ? Transfer(e->src, e->src_output) : 0);
          t = std::max(t, arrive);
        }
        return t;
      };
      if (group.device < 0) {
        if (o_.strategy == PlacementStrategy::kSingle) {
          group.device = group.candidates.front();
        } else if (o_.strategy == PlacementStrategy::kRoundRobin) {
          group.device = group.candidates[next_round_robin++ % group.candidates.size()];
        } else {
          double best = std::numeric_limits<double>::infinity();
          for (int d : group.candidates) {
            const double end = std::max(ready_on(d), device_free[d]) + Cost(n, d);
            if (end < best - 1e-9) best = end, group.device = d;
          }
        }
      }
      const int d = group.device;
      where[n->id()] = d;
      finish[n->id()] = std::max(ready_on(d), device_free[d]) + Cost(n, d);
      device_free[d] = finish[n->id()];
      // Free sources feeding this node go where it is, and from now on
      // count as being there: a later consumer elsewhere pays the transfer.
      for (const Edge* e : n->in_edges()) {
        Group& src_group = GroupOf(e->src);
        if (src_group.device < 0 && IsFreeSource(e->src)) {
          src_group.device = d;
          where[e->src->id()] = d;
        }
      }
    }
    for (Node* n : deferred) {
      Group& group = GroupOf(n);
      if (group.device < 0) group.device = group.candidates.front();  // consumed by nothing
      where[n->id()] = group.device;
    }
  }

  Graph* g_;
  const DeviceManager& devices_;
  const PlacerOptions& o_;
  std::vector<Node*> order_;
  std::unique_ptr<UnionFind> uf_;
  std::map<int, Group> groups_;  // by root id
  StaticShapes shapes_;
  std::vector<double> static_costs_;  // per node id
};

}  // namespace

Status PlaceGraph(Graph* g, const DeviceManager& devices, const PlacerOptions& options) {
  return Placer(g, devices, options).Run();
}

}  // namespace actorflow
