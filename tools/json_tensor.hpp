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
//
// A fetched tensor too large to print whole is summarised, as numpy and
// tf.print do (AppendTensorJson): its dtype and shape, "summarized": true,
// and its first and last values, flat in row-major order.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

/// Builds a tensor from either JSON form; InvalidArgument naming the offending
/// value when the JSON does not describe a tensor. `implicit_dtype` (when not
/// DT_INVALID) is the dtype of a tensor in the implicit form, instead of the
/// one its elements suggest: [[1, 2]] for a float32 placeholder is float32;
/// a value that dtype cannot hold (1.5 as int32, "a" as float32) is an error.
/// The explicit form keeps its own dtype.
Status TensorFromJson(const nlohmann::json& j, Tensor* out, DataType implicit_dtype = DT_INVALID);
/// Whether `j` is in the implicit form (its dtype follows from its elements).
inline bool IsImplicitTensorJson(const nlohmann::json& j) { return !j.is_object(); }

/// {"dtype": "float32", "shape": [2], "values": [1.5, "nan"]}: values flat in
/// row-major order, non-finite floats as "nan", "inf", "-inf". Dtypes without
/// a JSON form (resource, variant, ...) get "values": null.
nlohmann::json TensorToJson(const Tensor& t);

/// How AppendTensorJson writes a tensor's values.
struct TensorJsonOptions {
  /// A tensor with more elements than this (numpy's print threshold), and
  /// more than 2 * edge_items, is summarised; negative: none is.
  int64_t summarize_threshold = 1000;
  /// The values written at each end of a summarised tensor (numpy's edgeitems).
  int64_t edge_items = 3;
};

/// Whether AppendTensorJson summarises `t` under `options`.
bool IsSummarized(const Tensor& t, const TensorJsonOptions& options);

/// The most bytes AppendTensorJson may write for `t`: what a caller checks
/// against the memory at hand before writing. Linear in the number of
/// strings written, constant time for other dtypes.
uint64_t TensorJsonBytesBound(const Tensor& t, const TensorJsonOptions& options);

/// Appends the JSON text of `t` to `out` without building a JSON document:
/// TensorToJson's form, or when summarised
///   {"dtype":"int32","shape":[2000000],"summarized":true,"first":[0,1,2],"last":[1999997,1999998,1999999]}
/// Invalid UTF-8 in strings is replaced. Throws std::bad_alloc (only) when
/// `out` cannot grow: the caller turns that into a Status.
void AppendTensorJson(const Tensor& t, const TensorJsonOptions& options, std::string* out);

/// The JSON text of `v` for error messages: shortened when long, never
/// throwing (invalid UTF-8 is replaced) and never recursing deeply.
std::string JsonSnippet(const nlohmann::json& v);

}  // namespace actorflow
