// RecordReader: reads a TFRecord file (the format of record_writer.hpp) front
// to back, checking both CRCs of every record, as TensorFlow's
// io::SequentialRecordReader does.
//
//   std::unique_ptr<RecordReader> reader;
//   AF_RETURN_IF_ERROR(RecordReader::Open("train.tfrecord", Compression::kNone, &reader));
//   std::string record;
//   Status s;
//   while ((s = reader->ReadRecord(&record)).ok()) { ... }
//   if (!errors::IsOutOfRange(s)) return s;       // DataLoss: a damaged file
//
// ReadRecord returns OutOfRange at a clean end of the file (after the last
// whole record) and DataLoss, naming the file and the byte offset of the
// record (in the decompressed stream for a compressed file), for
//  - a length whose CRC does not match ("corrupted length"),
//  - data whose CRC does not match ("corrupted data"),
//  - a record cut short: part of a length, or less data than the length says
//    ("truncated record"),
//  - a length over the options' max_record_bytes (record_limits.hpp; 256 MiB
//    by default), refused before anything is read or allocated for the record.
// An error is sticky: later calls return it again. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "actorflow/core/io/buffered_input_stream.hpp"
#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/record_limits.hpp"

namespace actorflow {
namespace io {

/// How a TFRecord file is read (TensorFlow's io::RecordReaderOptions).
struct RecordReaderOptions {
  Compression compression = Compression::kNone;
  size_t buffer_bytes = BufferedInputStream::kDefaultBufferBytes;  ///< in [1, kMaxBufferBytes]
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;              ///< the longest record's data; > 0

  /// InvalidArgument naming the option for a buffer_bytes or max_record_bytes out of range.
  Status Validate() const;
};

class RecordReader {
 public:
  static Status Open(const std::string& path, const RecordReaderOptions& options, std::unique_ptr<RecordReader>* out);
  static Status Open(const std::string& path, Compression compression, std::unique_ptr<RecordReader>* out,
                     size_t buffer_bytes = BufferedInputStream::kDefaultBufferBytes);
  explicit RecordReader(std::unique_ptr<BufferedInputStream> in, uint64_t max_record_bytes = kDefaultMaxRecordBytes)
      : in_(std::move(in)), max_record_bytes_(max_record_bytes) {}

  /// The next record into *record; OutOfRange at the end, DataLoss for damage.
  Status ReadRecord(std::string* record);
  /// The offset of the next record: the file's size once all are read.
  uint64_t offset() const { return offset_; }
  const std::string& filename() const { return in_->filename(); }

 private:
  Status Damaged(const std::string& what) const;

  std::unique_ptr<BufferedInputStream> in_;
  const uint64_t max_record_bytes_;
  uint64_t offset_ = 0;
  Status status_;  // sticky: the first error (OutOfRange at the end)
  std::string header_;
};

}  // namespace io
}  // namespace actorflow
