#include "actorflow/client/ops/collective_ops.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }

AttrMap Common(const CollectiveOptions& o) {
  AttrMap attrs{{"group_size", AttrInt(o.group_size)},
                {"group_key", AttrInt(o.group_key)},
                {"instance_key", AttrInt(o.instance_key)},
                {"communication_hint", AttrString("auto")},
                {"timeout_seconds", AttrFloat(o.timeout_seconds)}};
  if (!o.bucket_plan.empty()) attrs["_bucket_plan"] = AttrString(o.bucket_plan);
  return attrs;
}
}  // namespace

Output CollectiveReduce(const Scope& s, Input input, const CollectiveOptions& o) {
  Output x = s.AsOutput(input);
  AttrMap attrs = Common(o);
  attrs["T"] = AttrType(x.type());
  attrs["merge_op"] = AttrString(o.merge_op);
  attrs["final_op"] = AttrString(o.final_op);
  attrs["subdiv_offsets"] = AttrIntList({0});
  attrs["wait_for"] = AttrIntList({});
  return First(s.AddOp("CollectiveReduce", {{x}}, attrs));
}

Output CollectiveBcastSend(const Scope& s, Input input, const TensorShape& shape, const CollectiveOptions& o) {
  Output x = s.AsOutput(input);
  AttrMap attrs = Common(o);
  attrs["T"] = AttrType(x.type());
  attrs["shape"] = AttrShape(PartialTensorShape(shape));
  return First(s.AddOp("CollectiveBcastSend", {{x}}, attrs));
}

Output CollectiveBcastFirst(const Scope& s, Input input, const CollectiveOptions& o) {
  Output x = s.AsOutput(input);
  AttrMap attrs = Common(o);
  attrs["T"] = AttrType(BaseType(x.type()));
  return First(s.AddOp("CollectiveBcastFirst", {{x}}, attrs));
}

Output CollectiveBcastRecv(const Scope& s, DataType dtype, const TensorShape& shape, const CollectiveOptions& o) {
  AttrMap attrs = Common(o);
  attrs["T"] = AttrType(dtype);
  attrs["shape"] = AttrShape(PartialTensorShape(shape));
  return First(s.AddOp("CollectiveBcastRecv", {}, attrs));
}

}  // namespace ops
}  // namespace actorflow
