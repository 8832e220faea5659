// RecordWriter: writes a TFRecord file, byte for byte as TensorFlow's
// io::RecordWriter (tf.io.TFRecordWriter) writes it. Each record is
//
//   uint64 length                       little-endian
//   uint32 masked CRC-32C of length     (its 8 bytes; crc32c::Mask)
//   byte   data[length]
//   uint32 masked CRC-32C of data
//
// and the whole file is optionally one gzip or zlib stream (TFRecordOptions'
// compression_type "GZIP" / "ZLIB").
//
//   std::unique_ptr<RecordWriter> writer;
//   AF_RETURN_IF_ERROR(RecordWriter::Create("train.tfrecord", {}, &writer));
//   AF_RETURN_IF_ERROR(writer->WriteRecord(serialized_example));
//   AF_RETURN_IF_ERROR(writer->Close());
//
// Not thread-safe. Errors name the file; after one, every call returns it.
// A writer destroyed without Close is closed with errors ignored.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/output_stream.hpp"

namespace actorflow {
namespace io {

struct RecordWriterOptions {
  Compression compression = Compression::kNone;
  size_t buffer_bytes = 256 << 10;  ///< file buffer (and deflate output pieces)

  /// The options for TensorFlow's compression_type ("", "GZIP", "ZLIB").
  static Status FromCompressionType(const std::string& compression_type, RecordWriterOptions* out);
};

/// Bytes of framing around each record's data: length, its CRC, data CRC.
constexpr size_t kRecordHeaderBytes = sizeof(uint64_t) + sizeof(uint32_t);
constexpr size_t kRecordFooterBytes = sizeof(uint32_t);

class RecordWriter {
 public:
  /// Creates `path` (emptying it when it exists).
  static Status Create(const std::string& path, const RecordWriterOptions& options,
                       std::unique_ptr<RecordWriter>* out);
  /// Writes to `stream` (already compressing, if it should).
  explicit RecordWriter(std::unique_ptr<OutputStream> stream);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  Status WriteRecord(std::string_view data);
  /// Hands the records written so far to the operating system (a compressed
  /// file is flushed so that they can be read back).
  Status Flush();
  /// Writes what is buffered (and a compressed stream's trailer), closes the file.
  Status Close();
  const std::string& filename() const { return stream_->filename(); }

 private:
  std::unique_ptr<OutputStream> stream_;
  bool closed_ = false;
};

/// The framing of one record, as RecordWriter writes it: the 12-byte header
/// (length and its masked CRC) into `header`, the 4-byte footer (masked CRC
/// of data) into `footer`.
void EncodeRecordFraming(std::string_view data, char header[kRecordHeaderBytes], char footer[kRecordFooterBytes]);

}  // namespace io
}  // namespace actorflow
