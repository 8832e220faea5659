// Conversion between Tensor and the serialized TensorProto.
#pragma once

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace proto {
class TensorProto;
class TensorShapeProto;
}  // namespace proto

/// Reads tensor_content or the typed *_val field (a single value is broadcast to
/// the whole shape, as in TensorFlow). Errors name what is inconsistent.
Status TensorFromProto(const proto::TensorProto& p, Tensor* out);
/// Writes tensor_content for numeric types (or the typed field when
/// use_tensor_content is false); strings always go to string_val.
void TensorToProto(const Tensor& t, proto::TensorProto* p, bool use_tensor_content = true);

Status ShapeFromProto(const proto::TensorShapeProto& p, TensorShape* out);
PartialTensorShape PartialShapeFromProto(const proto::TensorShapeProto& p);
void ShapeToProto(const PartialTensorShape& s, proto::TensorShapeProto* p);
void ShapeToProto(const TensorShape& s, proto::TensorShapeProto* p);

}  // namespace actorflow
