#include "actorflow/client/ops/accumulator_ops.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }
}  // namespace

Output ConditionalAccumulator(const Scope& s, DataType dtype, const PartialTensorShape& shape,
                              const AccumulatorOptions& o) {
  return First(s.AddOp("ConditionalAccumulator", {},
                       {{"dtype", AttrType(dtype)},
                        {"shape", AttrShape(shape)},
                        {"container", AttrString(o.container)},
                        {"shared_name", AttrString(o.shared_name)},
                        {"reduction_type", AttrString(o.reduction_type)}}));
}

Operation AccumulatorApplyGradient(const Scope& s, Input handle, Input local_step, Input gradient) {
  return s.AddOp("AccumulatorApplyGradient",
                 {{s.AsOutput(handle)}, {s.AsOutput(local_step)}, {s.AsOutput(gradient)}});
}

Output AccumulatorTakeGradient(const Scope& s, Input handle, Input num_required, DataType dtype) {
  return First(s.AddOp("AccumulatorTakeGradient", {{s.AsOutput(handle)}, {s.AsOutput(num_required)}},
                       {{"dtype", AttrType(dtype)}}));
}

Output AccumulatorNumAccumulated(const Scope& s, Input handle) {
  return First(s.AddOp("AccumulatorNumAccumulated", {{s.AsOutput(handle)}}));
}
Output AccumulatorNumDropped(const Scope& s, Input handle) {
  return First(s.AddOp("AccumulatorNumDropped", {{s.AsOutput(handle)}}));
}

Operation AccumulatorSetGlobalStep(const Scope& s, Input handle, Input new_global_step) {
  return s.AddOp("AccumulatorSetGlobalStep", {{s.AsOutput(handle)}, {s.AsOutput(new_global_step)}});
}

}  // namespace ops
}  // namespace actorflow
