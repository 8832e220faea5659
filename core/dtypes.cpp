#include "actorflow/core/dtypes.hpp"

#include <string>

namespace actorflow {

namespace {
struct TypeName {
  DataType type;
  const char* name;
  size_t size;
};
constexpr TypeName kTypes[] = {
    {DT_FLOAT, "float", 4},        {DT_DOUBLE, "double", 8},   {DT_INT32, "int32", 4},
    {DT_UINT8, "uint8", 1},        {DT_INT16, "int16", 2},     {DT_INT8, "int8", 1},
    {DT_STRING, "string", 0},      {DT_COMPLEX64, "complex64", 8},
    {DT_INT64, "int64", 8},        {DT_BOOL, "bool", 1},       {DT_BFLOAT16, "bfloat16", 2},
    {DT_UINT16, "uint16", 2},      {DT_COMPLEX128, "complex128", 16},
    {DT_HALF, "half", 2},          {DT_RESOURCE, "resource", 0},
    {DT_VARIANT, "variant", 0},    {DT_UINT32, "uint32", 4},   {DT_UINT64, "uint64", 8},
};

const TypeName* Find(DataType t) {
  for (const auto& e : kTypes)
    if (e.type == t) return &e;
  return nullptr;
}

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

// A ref type is one of the known types plus kDataTypeRefOffset, once; any
// other value (a GraphDef may hold any int32) is unknown, named without
// recursion.
std::string DataTypeString(DataType t) {
  const TypeName* e = Find(BaseType(t));
  if (e == nullptr) return "unknown dtype " + std::to_string(static_cast<int>(t));
  return IsRefType(t) ? std::string(e->name) + "_ref" : std::string(e->name);
}

std::string DataTypeEnumName(DataType t) {
  const TypeName* e = Find(BaseType(t));
  if (e == nullptr) return "DT_INVALID";
  return "DT_" + Upper(e->name) + (IsRefType(t) ? "_REF" : "");
}

bool DataTypeFromString(std::string_view s, DataType* t) {
  if (s == "float32") s = "float";
  if (s == "float64") s = "double";
  for (const auto& e : kTypes) {
    if (s == e.name || s == "DT_" + Upper(e.name)) {
      *t = e.type;
      return true;
    }
  }
  if (s.size() > 4 && s.substr(s.size() - 4) == "_ref") {
    DataType base;
    if (!DataTypeFromString(s.substr(0, s.size() - 4), &base)) return false;
    *t = MakeRefType(base);
    return true;
  }
  return false;
}

size_t DataTypeSize(DataType t) {
  const auto* e = Find(BaseType(t));
  return e ? e->size : 0;
}

bool DataTypeIsPod(DataType t) {
  t = BaseType(t);
  return t != DT_STRING && t != DT_RESOURCE && t != DT_VARIANT && DataTypeSize(t) > 0;
}

bool DataTypeIsSupported(DataType t) {
  switch (BaseType(t)) {
    case DT_FLOAT: case DT_DOUBLE: case DT_INT32: case DT_INT64: case DT_UINT8:
    case DT_INT16: case DT_INT8: case DT_UINT16: case DT_UINT32: case DT_UINT64:
    case DT_BOOL: case DT_STRING: case DT_RESOURCE:
      return true;
    default:
      return false;
  }
}

std::string DataTypeSliceString(const std::vector<DataType>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) out += ", ";
    out += DataTypeString(types[i]);
  }
  return out;
}

}  // namespace actorflow
