// ZlibOutputStream: a gzip or zlib stream deflated into another OutputStream,
// with TensorFlow's zlib settings for TFRecord files (ZlibCompressionOptions:
// the default compression level, memLevel 9, a 32 KiB window).
//
//   std::unique_ptr<FileOutputStream> file;
//   AF_RETURN_IF_ERROR(FileOutputStream::Create(path, &file));
//   ZlibOutputStream out(std::move(file), Compression::kGzip);
//   AF_RETURN_IF_ERROR(out.Append(data, n));
//   AF_RETURN_IF_ERROR(out.Close());   // the trailer, then the file is closed
//
// Flush ends a deflate block with Z_SYNC_FLUSH: what was appended so far can
// be inflated, the stream goes on (it costs a few bytes each time). A stream
// destroyed without Close is closed with errors ignored.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/output_stream.hpp"

struct z_stream_s;

namespace actorflow {
namespace io {

class ZlibOutputStream : public OutputStream {
 public:
  /// `compression` is kGzip or kZlib; deflated bytes go to `sink` in pieces
  /// of up to `output_bytes`.
  ZlibOutputStream(std::unique_ptr<OutputStream> sink, Compression compression, size_t output_bytes = 256 << 10);
  ~ZlibOutputStream() override;
  ZlibOutputStream(const ZlibOutputStream&) = delete;
  ZlibOutputStream& operator=(const ZlibOutputStream&) = delete;

  Status Append(const void* data, size_t n) override;
  Status Flush() override;
  Status Close() override;
  const std::string& filename() const override { return sink_->filename(); }

 private:
  /// Deflates the pending input with `flush`, handing output to the sink.
  Status Deflate(int flush);

  std::unique_ptr<OutputStream> sink_;
  std::unique_ptr<z_stream_s> zs_;
  std::vector<unsigned char> output_;
  Status status_;
  bool closed_ = false;
};

}  // namespace io
}  // namespace actorflow
