#include "actorflow/core/tensor_proto.hpp"

#include <cstring>

#include "actorflow/core/proto/tensor.pb.h"
#include "actorflow/core/proto/tensor_shape.pb.h"

namespace actorflow {

PartialTensorShape PartialShapeFromProto(const proto::TensorShapeProto& p) {
  if (p.unknown_rank()) return PartialTensorShape();
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return PartialTensorShape(std::move(dims));
}

Status ShapeFromProto(const proto::TensorShapeProto& p, TensorShape* out) {
  if (p.unknown_rank()) return errors::InvalidArgument("tensor shape has unknown rank");
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) dims.push_back(d.size());
  return TensorShape::FromDims(dims, out);
}

void ShapeToProto(const PartialTensorShape& s, proto::TensorShapeProto* p) {
  p->Clear();
  if (s.unknown_rank()) {
    p->set_unknown_rank(true);
    return;
  }
  for (auto d : s.dim_sizes()) p->add_dim()->set_size(d);
}

void ShapeToProto(const TensorShape& s, proto::TensorShapeProto* p) {
  p->Clear();
  for (int i = 0; i < s.dims(); ++i) p->add_dim()->set_size(s.dim_size(i));
}

namespace {

// Fills n elements of `out` from a repeated field of m values: m == n copies,
// m == 1 < n broadcasts, m == 0 leaves zeros, other m is an error.
template <class T, class Field>
Status FillFromField(const Field& f, int64_t n, T* out, const char* field_name) {
  const int64_t m = f.size();
  if (m == 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = T();
    return Status::OK();
  }
  if (m != n && m != 1 && !(m < n))
    return errors::InvalidArgument("TensorProto has ", m, " values in ", field_name, " for a shape of ", n,
                                   " elements");
  // TensorFlow repeats the last value when fewer than n are given.
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f.Get(i < m ? static_cast<int>(i) : m - 1));
  return Status::OK();
}

}  // namespace

Status TensorFromProto(const proto::TensorProto& p, Tensor* out) {
  const auto dtype = static_cast<DataType>(p.dtype());
  if (!DataTypeIsSupported(dtype) || IsRefType(dtype))
    return errors::InvalidArgument("TensorProto has unsupported dtype ", DataTypeString(dtype));
  TensorShape shape;
  AF_RETURN_IF_ERROR(ShapeFromProto(p.tensor_shape(), &shape).WithContext("in TensorProto"));
  Tensor t;
  AF_RETURN_IF_ERROR(Tensor::Create(nullptr, dtype, shape, &t));
  const int64_t n = shape.num_elements();
  if (dtype == DT_STRING) {
    auto* s = t.data<std::string>();
    const int m = p.string_val_size();
    if (m != 0 && m != n && m != 1)
      return errors::InvalidArgument("TensorProto has ", m, " string values for ", n, " elements");
    for (int64_t i = 0; i < n; ++i) s[i] = m == 0 ? std::string() : p.string_val(m == 1 ? 0 : static_cast<int>(i));
    *out = std::move(t);
    return Status::OK();
  }
  if (!p.tensor_content().empty()) {
    if (p.tensor_content().size() != t.TotalBytes())
      return errors::InvalidArgument("TensorProto tensor_content has ", p.tensor_content().size(),
                                     " bytes, expected ", t.TotalBytes(), " for ", DataTypeString(dtype),
                                     shape.DebugString());
    std::memcpy(t.raw_data(), p.tensor_content().data(), t.TotalBytes());
    *out = std::move(t);
    return Status::OK();
  }
  Status s;
  switch (dtype) {
    case DT_FLOAT: s = FillFromField(p.float_val(), n, t.data<float>(), "float_val"); break;
    case DT_DOUBLE: s = FillFromField(p.double_val(), n, t.data<double>(), "double_val"); break;
    case DT_INT32: s = FillFromField(p.int_val(), n, t.data<int32_t>(), "int_val"); break;
    case DT_UINT8: s = FillFromField(p.int_val(), n, t.data<uint8_t>(), "int_val"); break;
    case DT_INT16: s = FillFromField(p.int_val(), n, t.data<int16_t>(), "int_val"); break;
    case DT_INT8: s = FillFromField(p.int_val(), n, t.data<int8_t>(), "int_val"); break;
    case DT_UINT16: s = FillFromField(p.int_val(), n, t.data<uint16_t>(), "int_val"); break;
    case DT_INT64: s = FillFromField(p.int64_val(), n, t.data<int64_t>(), "int64_val"); break;
    case DT_BOOL: s = FillFromField(p.bool_val(), n, t.data<bool>(), "bool_val"); break;
    case DT_UINT32: s = FillFromField(p.uint32_val(), n, t.data<uint32_t>(), "uint32_val"); break;
    case DT_UINT64: s = FillFromField(p.uint64_val(), n, t.data<uint64_t>(), "uint64_val"); break;
    default: return errors::InvalidArgument("TensorProto dtype ", DataTypeString(dtype), " has no value field");
  }
  AF_RETURN_IF_ERROR(s);
  *out = std::move(t);
  return Status::OK();
}

void TensorToProto(const Tensor& t, proto::TensorProto* p, bool use_tensor_content) {
  p->Clear();
  p->set_dtype(static_cast<proto::DataType>(t.dtype()));
  ShapeToProto(t.shape(), p->mutable_tensor_shape());
  const int64_t n = t.NumElements();
  if (t.dtype() == DT_STRING) {
    for (int64_t i = 0; i < n; ++i) p->add_string_val(t.data<std::string>()[i]);
    return;
  }
  if (use_tensor_content) {
    if (n > 0) p->set_tensor_content(t.raw_data(), t.TotalBytes());
    return;
  }
  switch (t.dtype()) {
    case DT_FLOAT: for (int64_t i = 0; i < n; ++i) p->add_float_val(t.data<float>()[i]); break;
    case DT_DOUBLE: for (int64_t i = 0; i < n; ++i) p->add_double_val(t.data<double>()[i]); break;
    case DT_INT32: for (int64_t i = 0; i < n; ++i) p->add_int_val(t.data<int32_t>()[i]); break;
    case DT_UINT8: for (int64_t i = 0; i < n; ++i) p->add_int_val(t.data<uint8_t>()[i]); break;
    case DT_INT16: for (int64_t i = 0; i < n; ++i) p->add_int_val(t.data<int16_t>()[i]); break;
    case DT_INT8: for (int64_t i = 0; i < n; ++i) p->add_int_val(t.data<int8_t>()[i]); break;
    case DT_UINT16: for (int64_t i = 0; i < n; ++i) p->add_int_val(t.data<uint16_t>()[i]); break;
    case DT_INT64: for (int64_t i = 0; i < n; ++i) p->add_int64_val(t.data<int64_t>()[i]); break;
    case DT_BOOL: for (int64_t i = 0; i < n; ++i) p->add_bool_val(t.data<bool>()[i]); break;
    case DT_UINT32: for (int64_t i = 0; i < n; ++i) p->add_uint32_val(t.data<uint32_t>()[i]); break;
    case DT_UINT64: for (int64_t i = 0; i < n; ++i) p->add_uint64_val(t.data<uint64_t>()[i]); break;
    default: if (n > 0) p->set_tensor_content(t.raw_data(), t.TotalBytes()); break;
  }
}

}  // namespace actorflow
