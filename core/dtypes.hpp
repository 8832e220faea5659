// Element types of tensors.
//
// DataType's numbers are TensorFlow's (core/proto/types.proto), so a value read
// from a GraphDef converts with a static_cast. Append-only: a retired type stays
// as a comment. Kernels dispatch on the runtime DataType with AF_SWITCH_TYPES.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actorflow {

enum DataType : int32_t {
  DT_INVALID = 0,
  DT_FLOAT = 1,
  DT_DOUBLE = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 5,
  DT_INT8 = 6,
  DT_STRING = 7,
  DT_COMPLEX64 = 8,  // loaded from GraphDefs, no kernels
  DT_INT64 = 9,
  DT_BOOL = 10,
  DT_BFLOAT16 = 14,  // loaded from GraphDefs, no kernels
  DT_UINT16 = 17,
  DT_COMPLEX128 = 18,  // loaded from GraphDefs, no kernels
  DT_HALF = 19,        // loaded from GraphDefs, no kernels
  DT_RESOURCE = 20,
  DT_VARIANT = 21,
  DT_UINT32 = 22,
  DT_UINT64 = 23,
  // Reference types: a DT_X_REF output refers to mutable state (a variable).
  DT_FLOAT_REF = 101,
};

constexpr int kDataTypeRefOffset = 100;
inline bool IsRefType(DataType t) { return t > kDataTypeRefOffset; }
inline DataType BaseType(DataType t) {
  return IsRefType(t) ? static_cast<DataType>(t - kDataTypeRefOffset) : t;
}
inline DataType MakeRefType(DataType t) {
  return IsRefType(t) ? t : static_cast<DataType>(t + kDataTypeRefOffset);
}

/// Short name as TensorFlow's op specs write it: "float", "int32", "string"...
std::string DataTypeString(DataType t);
/// Proto enum name: "DT_FLOAT".
std::string DataTypeEnumName(DataType t);
/// Accepts "float", "float32", "DT_FLOAT", "int32", ... false when unknown.
bool DataTypeFromString(std::string_view s, DataType* t);
/// Size in bytes of one element; 0 for types without a fixed-size layout (string).
size_t DataTypeSize(DataType t);
/// True for types whose elements are plain bytes (memcpy-able).
bool DataTypeIsPod(DataType t);
/// Types that actorflow's tensors can hold.
bool DataTypeIsSupported(DataType t);
/// Types whose elements are std::strings: DT_STRING, and DT_RESOURCE (a
/// resource tensor holds the encoded ResourceHandle, core/resource_handle.hpp).
inline bool DataTypeIsStringLike(DataType t) {
  t = BaseType(t);
  return t == DT_STRING || t == DT_RESOURCE;
}
std::string DataTypeSliceString(const std::vector<DataType>& types);

/// Compile-time mapping C++ type -> DataType.
template <class T> struct DataTypeToEnum;
#define AF_MATCH_TYPE_AND_ENUM(TYPE, ENUM)                          \
  template <> struct DataTypeToEnum<TYPE> {                         \
    static constexpr DataType value = ENUM;                         \
  };
AF_MATCH_TYPE_AND_ENUM(float, DT_FLOAT)
AF_MATCH_TYPE_AND_ENUM(double, DT_DOUBLE)
AF_MATCH_TYPE_AND_ENUM(int32_t, DT_INT32)
AF_MATCH_TYPE_AND_ENUM(int64_t, DT_INT64)
AF_MATCH_TYPE_AND_ENUM(uint8_t, DT_UINT8)
AF_MATCH_TYPE_AND_ENUM(int16_t, DT_INT16)
AF_MATCH_TYPE_AND_ENUM(int8_t, DT_INT8)
AF_MATCH_TYPE_AND_ENUM(uint16_t, DT_UINT16)
AF_MATCH_TYPE_AND_ENUM(uint32_t, DT_UINT32)
AF_MATCH_TYPE_AND_ENUM(uint64_t, DT_UINT64)
AF_MATCH_TYPE_AND_ENUM(bool, DT_BOOL)
AF_MATCH_TYPE_AND_ENUM(std::string, DT_STRING)
#undef AF_MATCH_TYPE_AND_ENUM

}  // namespace actorflow

// Runtime dtype dispatch. Inside BODY, `T` names the C++ element type.
// Each family lists the types it instantiates, so kernels pay compile time only
// for what they support; an unlisted dtype runs DEFAULT.
#define AF_CASE_TYPE(ENUM, TYPE, ...) \
  case ENUM: {                        \
    using T = TYPE;                   \
    __VA_ARGS__;                      \
    break;                            \
  }
// Case lists, composed into the switches below.
#define AF_CASES_FLOAT(...)                                     \
  AF_CASE_TYPE(::actorflow::DT_FLOAT, float, __VA_ARGS__)       \
  AF_CASE_TYPE(::actorflow::DT_DOUBLE, double, __VA_ARGS__)
#define AF_CASES_REAL(...)                                      \
  AF_CASES_FLOAT(__VA_ARGS__)                                   \
  AF_CASE_TYPE(::actorflow::DT_INT32, int32_t, __VA_ARGS__)     \
  AF_CASE_TYPE(::actorflow::DT_INT64, int64_t, __VA_ARGS__)
#define AF_CASES_NUMBER(...)                                    \
  AF_CASES_REAL(__VA_ARGS__)                                    \
  AF_CASE_TYPE(::actorflow::DT_UINT8, uint8_t, __VA_ARGS__)     \
  AF_CASE_TYPE(::actorflow::DT_INT16, int16_t, __VA_ARGS__)     \
  AF_CASE_TYPE(::actorflow::DT_INT8, int8_t, __VA_ARGS__)       \
  AF_CASE_TYPE(::actorflow::DT_UINT16, uint16_t, __VA_ARGS__)   \
  AF_CASE_TYPE(::actorflow::DT_UINT32, uint32_t, __VA_ARGS__)   \
  AF_CASE_TYPE(::actorflow::DT_UINT64, uint64_t, __VA_ARGS__)

#define AF_SWITCH_FLOAT(dtype, DEFAULT, ...) \
  switch (dtype) {                           \
    AF_CASES_FLOAT(__VA_ARGS__)              \
    default: DEFAULT;                        \
  }
#define AF_SWITCH_REAL(dtype, DEFAULT, ...) \
  switch (dtype) {                          \
    AF_CASES_REAL(__VA_ARGS__)              \
    default: DEFAULT;                       \
  }
#define AF_SWITCH_NUMBER(dtype, DEFAULT, ...) \
  switch (dtype) {                            \
    AF_CASES_NUMBER(__VA_ARGS__)              \
    default: DEFAULT;                         \
  }
#define AF_SWITCH_ALL(dtype, DEFAULT, ...)                            \
  switch (dtype) {                                                    \
    AF_CASES_NUMBER(__VA_ARGS__)                                      \
    AF_CASE_TYPE(::actorflow::DT_BOOL, bool, __VA_ARGS__)             \
    AF_CASE_TYPE(::actorflow::DT_STRING, std::string, __VA_ARGS__)    \
    default: DEFAULT;                                                 \
  }
