#include "actorflow/graph/static_shapes.hpp"

#include "actorflow/core/tensor.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {

StaticShapes InferStaticShapes(const Graph& g) {
  StaticShapes shapes(g.num_node_ids());
  std::vector<Node*> order;
  if (!TopologicalOrder(g, &order).ok()) return shapes;
  for (Node* n : order) {
    std::vector<PartialTensorShape> in(n->num_inputs());
    std::vector<const Tensor*> values(n->num_inputs(), nullptr);
    std::vector<Tensor> consts;
    consts.reserve(n->num_inputs());  // `values` points into it
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) continue;
      const auto& src = shapes[e->src->id()];
      if (e->src_output < static_cast<int>(src.size())) in[e->dst_input] = src[e->src_output];
      if (e->src->type_string() == "Const") {  // only small ones: a Const may declare any shape
        consts.emplace_back();
        if (ConstValueForShapeFn(e->src->def(), &consts.back())) values[e->dst_input] = &consts.back();
      }
    }
    InferenceContext ctx(&n->def(), std::move(in), std::move(values), n->num_outputs());
    const OpRegistration* reg = OpRegistry::Global()->Find(n->type_string());
    if (reg && reg->shape_fn && RunShapeFn(reg->shape_fn, &ctx).ok()) shapes[n->id()] = ctx.outputs();
    else shapes[n->id()].assign(n->num_outputs(), PartialTensorShape());
  }
  return shapes;
}

}  // namespace actorflow
