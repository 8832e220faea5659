// TextLineReader: the FileRecordReader of text files, one record per line,
// what TensorFlow's TextLineReaderV2 op reads with. Lines are split as
// BufferedInputStream::ReadLine splits them (TensorFlow's InputBuffer): at
// '\n', one '\r' before it dropped, a last line without '\n' kept when not
// empty. The first `skip_header_lines` lines are skipped when the file is
// opened (a file with fewer lines has no records). A record's key is
// "FILENAME:LINE", the line's number counted from 1 with the header lines
// included, as TensorFlow's. A line longer than `max_record_bytes` (header
// lines too) is DataLoss naming the file and the line's offset, found before
// more than that is held (record_limits.hpp); the error stays until Open.
//
// `compression` (GZIP or ZLIB) reads compressed text; TensorFlow's op has no
// such attr (its TextLineDataset has compression_type), so the op passes kNone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "actorflow/core/io/buffered_input_stream.hpp"
#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/file_record_reader.hpp"
#include "actorflow/core/io/record_limits.hpp"

namespace actorflow {
namespace io {

class TextLineReader : public FileRecordReader {
 public:
  struct Options {
    int64_t skip_header_lines = 0;
    Compression compression = Compression::kNone;
    uint64_t max_record_bytes = kDefaultMaxRecordBytes;  ///< the longest line; > 0
  };
  /// InvalidArgument for a negative skip_header_lines or a max_record_bytes of 0.
  static Status Create(const Options& options, std::unique_ptr<FileRecordReader>* out);
  explicit TextLineReader(const Options& options) : options_(options) {}

  Status Open(const std::string& filename) override;
  Status ReadRecord(std::string* key, std::string* value) override;
  void Close() override;
  const std::string& filename() const override { return filename_; }

 private:
  const Options options_;
  std::string filename_;
  std::unique_ptr<BufferedInputStream> in_;
  int64_t line_number_ = 0;  // lines read so far, the header's included
  bool at_end_ = false;
  Status status_;  // sticky: the error that stopped reading (the stream is mid-line after it)
};

}  // namespace io
}  // namespace actorflow
