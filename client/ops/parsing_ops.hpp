// Builder functions for the parsing ops (ops/parsing/): decoding records read
// from files into tensors.
//
//   Scope root = Scope::NewRootScope();
//   auto lines = ops::Placeholder(root.WithOpName("lines"), DT_STRING);
//   // Columns "label,x,name": an int32 that must be there, a float defaulting to 0, a string.
//   auto cols = ops::DecodeCSV(root, lines, {Tensor(DT_INT32, TensorShape{0}), 0.f, std::string("?")});
//   auto raw = ops::DecodeRaw(root, records, DT_UINT8);        // [n] strings -> [n, length]
//   auto x = ops::StringToNumber(root, texts, DT_FLOAT);
#pragma once

#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

/// DecodeCSV's optional attrs, with TensorFlow's defaults.
struct DecodeCSVOptions {
  std::string field_delim = ",";
  bool use_quote_delim = true;
  std::string na_value;
  std::vector<int64_t> select_cols;  ///< empty: every column
};

/// One output per column of the CSV `records`, of the dtype of its default
/// (a scalar, or an empty vector for a required field).
std::vector<Output> DecodeCSV(const Scope& s, Input records, const std::vector<Input>& record_defaults,
                              const DecodeCSVOptions& options = DecodeCSVOptions());
/// The bytes of each string of `bytes` as a vector of `out_type`.
Output DecodeRaw(const Scope& s, Input bytes, DataType out_type, bool little_endian = true);
/// Each string of `string_tensor` parsed as a number of `out_type`.
Output StringToNumber(const Scope& s, Input string_tensor, DataType out_type = DT_FLOAT);

}  // namespace ops
}  // namespace actorflow
