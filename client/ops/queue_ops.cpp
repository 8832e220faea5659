#include "actorflow/client/ops/queue_ops.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }

OutputList All(const Operation& op) {
  OutputList out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

AttrMap Common(const DataTypeVector& types, const QueueOptions& o) {
  return {{"component_types", AttrTypeList(std::vector<DataType>(types.begin(), types.end()))},
          {"shapes", AttrShapeList(o.shapes)},
          {"capacity", AttrInt(o.capacity)},
          {"container", AttrString(o.container)},
          {"shared_name", AttrString(o.shared_name)}};
}

DataTypeVector TypesOf(const OutputList& components) {
  DataTypeVector types;
  for (const Output& c : components) types.push_back(c.type());
  return types;
}

OutputList Dequeue(const Scope& s, const char* op, Input handle, const Input* n, const DataTypeVector& types) {
  std::vector<OutputList> args = {{s.AsOutput(handle)}};
  if (n) args.push_back({s.AsOutput(*n)});
  return All(s.AddOp(op, args, {{"component_types", AttrTypeList(std::vector<DataType>(types.begin(), types.end()))}}));
}
}  // namespace

Output FIFOQueue(const Scope& s, const DataTypeVector& types, const QueueOptions& o) {
  return First(s.AddOp("FIFOQueueV2", {}, Common(types, o)));
}
Output PaddingFIFOQueue(const Scope& s, const DataTypeVector& types, const QueueOptions& o) {
  return First(s.AddOp("PaddingFIFOQueueV2", {}, Common(types, o)));
}
Output PriorityQueue(const Scope& s, const DataTypeVector& types, const QueueOptions& o) {
  return First(s.AddOp("PriorityQueueV2", {}, Common(types, o)));
}
Output RandomShuffleQueue(const Scope& s, const DataTypeVector& types, int64_t min_after_dequeue,
                          const QueueOptions& o, int64_t seed) {
  int64_t seed1, seed2;
  s.GetSeeds(seed, &seed1, &seed2);
  AttrMap attrs = Common(types, o);
  attrs["min_after_dequeue"] = AttrInt(min_after_dequeue);
  attrs["seed"] = AttrInt(seed1);
  attrs["seed2"] = AttrInt(seed2);
  return First(s.AddOp("RandomShuffleQueueV2", {}, attrs));
}

Operation QueueEnqueue(const Scope& s, Input handle, const OutputList& components) {
  const DataTypeVector types = TypesOf(components);
  return s.AddOp("QueueEnqueueV2", {{s.AsOutput(handle)}, components},
                 {{"Tcomponents", AttrTypeList(std::vector<DataType>(types.begin(), types.end()))}});
}
Operation QueueEnqueueMany(const Scope& s, Input handle, const OutputList& components) {
  const DataTypeVector types = TypesOf(components);
  return s.AddOp("QueueEnqueueManyV2", {{s.AsOutput(handle)}, components},
                 {{"Tcomponents", AttrTypeList(std::vector<DataType>(types.begin(), types.end()))}});
}
OutputList QueueDequeue(const Scope& s, Input handle, const DataTypeVector& types) {
  return Dequeue(s, "QueueDequeueV2", handle, nullptr, types);
}
OutputList QueueDequeueMany(const Scope& s, Input handle, Input n, const DataTypeVector& types) {
  return Dequeue(s, "QueueDequeueManyV2", handle, &n, types);
}
OutputList QueueDequeueUpTo(const Scope& s, Input handle, Input n, const DataTypeVector& types) {
  return Dequeue(s, "QueueDequeueUpToV2", handle, &n, types);
}
Operation QueueClose(const Scope& s, Input handle, bool cancel_pending_enqueues) {
  return s.AddOp("QueueCloseV2", {{s.AsOutput(handle)}},
                 {{"cancel_pending_enqueues", AttrBool(cancel_pending_enqueues)}});
}
Output QueueSize(const Scope& s, Input handle) { return First(s.AddOp("QueueSizeV2", {{s.AsOutput(handle)}})); }
Output QueueIsClosed(const Scope& s, Input handle) {
  return First(s.AddOp("QueueIsClosedV2", {{s.AsOutput(handle)}}));
}

namespace {
AttrMap StagingAttrs(const DataTypeVector& types, const StagingOptions& o) {
  return {{"dtypes", AttrTypeList(std::vector<DataType>(types.begin(), types.end()))},
          {"capacity", AttrInt(o.capacity)},
          {"container", AttrString(o.container)},
          {"shared_name", AttrString(o.shared_name)}};
}
}  // namespace

Operation StagingArea::Put(const Scope& s, const OutputList& values) const {
  return s.AddOp("Stage", {values}, StagingAttrs(TypesOf(values), options));
}
OutputList StagingArea::Get(const Scope& s) const { return All(s.AddOp("Unstage", {}, StagingAttrs(types, options))); }
Output StagingArea::Size(const Scope& s) const { return First(s.AddOp("StageSize", {}, StagingAttrs(types, options))); }
Operation StagingArea::Clear(const Scope& s) const { return s.AddOp("StageClear", {}, StagingAttrs(types, options)); }

}  // namespace ops
}  // namespace actorflow
