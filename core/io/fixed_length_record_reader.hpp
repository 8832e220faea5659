// FixedLengthRecordReader: the FileRecordReader of files of fixed-size
// records, what TensorFlow's FixedLengthRecordReaderV2 op reads with (its
// attrs header_bytes, record_bytes, footer_bytes, hop_bytes and encoding).
//
//   | header_bytes | record 0 | record 1 | ... | footer_bytes |
//
// Record k is the record_bytes starting hop_bytes * k after the header
// (hop_bytes 0 means record_bytes: records side by side; less than
// record_bytes: overlapping windows; more: gaps skipped). A record is read
// only when the footer_bytes after it are there too, so the footer is never
// returned as data. A record's key is "FILENAME:K", its index from 0, as
// TensorFlow's. `compression` (the encoding attr: "", "GZIP", "ZLIB") reads a
// compressed file; the layout is that of the decompressed bytes.
//
// Where TensorFlow silently drops bytes at the end that make no whole record,
// this reader reports them: DataLoss naming the file and the offset where the
// partial record starts. A file shorter than its header is DataLoss too.
//
// Every size is bounded by `max_record_bytes` (record_limits.hpp; 256 MiB by
// default), record_bytes + footer_bytes (what is held per record) included:
// Create refuses more, or a negative size, with InvalidArgument naming it, so
// no sum of sizes overflows.
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

class FixedLengthRecordReader : public FileRecordReader {
 public:
  struct Options {
    int64_t header_bytes = 0;
    int64_t record_bytes = 0;
    int64_t footer_bytes = 0;
    int64_t hop_bytes = 0;
    Compression compression = Compression::kNone;
    uint64_t max_record_bytes = kDefaultMaxRecordBytes;  ///< > 0
  };
  /// InvalidArgument for a negative size, record_bytes 0, a size over
  /// max_record_bytes or record_bytes + footer_bytes over it.
  static Status Create(const Options& options, std::unique_ptr<FileRecordReader>* out);
  explicit FixedLengthRecordReader(const Options& options);

  Status Open(const std::string& filename) override;
  Status ReadRecord(std::string* key, std::string* value) override;
  void Close() override;
  const std::string& filename() const override { return filename_; }

 private:
  /// The status at the end of the file, when record `record_number_` starting
  /// at `start` has `available` bytes (itself and a footer included) before it.
  Status AtEnd(uint64_t start, uint64_t available);

  const Options options_;
  const uint64_t hop_;  // hop_bytes, record_bytes when 0
  std::string filename_;
  std::unique_ptr<BufferedInputStream> in_;
  // The bytes of the current record and its footer, read ahead: a compressed
  // stream cannot be read twice, and windows may overlap.
  std::string lookahead_;
  int64_t record_number_ = 0;
  uint64_t start_ = 0;  // offset of the last record read, in the (decompressed) file
  Status status_;       // sticky: OutOfRange at the end, or the error that stopped reading
};

}  // namespace io
}  // namespace actorflow
