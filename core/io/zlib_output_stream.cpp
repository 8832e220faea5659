#include "actorflow/core/io/zlib_output_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace actorflow {
namespace io {

ZlibOutputStream::ZlibOutputStream(std::unique_ptr<OutputStream> sink, Compression compression,
                                   size_t output_bytes)
    : sink_(std::move(sink)), zs_(new z_stream_s()), output_(std::max<size_t>(output_bytes, 64)) {
  zs_->zalloc = Z_NULL;
  zs_->zfree = Z_NULL;
  zs_->opaque = Z_NULL;
  if (compression == Compression::kNone) {
    status_ = errors::Internal("ZlibOutputStream over '", sink_->filename(), "' without a compression");
    zs_.reset();
    return;
  }
  const int window_bits = compression == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS;
  const int rc = deflateInit2(zs_.get(), Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    status_ = errors::ResourceExhausted("could not start deflating into '", sink_->filename(), "': ",
                                        zs_->msg ? zs_->msg : zError(rc));
    zs_.reset();
  }
}

ZlibOutputStream::~ZlibOutputStream() {
  if (!closed_) Close().ok();  // errors ignored: Close() reports them to callers that want them
  if (zs_) deflateEnd(zs_.get());
}

Status ZlibOutputStream::Deflate(int flush) {
  for (;;) {
    zs_->next_out = output_.data();
    zs_->avail_out = static_cast<uInt>(output_.size());
    const int rc = deflate(zs_.get(), flush);
    if (rc == Z_STREAM_ERROR)
      return errors::Internal("deflate failed writing '", sink_->filename(), "': ", zs_->msg ? zs_->msg : "");
    const size_t produced = output_.size() - zs_->avail_out;
    if (produced > 0) AF_RETURN_IF_ERROR(sink_->Append(output_.data(), produced));
    // Done when deflate had room to spare (all input taken, the flush complete),
    // or, finishing, when the stream has ended.
    if (flush == Z_FINISH ? rc == Z_STREAM_END : (zs_->avail_out != 0 && zs_->avail_in == 0)) return Status::OK();
  }
}

Status ZlibOutputStream::Append(const void* data, size_t n) {
  if (closed_) return errors::FailedPrecondition("'", sink_->filename(), "' is closed");
  AF_RETURN_IF_ERROR(status_);
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    const size_t take = std::min<size_t>(n, UINT_MAX);
    zs_->next_in = const_cast<unsigned char*>(p);  // zlib's API is not const-correct
    zs_->avail_in = static_cast<uInt>(take);
    status_.Update(Deflate(Z_NO_FLUSH));
    AF_RETURN_IF_ERROR(status_);
    p += take;
    n -= take;
  }
  return Status::OK();
}

Status ZlibOutputStream::Flush() {
  if (closed_) return errors::FailedPrecondition("'", sink_->filename(), "' is closed");
  AF_RETURN_IF_ERROR(status_);
  status_.Update(Deflate(Z_SYNC_FLUSH));
  status_.Update(sink_->Flush());
  return status_;
}

Status ZlibOutputStream::Close() {
  if (closed_) return status_;  // closing twice is closing once
  closed_ = true;
  if (status_.ok()) {
    zs_->next_in = nullptr;
    zs_->avail_in = 0;
    status_.Update(Deflate(Z_FINISH));
  }
  status_.Update(sink_->Close());
  return status_;
}

}  // namespace io
}  // namespace actorflow
