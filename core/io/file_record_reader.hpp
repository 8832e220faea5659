// FileRecordReader: the one interface of the three file-level readers that
// TensorFlow's reader ops hold (TFRecordReaderV2, TextLineReaderV2,
// FixedLengthRecordReaderV2): open a file, read its records one by one as
// (key, value) pairs, learn of its end by OutOfRange.
//
//   std::unique_ptr<FileRecordReader> reader;
//   AF_RETURN_IF_ERROR(TextLineReader::Create({/*skip_header_lines=*/1}, &reader));
//   AF_RETURN_IF_ERROR(reader->Open("data.csv"));
//   std::string key, value;
//   while ((s = reader->ReadRecord(&key, &value)).ok()) { ... }   // key "data.csv:2", ...
//
// Keys are "FILENAME:N" as TensorFlow makes them; what N counts is the
// reader's (a TFRecord's byte offset, a line's number, a fixed-length
// record's index). Implementations:
//   TFRecordFileReader        tfrecord_file_reader.hpp
//   TextLineReader            text_line_reader.hpp
//   FixedLengthRecordReader   fixed_length_record_reader.hpp
//
// Not thread-safe: a reader op serializes its calls. Errors name the file.
#pragma once

#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace io {

class FileRecordReader {
 public:
  virtual ~FileRecordReader() = default;
  /// Starts reading `filename` from its beginning, closing any file read
  /// before: NotFound, PermissionDenied, DataLoss ... naming the file.
  virtual Status Open(const std::string& filename) = 0;
  /// The next record of the open file: *key names it, *value holds its bytes.
  /// OutOfRange at the end of the file (and at every call after it),
  /// DataLoss naming the file and offset for a damaged one,
  /// FailedPrecondition when no file is open.
  virtual Status ReadRecord(std::string* key, std::string* value) = 0;
  /// Closes the open file, if any.
  virtual void Close() = 0;
  /// The open file ("" when none).
  virtual const std::string& filename() const = 0;
};

}  // namespace io
}  // namespace actorflow
