#include "actorflow/core/io/fixed_length_record_reader.hpp"

#include <algorithm>

namespace actorflow {
namespace io {

Status FixedLengthRecordReader::Create(const Options& options, std::unique_ptr<FileRecordReader>* out) {
  // Each size is checked alone before any is added to another: the sum of two
  // int64 attrs can overflow, and record_bytes + footer_bytes is allocated.
  const uint64_t max = options.max_record_bytes;
  if (max == 0) return errors::InvalidArgument("max_record_bytes must be > 0, got 0");
  auto check = [max](const char* name, int64_t v, int64_t least) {
    if (v < least) return errors::InvalidArgument(name, " must be >= ", least, ", got ", v);
    if (static_cast<uint64_t>(v) > max)
      return errors::InvalidArgument(name, " is ", v, ", more than max_record_bytes (", max, ")");
    return Status::OK();
  };
  AF_RETURN_IF_ERROR(check("header_bytes", options.header_bytes, 0));
  AF_RETURN_IF_ERROR(check("record_bytes", options.record_bytes, 1));
  AF_RETURN_IF_ERROR(check("footer_bytes", options.footer_bytes, 0));
  AF_RETURN_IF_ERROR(check("hop_bytes", options.hop_bytes, 0));
  // Both are int64 >= 0 by now: their sum fits in uint64.
  if (static_cast<uint64_t>(options.record_bytes) + static_cast<uint64_t>(options.footer_bytes) > max)
    return errors::InvalidArgument("record_bytes + footer_bytes (", options.record_bytes, " + ", options.footer_bytes,
                                   ") is more than max_record_bytes (", max, ")");
  *out = std::make_unique<FixedLengthRecordReader>(options);
  return Status::OK();
}

FixedLengthRecordReader::FixedLengthRecordReader(const Options& options)
    : options_(options),
      hop_(static_cast<uint64_t>(options.hop_bytes == 0 ? options.record_bytes : options.hop_bytes)) {}

Status FixedLengthRecordReader::Open(const std::string& filename) {
  Close();
  std::unique_ptr<BufferedInputStream> in;
  AF_RETURN_IF_ERROR(BufferedInputStream::Open(filename, options_.compression, &in));
  const Status s = in->SkipNBytes(static_cast<uint64_t>(options_.header_bytes));
  if (errors::IsOutOfRange(s))
    return errors::DataLoss("'", filename, "' has ", in->Tell(), " bytes, fewer than its header_bytes (",
                            options_.header_bytes, ")");
  AF_RETURN_IF_ERROR(s);
  in_ = std::move(in);
  filename_ = filename;
  start_ = static_cast<uint64_t>(options_.header_bytes);
  return Status::OK();
}

Status FixedLengthRecordReader::AtEnd(uint64_t start, uint64_t available) {
  // The record data ends where the footer starts. Bytes past both this
  // record's start and the end of the record before it belong to no whole
  // record: a truncated one. Less is a clean end (at most a gap between records).
  const uint64_t footer = static_cast<uint64_t>(options_.footer_bytes);
  const uint64_t record = static_cast<uint64_t>(options_.record_bytes);
  const uint64_t data_end = start + available - std::min(available, footer);
  uint64_t covered = start;  // where the data read so far ends
  if (record_number_ > 0) covered = std::max(start, start - hop_ + record);
  if (data_end <= covered) return errors::OutOfRange("end of '", filename_, "'");
  return errors::DataLoss("'", filename_, "' ends with ", data_end - covered,
                          " bytes that make no whole record at offset ", covered, " (header_bytes ",
                          options_.header_bytes, ", record_bytes ", record, ", hop_bytes ", hop_, ", footer_bytes ",
                          footer, "): truncated record ", record_number_);
}

Status FixedLengthRecordReader::ReadRecord(std::string* key, std::string* value) {
  if (!in_) return errors::FailedPrecondition("FixedLengthRecord reader: no file is open");
  AF_RETURN_IF_ERROR(status_);
  uint64_t start = start_;
  if (record_number_ > 0) {
    start += hop_;
    if (hop_ <= lookahead_.size()) {
      lookahead_.erase(0, static_cast<size_t>(hop_));
    } else {
      const uint64_t skip = hop_ - lookahead_.size();
      lookahead_.clear();
      const Status s = in_->SkipNBytes(skip);
      if (errors::IsOutOfRange(s)) return status_ = errors::OutOfRange("end of '", filename_, "'");
      if (!s.ok()) return status_ = s;
    }
  }
  // Create bounded both by max_record_bytes: the sum neither overflows nor is large.
  const size_t want = static_cast<size_t>(static_cast<uint64_t>(options_.record_bytes) +
                                          static_cast<uint64_t>(options_.footer_bytes));
  const Status s = in_->AppendNBytes(want - lookahead_.size(), &lookahead_);
  if (errors::IsOutOfRange(s)) return status_ = AtEnd(start, lookahead_.size());
  if (!s.ok()) return status_ = s;
  value->assign(lookahead_, 0, static_cast<size_t>(options_.record_bytes));
  *key = filename_ + ":" + std::to_string(record_number_);
  ++record_number_;
  start_ = start;
  return Status::OK();
}

void FixedLengthRecordReader::Close() {
  in_.reset();
  filename_.clear();
  lookahead_.clear();
  record_number_ = 0;
  start_ = 0;
  status_ = Status::OK();
}

}  // namespace io
}  // namespace actorflow
