#include "actorflow/core/io/record_reader.hpp"

#include <cstdint>

#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/record_writer.hpp"

namespace actorflow {
namespace io {
Status RecordReaderOptions::Validate() const {
  AF_RETURN_IF_ERROR(CheckBufferBytes("RecordReaderOptions::buffer_bytes", buffer_bytes));
  if (max_record_bytes == 0) return errors::InvalidArgument("RecordReaderOptions::max_record_bytes must be > 0");
  return Status::OK();
}

Status RecordReader::Open(const std::string& path, const RecordReaderOptions& options,
                          std::unique_ptr<RecordReader>* out) {
  AF_RETURN_IF_ERROR(options.Validate().WithContext("reading TFRecord file '" + path + "'"));
  std::unique_ptr<BufferedInputStream> in;
  AF_RETURN_IF_ERROR(BufferedInputStream::Open(path, options.compression, &in, options.buffer_bytes));
  *out = std::make_unique<RecordReader>(std::move(in), options.max_record_bytes);
  return Status::OK();
}

Status RecordReader::Open(const std::string& path, Compression compression, std::unique_ptr<RecordReader>* out,
                          size_t buffer_bytes) {
  RecordReaderOptions options;
  options.compression = compression;
  options.buffer_bytes = buffer_bytes;
  return Open(path, options, out);
}

Status RecordReader::Damaged(const std::string& what) const {
  return errors::DataLoss(what, " at offset ", offset_, " of TFRecord file '", in_->filename(), "'");
}

Status RecordReader::ReadRecord(std::string* record) {
  AF_RETURN_IF_ERROR(status_);
  record->clear();
  Status s = in_->ReadNBytes(kRecordHeaderBytes, &header_);
  if (!s.ok()) {
    if (!errors::IsOutOfRange(s)) return status_ = s;
    if (header_.empty()) return status_ = errors::OutOfRange("end of TFRecord file '", in_->filename(), "'");
    return status_ = Damaged("truncated record (a partial length)");
  }
  const uint64_t length = fixed::DecodeFixed64(header_.data());
  const uint32_t length_crc = crc32c::Unmask(fixed::DecodeFixed32(header_.data() + sizeof(uint64_t)));
  if (length_crc != crc32c::Value(header_.data(), sizeof(uint64_t)))
    return status_ = Damaged("corrupted record (length CRC mismatch)");
  // Bounded before anything is read for it: a gzip file of a few MB can
  // inflate to any length, and zeros inflate to a matching data CRC.
  if (length > max_record_bytes_)
    return status_ = RecordTooLong("TFRecord", length, max_record_bytes_, offset_, in_->filename());
  // The data and its CRC, read in one go (growing as bytes arrive).
  if (length > UINT64_MAX - kRecordFooterBytes) return status_ = Damaged("corrupted record (impossible length)");
  s = in_->AppendNBytes(length + kRecordFooterBytes, record);
  if (!s.ok()) {
    record->clear();
    if (!errors::IsOutOfRange(s)) return status_ = s;
    return status_ = Damaged(strings::StrCat("truncated record (", length, " bytes of data announced)"));
  }
  const size_t n = static_cast<size_t>(length);
  if (crc32c::Unmask(fixed::DecodeFixed32(record->data() + n)) != crc32c::Value(record->data(), n)) {
    record->clear();
    return status_ = Damaged("corrupted record (data CRC mismatch)");
  }
  record->resize(n);
  offset_ += kRecordHeaderBytes + length + kRecordFooterBytes;
  return Status::OK();
}

}  // namespace io
}  // namespace actorflow
