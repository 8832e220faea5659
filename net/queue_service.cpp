// QueueSpec helpers (net/queue_service.hpp).
#include "actorflow/net/queue_service.hpp"

namespace actorflow {

const char* QueueKindName(QueueKind kind) {
  switch (kind) {
    case QueueKind::kFifo: return "FIFOQueue";
    case QueueKind::kRandomShuffle: return "RandomShuffleQueue";
    case QueueKind::kPaddingFifo: return "PaddingFIFOQueue";
    case QueueKind::kPriority: return "PriorityQueue";
    case QueueKind::kAccumulator: return "ConditionalAccumulator";
  }
  return "Queue";
}

namespace {
std::string TypesString(const std::vector<int32_t>& types) {
  std::vector<DataType> t;
  for (int32_t v : types) t.push_back(static_cast<DataType>(v));
  return DataTypeSliceString(t);
}
std::string ShapesString(const std::vector<PartialTensorShape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].DebugString();
  return s + "]";
}
bool SameShape(const PartialTensorShape& a, const PartialTensorShape& b) {
  return a.unknown_rank() == b.unknown_rank() && a.dim_sizes() == b.dim_sizes();
}
}  // namespace

std::string QueueSpecMismatch(const QueueSpec& a, const QueueSpec& b) {
  if (a.kind != b.kind)
    return std::string("it is a ") + QueueKindName(static_cast<QueueKind>(a.kind)) + ", not a " +
           QueueKindName(static_cast<QueueKind>(b.kind));
  if (a.component_types != b.component_types)
    return "its component types are " + TypesString(a.component_types) + ", not " + TypesString(b.component_types);
  bool shapes_equal = a.shapes.size() == b.shapes.size();
  for (size_t i = 0; shapes_equal && i < a.shapes.size(); ++i) shapes_equal = SameShape(a.shapes[i], b.shapes[i]);
  if (!shapes_equal) return "its shapes are " + ShapesString(a.shapes) + ", not " + ShapesString(b.shapes);
  if (a.capacity != b.capacity)
    return "its capacity is " + std::to_string(a.capacity) + ", not " + std::to_string(b.capacity);
  if (a.min_after_dequeue != b.min_after_dequeue)
    return "its min_after_dequeue is " + std::to_string(a.min_after_dequeue) + ", not " +
           std::to_string(b.min_after_dequeue);
  if (a.reduction != b.reduction)
    return std::string("its reduction_type is ") + (a.reduction ? "SUM" : "MEAN") + ", not " +
           (b.reduction ? "SUM" : "MEAN");
  if (a.seed != b.seed || a.seed2 != b.seed2)
    return "its seeds are (" + std::to_string(a.seed) + ", " + std::to_string(a.seed2) + "), not (" +
           std::to_string(b.seed) + ", " + std::to_string(b.seed2) + ")";
  return "";
}

}  // namespace actorflow
