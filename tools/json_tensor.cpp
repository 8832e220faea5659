#include "tools/json_tensor.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace actorflow {
namespace {

using json = nlohmann::json;

// The dtype names of the JSON form; the first name of a dtype is the one
// TensorToJson writes.
struct JsonDtype {
  const char* name;
  DataType dtype = DT_INVALID;
};
constexpr JsonDtype kJsonDtypes[] = {
    {"float32", DT_FLOAT}, {"float", DT_FLOAT}, {"float64", DT_DOUBLE}, {"double", DT_DOUBLE},
    {"int32", DT_INT32},   {"int64", DT_INT64}, {"uint8", DT_UINT8},    {"bool", DT_BOOL},
    {"string", DT_STRING}, {"int8", DT_INT8},   {"int16", DT_INT16},    {"uint16", DT_UINT16},
    {"uint32", DT_UINT32}, {"uint64", DT_UINT64},
};

// The deepest nesting of a nested array: TensorFlow's maximum rank.
constexpr int kMaxRank = 254;

bool DtypeFromName(const std::string& name, DataType* dtype) {
  for (const auto& d : kJsonDtypes) {
    if (name == d.name) {
      *dtype = d.dtype;
      return true;
    }
  }
  return false;
}

std::string DtypeName(DataType dtype) {
  for (const auto& d : kJsonDtypes)
    if (d.dtype == dtype) return d.name;
  return dtype == DT_INVALID ? "invalid" : DataTypeString(dtype);
}

// Whether `v` nests arrays or objects more than `levels` deep; recurses at
// most `levels` deep itself.
bool NestedDeeperThan(const json& v, int levels) {
  if (!v.is_structured()) return false;
  if (levels == 0) return true;
  for (const auto& child : v)
    if (NestedDeeperThan(child, levels - 1)) return true;
  return false;
}

// ---------------------------------------------------------------------------
// One JSON value -> one element.

Status ElementError(const json& v, DataType dtype, const char* problem) {
  return errors::InvalidArgument(JsonSnippet(v), " ", problem, " ", DtypeName(dtype));
}

template <class T>
bool FitsIn(int64_t i) {
  if constexpr (std::is_signed_v<T>) {
    return i >= std::numeric_limits<T>::min() && i <= std::numeric_limits<T>::max();
  } else {
    return i >= 0 && static_cast<uint64_t>(i) <= std::numeric_limits<T>::max();
  }
}

template <class T>
Status IntegerFromJson(const json& v, T* out) {
  constexpr DataType dtype = DataTypeToEnum<T>::value;
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return ElementError(v, dtype, "is out of range for");
    *out = static_cast<T>(u);
    return Status::OK();
  }
  if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if (!FitsIn<T>(i)) return ElementError(v, dtype, "is out of range for");
    *out = static_cast<T>(i);
    return Status::OK();
  }
  return ElementError(v, dtype, "is not an integer, as needed for");
}

template <class T>
Status FloatFromJson(const json& v, T* out) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::abs(d) > static_cast<double>(std::numeric_limits<T>::max()))
      return ElementError(v, DataTypeToEnum<T>::value, "is out of range for");
    *out = static_cast<T>(d);
    return Status::OK();
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "nan") *out = std::numeric_limits<T>::quiet_NaN();
    else if (s == "inf") *out = std::numeric_limits<T>::infinity();
    else if (s == "-inf") *out = -std::numeric_limits<T>::infinity();
    else return ElementError(v, DataTypeToEnum<T>::value, "is not a number (or \"nan\", \"inf\", \"-inf\"), as needed for");
    return Status::OK();
  }
  return ElementError(v, DataTypeToEnum<T>::value, "is not a number, as needed for");
}

template <class T>
Status ElementFromJson(const json& v, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return ElementError(v, DT_BOOL, "is not a bool, as needed for");
    *out = v.get<bool>();
    return Status::OK();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return ElementError(v, DT_STRING, "is not a string, as needed for");
    *out = v.get<std::string>();
    return Status::OK();
  } else if constexpr (std::is_floating_point_v<T>) {
    return FloatFromJson(v, out);
  } else {
    return IntegerFromJson(v, out);
  }
}

// ---------------------------------------------------------------------------
// Flat list of JSON values -> tensor.

template <class T>
Status FillTensor(DataType dtype, const TensorShape& shape, const std::vector<const json*>& values, Tensor* out) {
  Tensor t(dtype, shape);
  T* data = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    Status s = ElementFromJson(*values[i], &data[i]);
    if (!s.ok()) return errors::InvalidArgument("element ", i, ": ", s.message());
  }
  *out = std::move(t);
  return Status::OK();
}

Status MakeTensor(DataType dtype, const TensorShape& shape, const std::vector<const json*>& values, Tensor* out) {
  switch (dtype) {
    case DT_FLOAT: return FillTensor<float>(dtype, shape, values, out);
    case DT_DOUBLE: return FillTensor<double>(dtype, shape, values, out);
    case DT_INT32: return FillTensor<int32_t>(dtype, shape, values, out);
    case DT_INT64: return FillTensor<int64_t>(dtype, shape, values, out);
    case DT_UINT8: return FillTensor<uint8_t>(dtype, shape, values, out);
    case DT_INT8: return FillTensor<int8_t>(dtype, shape, values, out);
    case DT_INT16: return FillTensor<int16_t>(dtype, shape, values, out);
    case DT_UINT16: return FillTensor<uint16_t>(dtype, shape, values, out);
    case DT_UINT32: return FillTensor<uint32_t>(dtype, shape, values, out);
    case DT_UINT64: return FillTensor<uint64_t>(dtype, shape, values, out);
    case DT_BOOL: return FillTensor<bool>(dtype, shape, values, out);
    case DT_STRING: return FillTensor<std::string>(dtype, shape, values, out);
    default: return errors::InvalidArgument("dtype ", DtypeName(dtype), " has no JSON form");
  }
}

// ---------------------------------------------------------------------------
// Explicit form: {"dtype": ..., "shape": [...], "values": [...]}.

Status ShapeFromJson(const json& j, TensorShape* shape) {
  if (!j.is_array()) return errors::InvalidArgument("\"shape\" must be an array of sizes, got ", JsonSnippet(j));
  std::vector<int64_t> dims;
  for (const auto& d : j) {
    int64_t size = -1;
    if (d.is_number_unsigned()) {
      size = d.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? d.get<int64_t>() : -1;
    } else if (d.is_number_integer()) {
      size = d.get<int64_t>();
    }
    if (size < 0) return errors::InvalidArgument("\"shape\" must hold non-negative integers, got ", JsonSnippet(j));
    dims.push_back(size);
  }
  return TensorShape::FromDims(dims, shape);
}

Status TensorFromObject(const json& j, Tensor* out) {
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (key != "dtype" && key != "shape" && key != "values")
      return errors::InvalidArgument("unknown key \"", key, "\" in tensor ", JsonSnippet(j),
                                     " (expected \"dtype\", \"shape\", \"values\")");
  }
  if (!j.contains("dtype") || !j.contains("shape") || !j.contains("values"))
    return errors::InvalidArgument("a tensor object needs \"dtype\", \"shape\" and \"values\", got ", JsonSnippet(j));

  const json& dtype_json = j["dtype"];
  DataType dtype = DT_INVALID;
  if (!dtype_json.is_string() || !DtypeFromName(dtype_json.get<std::string>(), &dtype))
    return errors::InvalidArgument("unknown dtype ", JsonSnippet(dtype_json),
                                   " (expected float32, float64, int32, int64, uint8, bool, string, int8, int16, "
                                   "uint16, uint32, uint64)");
  TensorShape shape;
  AF_RETURN_IF_ERROR(ShapeFromJson(j["shape"], &shape));

  const json& values_json = j["values"];
  if (!values_json.is_array())
    return errors::InvalidArgument("\"values\" must be a flat array, got ", JsonSnippet(values_json));
  if (static_cast<int64_t>(values_json.size()) != shape.num_elements())
    return errors::InvalidArgument("shape ", shape.DebugString(), " has ", shape.num_elements(), " elements but ",
                                   values_json.size(), " values are given (nothing is broadcast)");
  std::vector<const json*> values;
  values.reserve(values_json.size());
  for (const auto& v : values_json) values.push_back(&v);
  return MakeTensor(dtype, shape, values, out);
}

// ---------------------------------------------------------------------------
// Implicit form: a scalar or a rectangular nested array.

// The shape of a nested array, read along its first elements; at most
// kMaxRank dims, so that CollectLeaves recurses no deeper.
Status NestedDims(const json& j, std::vector<int64_t>* dims) {
  for (const json* cur = &j; cur->is_array(); cur = &(*cur)[0]) {
    if (dims->size() == kMaxRank)
      return errors::InvalidArgument("nested array is deeper than the maximum rank ", kMaxRank);
    dims->push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
  }
  return Status::OK();
}

// Appends the leaves of `node` (at `depth` of an array of shape `dims`) in
// row-major order; fails unless the array is rectangular.
Status CollectLeaves(const json& node, const std::vector<int64_t>& dims, size_t depth,
                     std::vector<const json*>* leaves) {
  if (depth == dims.size()) {
    if (node.is_array())
      return errors::InvalidArgument("not a rectangular array: ", JsonSnippet(node),
                                     " is nested deeper than its siblings");
    leaves->push_back(&node);
    return Status::OK();
  }
  if (!node.is_array() || static_cast<int64_t>(node.size()) != dims[depth])
    return errors::InvalidArgument("not a rectangular array: expected ", dims[depth], " elements at depth ", depth,
                                   ", got ", JsonSnippet(node));
  for (const auto& child : node) AF_RETURN_IF_ERROR(CollectLeaves(child, dims, depth + 1, leaves));
  return Status::OK();
}

// The dtype that the leaves' JSON types imply.
Status InferDtype(const json& j, const std::vector<const json*>& leaves, DataType* dtype) {
  bool any_int = false, any_float = false, any_bool = false, any_string = false;
  for (const json* v : leaves) {
    if (v->is_number_float()) any_float = true;
    else if (v->is_number()) any_int = true;
    else if (v->is_boolean()) any_bool = true;
    else if (v->is_string()) any_string = true;
    else return errors::InvalidArgument(JsonSnippet(*v), " is not a tensor element (number, bool or string)");
  }
  const bool any_number = any_int || any_float;
  if (any_number + any_bool + any_string > 1)
    return errors::InvalidArgument("elements mix numbers, bools and strings in ", JsonSnippet(j));
  if (any_bool) *dtype = DT_BOOL;
  else if (any_string) *dtype = DT_STRING;
  else if (any_int && !any_float) *dtype = DT_INT32;
  else *dtype = DT_FLOAT;  // floats, ints mixed with floats, or no elements at all
  return Status::OK();
}

Status TensorFromNested(const json& j, Tensor* out, DataType dtype) {
  std::vector<int64_t> dims;
  AF_RETURN_IF_ERROR(NestedDims(j, &dims));
  std::vector<const json*> leaves;
  AF_RETURN_IF_ERROR(CollectLeaves(j, dims, 0, &leaves));
  if (dtype == DT_INVALID) AF_RETURN_IF_ERROR(InferDtype(j, leaves, &dtype));
  TensorShape shape;
  AF_RETURN_IF_ERROR(TensorShape::FromDims(dims, &shape));
  return MakeTensor(dtype, shape, leaves, out);
}

// ---------------------------------------------------------------------------
// Tensor -> JSON.

// The double whose shortest decimal form is the float's shortest decimal
// form, so that 0.1f is written as 0.1 rather than 0.10000000149011612.
double FloatAsShortestDouble(float f) {
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof(buf), f).ptr;
  double d = f;
  std::from_chars(buf, end, d);
  return d;
}

template <class T>
json ElementToJson(const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if constexpr (std::is_same_v<T, float>) return FloatAsShortestDouble(v);
    else return v;
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <class T>
json ValuesToJson(const Tensor& t) {
  json values = json::array();
  const T* data = t.data<T>();
  for (int64_t i = 0; i < t.NumElements(); ++i) values.push_back(ElementToJson(data[i]));
  return values;
}

// The most bytes one element of type T takes in JSON, its comma included.
template <class T>
uint64_t ElementBytesBound(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return 3 + 6 * static_cast<uint64_t>(v.size());  // quotes, comma; "\u00XX" at worst per byte
  } else if constexpr (std::is_same_v<T, bool>) {
    return 6;  // false,
  } else if constexpr (std::is_floating_point_v<T>) {
    return 25;  // -2.2250738585072014e-308,
  } else {
    return 21;  // -9223372036854775808,
  }
}

// The flat indices AppendTensorJson writes: [0, n) whole, or the first and
// the last `edge` of a summary.
struct Written {
  int64_t first_end;   // [0, first_end)
  int64_t last_begin;  // [last_begin, n)
};

Written WrittenRange(const Tensor& t, const TensorJsonOptions& options) {
  const int64_t n = t.NumElements();
  if (!IsSummarized(t, options)) return {n, n};
  return {options.edge_items, n - options.edge_items};
}

template <class T>
uint64_t ValuesBytesBound(const Tensor& t, const Written& w) {
  const int64_t count = w.first_end + (t.NumElements() - w.last_begin);
  if constexpr (std::is_same_v<T, std::string>) {
    const T* data = t.data<T>();
    uint64_t bytes = 0;
    for (int64_t i = 0; i < w.first_end; ++i) bytes += ElementBytesBound(data[i]);
    for (int64_t i = w.last_begin; i < t.NumElements(); ++i) bytes += ElementBytesBound(data[i]);
    return bytes;
  } else {
    return static_cast<uint64_t>(count) * ElementBytesBound(T());
  }
}

template <class T>
void AppendValues(const Tensor& t, int64_t begin, int64_t end, std::string* out) {
  const T* data = t.data<T>();
  out->push_back('[');
  for (int64_t i = begin; i < end; ++i) {
    if (i > begin) out->push_back(',');
    *out += ElementToJson(data[i]).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out->push_back(']');
}

}  // namespace

bool IsSummarized(const Tensor& t, const TensorJsonOptions& options) {
  const int64_t n = t.NumElements();
  if (options.summarize_threshold < 0 || n <= options.summarize_threshold) return false;
  if (t.buffer() == nullptr) return false;  // no values to show: written as null
  return options.edge_items >= 0 && n / 2 > options.edge_items;
}

uint64_t TensorJsonBytesBound(const Tensor& t, const TensorJsonOptions& options) {
  // {"dtype":"...","shape":[...],"summarized":true,"first":,"last":} and the dims.
  uint64_t bytes = 96 + 21 * static_cast<uint64_t>(t.dims());
  if (t.buffer() == nullptr) return bytes;
  const Written w = WrittenRange(t, options);
  AF_SWITCH_ALL(t.dtype(), break, bytes += 4 + ValuesBytesBound<T>(t, w));
  return bytes;
}

void AppendTensorJson(const Tensor& t, const TensorJsonOptions& options, std::string* out) {
  *out += "{\"dtype\":";
  *out += json(DtypeName(t.dtype())).dump(-1, ' ', false, json::error_handler_t::replace);
  *out += ",\"shape\":[";
  for (int d = 0; d < t.dims(); ++d) {
    if (d > 0) out->push_back(',');
    *out += std::to_string(t.dim_size(d));
  }
  out->push_back(']');
  const int64_t n = t.NumElements();
  const bool has_values = t.buffer() != nullptr || n == 0;
  // Whether the dtype has a JSON form: one AF_SWITCH_ALL dispatches on (each
  // of whose element types T maps back to that dtype).
  bool known = false;
  AF_SWITCH_ALL(t.dtype(), break, known = DataTypeToEnum<T>::value == t.dtype());
  if (!has_values || !known) {
    *out += ",\"values\":null}";
    return;
  }
  if (IsSummarized(t, options)) {
    const Written w = WrittenRange(t, options);
    *out += ",\"summarized\":true,\"first\":";
    AF_SWITCH_ALL(t.dtype(), break, AppendValues<T>(t, 0, w.first_end, out));
    *out += ",\"last\":";
    AF_SWITCH_ALL(t.dtype(), break, AppendValues<T>(t, w.last_begin, n, out));
  } else {
    *out += ",\"values\":";
    AF_SWITCH_ALL(t.dtype(), break, AppendValues<T>(t, 0, n, out));
  }
  out->push_back('}');
}

std::string JsonSnippet(const json& v) {
  // dump() recurses once per level: too deep a value is not written out.
  if (NestedDeeperThan(v, kMaxRank)) return "(a value nested more than " + std::to_string(kMaxRank) + " levels deep)";
  constexpr size_t kMaxChars = 80;
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > kMaxChars) s = s.substr(0, kMaxChars) + "...";
  return s;
}

Status TensorFromJson(const json& j, Tensor* out, DataType implicit_dtype) {
  if (j.is_object()) return TensorFromObject(j, out);
  return TensorFromNested(j, out, implicit_dtype);
}

json TensorToJson(const Tensor& t) {
  json values = nullptr;
  if (t.buffer() != nullptr || t.NumElements() == 0) {
    AF_SWITCH_ALL(t.dtype(), break, values = ValuesToJson<T>(t));
  }
  json j;
  j["dtype"] = DtypeName(t.dtype());
  j["shape"] = t.shape().dim_sizes();
  j["values"] = std::move(values);
  return j;
}

}  // namespace actorflow
