#include "actorflow/client/ops/reader_ops.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }
Output Second(const Operation& op) { return op.node() ? Output(op.node(), 1) : Output(); }

AttrMap Common(const ReaderOptions& o) {
  return {{"container", AttrString(o.container)}, {"shared_name", AttrString(o.shared_name)}};
}
AttrMap Common(const FileReaderOptions& o) {
  AttrMap attrs = Common(static_cast<const ReaderOptions&>(o));
  if (o.max_record_bytes != 0) attrs["max_record_bytes"] = AttrInt(o.max_record_bytes);
  return attrs;
}
}  // namespace

Output TFRecordReader(const Scope& s, const TFRecordReaderOptions& o) {
  AttrMap attrs = Common(o);
  attrs["compression_type"] = AttrString(o.compression_type);
  return First(s.AddOp("TFRecordReaderV2", {}, attrs));
}

Output TextLineReader(const Scope& s, const TextLineReaderOptions& o) {
  AttrMap attrs = Common(o);
  attrs["skip_header_lines"] = AttrInt(o.skip_header_lines);
  if (!o.compression_type.empty()) attrs["compression_type"] = AttrString(o.compression_type);
  return First(s.AddOp("TextLineReaderV2", {}, attrs));
}

Output FixedLengthRecordReader(const Scope& s, const FixedLengthRecordReaderOptions& o) {
  AttrMap attrs = Common(o);
  attrs["header_bytes"] = AttrInt(o.header_bytes);
  attrs["record_bytes"] = AttrInt(o.record_bytes);
  attrs["footer_bytes"] = AttrInt(o.footer_bytes);
  attrs["hop_bytes"] = AttrInt(o.hop_bytes);
  attrs["encoding"] = AttrString(o.encoding);
  return First(s.AddOp("FixedLengthRecordReaderV2", {}, attrs));
}

Output IdentityReader(const Scope& s, const ReaderOptions& o) {
  return First(s.AddOp("IdentityReaderV2", {}, Common(o)));
}

ReaderReadOutput ReaderRead(const Scope& s, Input reader, Input queue) {
  Operation op = s.AddOp("ReaderReadV2", {{s.AsOutput(reader)}, {s.AsOutput(queue)}});
  return {First(op), Second(op)};
}

ReaderReadUpToOutput ReaderReadUpTo(const Scope& s, Input reader, Input queue, Input num_records) {
  Operation op =
      s.AddOp("ReaderReadUpToV2", {{s.AsOutput(reader)}, {s.AsOutput(queue)}, {s.AsOutput(num_records)}});
  return {First(op), Second(op)};
}

Output ReaderNumRecordsProduced(const Scope& s, Input reader) {
  return First(s.AddOp("ReaderNumRecordsProducedV2", {{s.AsOutput(reader)}}));
}

Output ReaderNumWorkUnitsCompleted(const Scope& s, Input reader) {
  return First(s.AddOp("ReaderNumWorkUnitsCompletedV2", {{s.AsOutput(reader)}}));
}

Operation ReaderReset(const Scope& s, Input reader) { return s.AddOp("ReaderResetV2", {{s.AsOutput(reader)}}); }

}  // namespace ops
}  // namespace actorflow
