// TFRecordFileReader: the FileRecordReader of TFRecord files, what
// TensorFlow's TFRecordReaderV2 op reads with (its compression_type attr:
// "", "GZIP" or "ZLIB"). A record's key is "FILENAME:OFFSET", the byte offset
// of the record in the (decompressed) file, as TensorFlow's; its value is the
// record's data, both CRCs checked (record_reader.hpp). A record longer than
// `max_record_bytes` is DataLoss naming the file and its offset, refused
// before it is read (record_limits.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/file_record_reader.hpp"
#include "actorflow/core/io/record_limits.hpp"
#include "actorflow/core/io/record_reader.hpp"

namespace actorflow {
namespace io {

class TFRecordFileReader : public FileRecordReader {
 public:
  struct Options {
    Compression compression = Compression::kNone;
    uint64_t max_record_bytes = kDefaultMaxRecordBytes;  ///< > 0
  };
  /// InvalidArgument for a max_record_bytes of 0.
  static Status Create(const Options& options, std::unique_ptr<FileRecordReader>* out);
  explicit TFRecordFileReader(const Options& options) : options_(options) {}

  Status Open(const std::string& filename) override;
  Status ReadRecord(std::string* key, std::string* value) override;
  void Close() override;
  const std::string& filename() const override { return filename_; }

 private:
  const Options options_;
  std::string filename_;
  std::unique_ptr<RecordReader> reader_;
};

}  // namespace io
}  // namespace actorflow
