#include "actorflow/client/ops/parsing_ops.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

std::vector<Output> DecodeCSV(const Scope& s, Input records, const std::vector<Input>& record_defaults,
                              const DecodeCSVOptions& options) {
  OutputList defaults;
  for (const auto& d : record_defaults) defaults.push_back(s.AsOutput(d));
  Operation op = s.AddOp("DecodeCSV", {{s.AsOutput(records)}, defaults},
                         {{"field_delim", AttrString(options.field_delim)},
                          {"use_quote_delim", AttrBool(options.use_quote_delim)},
                          {"na_value", AttrString(options.na_value)},
                          {"select_cols", AttrIntList(options.select_cols)}});
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

Output DecodeRaw(const Scope& s, Input bytes, DataType out_type, bool little_endian) {
  Operation op = s.AddOp("DecodeRaw", {{s.AsOutput(bytes)}},
                         {{"out_type", AttrType(out_type)}, {"little_endian", AttrBool(little_endian)}});
  return op.node() ? op.output(0) : Output();
}

Output StringToNumber(const Scope& s, Input string_tensor, DataType out_type) {
  Operation op = s.AddOp("StringToNumber", {{s.AsOutput(string_tensor)}}, {{"out_type", AttrType(out_type)}});
  return op.node() ? op.output(0) : Output();
}

}  // namespace ops
}  // namespace actorflow
