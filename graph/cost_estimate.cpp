#include "actorflow/graph/cost_estimate.hpp"

#include <algorithm>

#include "actorflow/ops/attrs.hpp"

namespace actorflow {

double StaticOutputBytes(const Node* n, int port, const StaticShapes& shapes) {
  const auto& s = shapes[n->id()];
  if (port < 0 || port >= static_cast<int>(s.size()) || s[port].unknown_rank()) return 0;
  double elems = 1;
  for (int64_t d : s[port].dim_sizes()) elems *= d < 0 ? 1 : static_cast<double>(d);
  const size_t size = DataTypeSize(BaseType(n->output_type(port)));
  return elems * static_cast<double>(size > 0 ? size : 4);
}

namespace {

bool Known2d(const Node* n, int port, const StaticShapes& shapes) {
  const auto& s = shapes[n->id()];
  return port < static_cast<int>(s.size()) && !s[port].unknown_rank() && s[port].dims() == 2;
}

double NodeCost(const Node* n, const StaticShapes& shapes) {
  // A _FusedMatMul (graph/remapper.hpp) costs its product; the bias and activation are in the noise.
  const bool product = n->type_string() == "MatMul" || n->type_string() == "_FusedMatMul";
  const Edge* a = product ? n->input_edge(0) : nullptr;
  if (a && Known2d(n, 0, shapes) && Known2d(a->src, a->src_output, shapes)) {
    bool ta = false;
    GetNodeAttr(n->def(), "transpose_a", &ta);
    const PartialTensorShape& out = shapes[n->id()][0];
    const double m = std::max<int64_t>(1, out.dim_size(0)), cols = std::max<int64_t>(1, out.dim_size(1));
    const double k = std::max<int64_t>(1, shapes[a->src->id()][a->src_output].dim_size(ta ? 0 : 1));
    return 1.0 + 2.0 * m * cols * k / 50e3;
  }
  double bytes = 0;
  for (int i = 0; i < n->num_outputs(); ++i) bytes += StaticOutputBytes(n, i, shapes);
  return 1.0 + bytes / 2e3;
}

}  // namespace

std::vector<double> StaticNodeCosts(const Graph& g, const StaticShapes& shapes) {
  std::vector<double> cost(g.num_node_ids(), 0.0);
  for (Node* n : g.nodes()) cost[n->id()] = NodeCost(n, shapes);
  return cost;
}

}  // namespace actorflow
