#include "actorflow/core/io/zlib_input_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "actorflow/core/io/record_limits.hpp"

namespace actorflow {
namespace io {
namespace {

// 16 + 15: a gzip stream with a 32 KiB window; 15: a zlib stream.
int WindowBits(Compression c) { return c == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

}  // namespace

ZlibInputStream::ZlibInputStream(std::unique_ptr<InputStream> source, Compression compression, size_t input_bytes)
    : source_(std::move(source)), compression_(compression), zs_(new z_stream_s()),
      input_(static_cast<size_t>(std::clamp<uint64_t>(input_bytes, 1, kMaxBufferBytes))) {
  zs_->zalloc = Z_NULL;
  zs_->zfree = Z_NULL;
  zs_->opaque = Z_NULL;
  zs_->next_in = input_.data();
  zs_->avail_in = 0;
  if (compression_ == Compression::kNone) {
    init_status_ = errors::Internal("ZlibInputStream over '", source_->filename(), "' without a compression");
    return;
  }
  const int rc = inflateInit2(zs_.get(), WindowBits(compression_));
  if (rc != Z_OK) {
    init_status_ = errors::ResourceExhausted("could not start inflating '", source_->filename(), "': ",
                                            zs_->msg ? zs_->msg : zError(rc));
    zs_.reset();
  }
}

ZlibInputStream::~ZlibInputStream() {
  if (zs_ && init_status_.ok()) inflateEnd(zs_.get());
}

uint64_t ZlibInputStream::CompressedOffset() const { return source_->Tell() - (zs_ ? zs_->avail_in : 0); }

Status ZlibInputStream::Corrupt(const std::string& what) const {
  return errors::DataLoss("'", source_->filename(), "' is not a valid ", CompressionName(compression_),
                          " stream: ", what, " at compressed offset ", CompressedOffset());
}

Status ZlibInputStream::Refill(bool* eof) {
  size_t got = 0;
  AF_RETURN_IF_ERROR(source_->Read(input_.data(), input_.size(), &got));
  zs_->next_in = input_.data();
  zs_->avail_in = static_cast<uInt>(got);
  *eof = got == 0;
  if (*eof) source_eof_ = true;
  return Status::OK();
}

Status ZlibInputStream::Read(void* dst, size_t n, size_t* got) {
  *got = 0;
  AF_RETURN_IF_ERROR(init_status_);
  auto* out = static_cast<unsigned char*>(dst);
  while (*got < n) {
    if (zs_->avail_in == 0 && !source_eof_) {
      bool eof = false;
      AF_RETURN_IF_ERROR(Refill(&eof));
    }
    if (stream_ended_ || (source_eof_ && source_->Tell() == 0)) {
      // A stream ended (or the file is empty): the end, or another stream follows.
      if (zs_->avail_in == 0) break;  // source_eof_: the end
      if (inflateReset(zs_.get()) != Z_OK) return Corrupt("cannot restart inflating");
      stream_ended_ = false;
    }
    zs_->next_out = out + *got;
    zs_->avail_out = static_cast<uInt>(std::min<size_t>(n - *got, UINT_MAX));
    const uInt before = zs_->avail_out;
    const int rc = inflate(zs_.get(), Z_NO_FLUSH);
    *got += before - zs_->avail_out;
    if (rc == Z_STREAM_END) {
      stream_ended_ = true;
    } else if (rc == Z_BUF_ERROR) {
      // No progress without more input: read above, unless there is none.
      if (source_eof_ && zs_->avail_in == 0) return Corrupt("the stream is truncated");
    } else if (rc == Z_NEED_DICT) {
      return Corrupt("a preset dictionary is required");
    } else if (rc == Z_MEM_ERROR) {
      return errors::ResourceExhausted("out of memory inflating '", source_->filename(), "'");
    } else if (rc != Z_OK) {  // Z_DATA_ERROR, Z_STREAM_ERROR
      return Corrupt(zs_->msg ? zs_->msg : zError(rc));
    }
    // Return what there is rather than wait for more input to fill `dst`.
    if (*got > 0 && zs_->avail_in == 0) break;
  }
  offset_ += *got;
  return Status::OK();
}

}  // namespace io
}  // namespace actorflow
