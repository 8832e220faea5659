// ZlibInputStream: the inflated bytes of a gzip or zlib stream read from
// another InputStream, through zlib's inflate.
//
//   std::unique_ptr<FileInputStream> file;
//   AF_RETURN_IF_ERROR(FileInputStream::Open(path, &file));
//   ZlibInputStream in(std::move(file), Compression::kGzip);
//   // in.Read(...) returns the uncompressed bytes; Tell() counts them
//
// Streams written one after another (`cat a.gz b.gz`, which gzip itself reads
// as one file) are read as one. A stream that ends before its trailer, or
// whose data or checksum is wrong, is DataLoss naming the file and the
// compressed offset.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/input_stream.hpp"

struct z_stream_s;

namespace actorflow {
namespace io {

class ZlibInputStream : public InputStream {
 public:
  /// `compression` is kGzip or kZlib; `input_bytes` is how much compressed
  /// data is read from `source` at a time, taken into [1, kMaxBufferBytes].
  /// Read fills only what its caller gives it: the bound on a record is the
  /// record reader's (record_limits.hpp).
  ZlibInputStream(std::unique_ptr<InputStream> source, Compression compression, size_t input_bytes = 256 << 10);
  ~ZlibInputStream() override;
  ZlibInputStream(const ZlibInputStream&) = delete;
  ZlibInputStream& operator=(const ZlibInputStream&) = delete;

  Status Read(void* dst, size_t n, size_t* got) override;
  uint64_t Tell() const override { return offset_; }
  const std::string& filename() const override { return source_->filename(); }

 private:
  /// Reads more compressed bytes; *eof when the source has none left.
  Status Refill(bool* eof);
  /// The compressed offset of the next byte inflate will read, for messages.
  uint64_t CompressedOffset() const;
  Status Corrupt(const std::string& what) const;

  std::unique_ptr<InputStream> source_;
  const Compression compression_;
  std::unique_ptr<z_stream_s> zs_;
  Status init_status_;
  std::vector<unsigned char> input_;
  bool stream_ended_ = false;  // inflate returned Z_STREAM_END and nothing followed yet
  bool source_eof_ = false;
  uint64_t offset_ = 0;
};

}  // namespace io
}  // namespace actorflow
