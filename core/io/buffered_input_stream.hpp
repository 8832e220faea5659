// BufferedInputStream: reads exact byte counts, skips and lines from an
// InputStream through one buffer: what the record readers read from.
//
//   std::unique_ptr<BufferedInputStream> in;
//   AF_RETURN_IF_ERROR(BufferedInputStream::Open("data.csv.gz", Compression::kGzip, &in));
//   std::string line;
//   while ((s = in->ReadLine(&line)).ok()) { ... }   // OutOfRange at the end
//
// ReadNBytes and SkipNBytes return OutOfRange when the stream ends before n
// bytes (the bytes there were are read or skipped: Tell() says how many).
// ReadLine follows TensorFlow's InputBuffer::ReadLine: lines end at '\n',
// which is not returned, and one '\r' before it is dropped; a last line
// without '\n' is returned when not empty. A line longer than its bound
// (kDefaultMaxRecordBytes unless given; record_limits.hpp) is DataLoss naming
// the file and the line's offset, found before more than the bound is held.
// Tell() is the position in the (decompressed) stream. Not thread-safe.
//
// Callers bound what they ask ReadNBytes and AppendNBytes for (a record
// reader checks a length field against its max_record_bytes first); those
// grow *out as bytes arrive, so a length past the end of a plain file costs
// no more than the file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/input_stream.hpp"
#include "actorflow/core/io/record_limits.hpp"

namespace actorflow {
namespace io {

class BufferedInputStream {
 public:
  static constexpr size_t kDefaultBufferBytes = 256 << 10;

  /// Opens `path`, inflating it when `compression` says so, with a buffer of
  /// `buffer_bytes` (and as much compressed input). Errors name the file;
  /// InvalidArgument for a buffer_bytes of 0 or over kMaxBufferBytes.
  static Status Open(const std::string& path, Compression compression, std::unique_ptr<BufferedInputStream>* out,
                     size_t buffer_bytes = kDefaultBufferBytes);

  /// `buffer_bytes` is taken into [1, kMaxBufferBytes].
  BufferedInputStream(std::unique_ptr<InputStream> source, size_t buffer_bytes = kDefaultBufferBytes);

  /// Replaces *out with the next n bytes; OutOfRange (with the bytes there
  /// were in *out) when fewer remain.
  Status ReadNBytes(size_t n, std::string* out);
  /// Appends the next n bytes to *out, as ReadNBytes.
  Status AppendNBytes(size_t n, std::string* out);
  /// Skips n bytes; OutOfRange when fewer remain (all of them skipped).
  Status SkipNBytes(uint64_t n);
  /// The next line into *line; OutOfRange at the end of the stream, DataLoss
  /// (naming the file and the line's offset) for a line of more than
  /// `max_bytes` bytes (its '\n' and a '\r' before it not counted).
  Status ReadLine(std::string* line, uint64_t max_bytes = kDefaultMaxRecordBytes);
  /// Bytes consumed so far.
  uint64_t Tell() const { return source_->Tell() - (limit_ - pos_); }
  const std::string& filename() const { return source_->filename(); }

 private:
  /// Refills an empty buffer; false at the end of the stream (or on error).
  Status Fill(bool* more);

  std::unique_ptr<InputStream> source_;
  std::vector<char> buf_;
  size_t pos_ = 0, limit_ = 0;  // unread bytes are buf_[pos_, limit_)
};

}  // namespace io
}  // namespace actorflow
