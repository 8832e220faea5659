#include "actorflow/graph/recv_scheduling.hpp"

#include "actorflow/graph/control_flow_info.hpp"

#include "actorflow/graph/cost_estimate.hpp"

#include <algorithm>
#include <vector>

#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {

namespace {

constexpr double kEps = 1e-9;

bool IsRecv(const Node* n) { return n->type_string() == "_Recv"; }

bool ComputesNothing(const Node* n) {
  const std::string& op = n->type_string();
  return op == "NoOp" || (n->in_edges().empty() && (op == "Const" || op == "_Arg" || op == "Placeholder"));
}

bool HasLoopFrames(const proto::GraphDef& def) {
  for (const auto& n : def.node()) {
    if (IsControlFlowOp(n.op())) return true;
  }
  return false;
}

// The partition as a graph with its start times, and the edges added so far.
class RecvScheduler {
 public:
  RecvScheduler(const Graph& g, const RecvSchedulingOptions& o) : g_(g), o_(o) {}

  Status Init() {
    AF_RETURN_IF_ERROR(TopologicalOrder(g_, &order_));
    const int n = g_.num_node_ids();
    cost_.assign(n, 0);
    const std::vector<double> estimate =
        o_.costs == RecvCostEstimate::kStatic ? StaticNodeCosts(g_, InferStaticShapes(g_))
                                              : std::vector<double>(n, 1.0);
    for (Node* node : order_) {
      if (IsRecv(node)) cost_[node->id()] = o_.transfer_cost;
      else if (!ComputesNothing(node)) cost_[node->id()] = estimate[node->id()];
    }
    // ASAP, then ALAP against the ASAP makespan. A _Send is due at its ASAP
    // time: another device may be waiting for it, which this model cannot see.
    asap_.assign(n, 0);
    double makespan = 0;
    for (Node* node : order_) {
      for (const Edge* e : node->in_edges())
        asap_[node->id()] = std::max(asap_[node->id()], asap_[e->src->id()] + cost_[e->src->id()]);
      makespan = std::max(makespan, asap_[node->id()] + cost_[node->id()]);
    }
    alap_.assign(n, 0);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const Node* node = *it;
      double latest_finish = node->type_string() == "_Send" ? asap_[node->id()] + cost_[node->id()] : makespan;
      for (const Edge* e : node->out_edges()) latest_finish = std::min(latest_finish, alap_[e->dst->id()]);
      alap_[node->id()] = latest_finish - cost_[node->id()];
    }
    // Which nodes wait for another device, and whether anything this
    // partition sends may depend on what it receives.
    after_recv_.assign(n, false);
    for (Node* node : order_)
      for (const Edge* e : node->in_edges())
        if (IsRecv(e->src) || after_recv_[e->src->id()]) after_recv_[node->id()] = true;
    for (Node* node : order_)
      if (node->type_string() == "_Send" && after_recv_[node->id()]) round_trip_ = true;
    added_.assign(n, {});
    return Status::OK();
  }

  // The node to gate `recv` on, or nullptr when none would delay it.
  const Node* Gate(const Node* recv) const {
    if (recv->out_edges().empty()) return nullptr;
    double consumer_start = alap_[recv->out_edges().front()->dst->id()];
    for (const Edge* e : recv->out_edges()) consumer_start = std::min(consumer_start, alap_[e->dst->id()]);
    const double target = consumer_start - cost_[recv->id()];
    const std::vector<bool> below = Descendants(recv);
    const Node* best = nullptr;
    for (Node* n : g_.nodes()) {  // id order: ties go to the first in the GraphDef
      if (n == recv || IsRecv(n) || below[n->id()] || (round_trip_ && after_recv_[n->id()])) continue;
      if (alap_[n->id()] + cost_[n->id()] > target + kEps) continue;
      if (!best || Better(n, best)) best = n;
    }
    if (!best || asap_[best->id()] + cost_[best->id()] <= asap_[recv->id()] + kEps) return nullptr;
    const double min_delay = o_.costs == RecvCostEstimate::kStatic ? o_.min_delay_us : 0.0;
    if (asap_[best->id()] + cost_[best->id()] - asap_[recv->id()] < min_delay) return nullptr;
    return best;
  }

  void Added(const Node* gate, const Node* recv) { added_[gate->id()].push_back(recv->id()); }

 private:
  // Finishes later when run as soon as possible; then later in the ALAP schedule.
  bool Better(const Node* a, const Node* b) const {
    const double fa = asap_[a->id()] + cost_[a->id()], fb = asap_[b->id()] + cost_[b->id()];
    if (fa > fb + kEps) return true;
    if (fa < fb - kEps) return false;
    return alap_[a->id()] + cost_[a->id()] > alap_[b->id()] + cost_[b->id()] + kEps;
  }

  // Everything reachable from `from`, over the graph's edges and those added.
  std::vector<bool> Descendants(const Node* from) const {
    std::vector<bool> seen(g_.num_node_ids(), false);
    std::vector<int> stack = {from->id()};
    seen[from->id()] = true;
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      auto visit = [&](int next) {
        if (!seen[next]) seen[next] = true, stack.push_back(next);
      };
      for (const Edge* e : g_.node(id)->out_edges()) visit(e->dst->id());
      for (int next : added_[id]) visit(next);
    }
    return seen;
  }

  const Graph& g_;
  const RecvSchedulingOptions& o_;
  std::vector<Node*> order_;
  std::vector<double> cost_, asap_, alap_;  // by node id; start times
  std::vector<bool> after_recv_;            // by node id: depends on some _Recv
  bool round_trip_ = false;                 // some _Send depends on some _Recv
  std::vector<std::vector<int>> added_;     // by node id: the _Recvs it now gates
};

// Adds the gates to `partition`, which `g` was imported from.
Status AddGates(const Graph& g, const RecvSchedulingOptions& options, proto::GraphDef* partition, int* added) {
  RecvScheduler scheduler(g, options);
  AF_RETURN_IF_ERROR(scheduler.Init());
  for (int i = 0; i < partition->node_size(); ++i) {  // node ids are GraphDef positions
    const Node* recv = g.node(i);
    if (!IsRecv(recv)) continue;
    const Node* gate = scheduler.Gate(recv);
    if (!gate) continue;
    partition->mutable_node(i)->add_input("^" + gate->name());
    scheduler.Added(gate, recv);
    ++*added;
  }
  return Status::OK();
}

}  // namespace

Status ScheduleRecvsLate(proto::GraphDef* partition, const RecvSchedulingOptions& options, int* num_edges_added) {
  int added = 0;
  if (num_edges_added) *num_edges_added = 0;
  bool any_recv = false;
  for (const auto& n : partition->node()) any_recv = any_recv || n.op() == "_Recv";
  if (!any_recv || HasLoopFrames(*partition)) return Status::OK();
  Graph g;
  Status s = ImportGraphDef(*partition, &g);
  if (s.ok()) s = AddGates(g, options, partition, &added);  // changes nothing when it fails
  if (!s.ok()) {
    const std::string& device = partition->node(0).device();
    return errors::InvalidArgument("cannot schedule the _Recvs of the partition for ", device.empty() ? "?" : device,
                                   ": ", s.message());
  }
  if (num_edges_added) *num_edges_added = added;
  return Status::OK();
}

}  // namespace actorflow
