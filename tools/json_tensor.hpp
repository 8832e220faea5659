// JSON <-> Tensor conversion for the actorflow command-line tool.
//
// A tensor is written in JSON in one of two forms:
//
//   * implicit: a scalar or a rectangular nested array, whose dtype follows
//     from its elements: JSON float -> float32, integer -> int32, bool -> bool,
//     string -> string; ints mixed with floats -> float32; [] -> float32 [0].
//       3.5   [1, 2, 3]   [[true, false], [false, true]]   ["a", "b"]
//
//   * explicit: an object with the dtype, the shape and the values, flat in
//     row-major order; the shape must hold exactly as many elements as there
//     are values (nothing is broadcast).
//       {"dtype": "float64", "shape": [2, 2], "values": [1, 2, 3, 4]}
//
// Dtype names: float32 (float), float64 (double), int32, int64, uint8, bool,
// string, int8, int16, uint16, uint32, uint64. Floating-point values may also
// be the strings "nan", "inf" and "-inf", which is how TensorToJson writes
// non-finite values. A nested array is at most 254 levels deep (TensorFlow's
// maximum rank).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "core/tensor.hpp"

namespace actorflow {

/// Builds a tensor from either JSON form; InvalidArgument naming the offending
/// value when the JSON does not describe a tensor.
Status TensorFromJson(const nlohmann::json& j, Tensor* out);

/// {"dtype": "float32", "shape": [2], "values": [1.5, "nan"]}: values flat in
/// row-major order, non-finite floats as "nan", "inf", "-inf". Dtypes without
/// a JSON form (resource, variant, ...) get "values": null.
nlohmann::json TensorToJson(const Tensor& t);

/// The JSON text of `v` for error messages: shortened when long, never
/// throwing (invalid UTF-8 is replaced) and never recursing deeply.
std::string JsonSnippet(const nlohmann::json& v);

}  // namespace actorflow
