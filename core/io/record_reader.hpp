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
//    ("truncated record").
// An error is sticky: later calls return it again. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/io/buffered_input_stream.hpp"
#include "core/io/compression.hpp"

namespace actorflow {
namespace io {

class RecordReader {
 public:
  static Status Open(const std::string& path, Compression compression, std::unique_ptr<RecordReader>* out,
                     size_t buffer_bytes = BufferedInputStream::kDefaultBufferBytes);
  explicit RecordReader(std::unique_ptr<BufferedInputStream> in) : in_(std::move(in)) {}

  /// The next record into *record; OutOfRange at the end, DataLoss for damage.
  Status ReadRecord(std::string* record);
  /// The offset of the next record: the file's size once all are read.
  uint64_t offset() const { return offset_; }
  const std::string& filename() const { return in_->filename(); }

 private:
  Status Damaged(const std::string& what) const;

  std::unique_ptr<BufferedInputStream> in_;
  uint64_t offset_ = 0;
  Status status_;  // sticky: the first error (OutOfRange at the end)
  std::string header_;
};

}  // namespace io
}  // namespace actorflow
