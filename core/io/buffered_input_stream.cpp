#include "actorflow/core/io/buffered_input_stream.hpp"

#include <algorithm>
#include <cstring>

#include "actorflow/core/io/file_input_stream.hpp"
#include "actorflow/core/io/zlib_input_stream.hpp"

namespace actorflow {
namespace io {

Status BufferedInputStream::Open(const std::string& path, Compression compression,
                                 std::unique_ptr<BufferedInputStream>* out, size_t buffer_bytes) {
  AF_RETURN_IF_ERROR(CheckBufferBytes("buffer_bytes of a reader of '" + path + "'", buffer_bytes));
  std::unique_ptr<FileInputStream> file;
  AF_RETURN_IF_ERROR(FileInputStream::Open(path, &file));
  std::unique_ptr<InputStream> source = std::move(file);
  if (compression != Compression::kNone)
    source = std::make_unique<ZlibInputStream>(std::move(source), compression, buffer_bytes);
  *out = std::make_unique<BufferedInputStream>(std::move(source), buffer_bytes);
  return Status::OK();
}

BufferedInputStream::BufferedInputStream(std::unique_ptr<InputStream> source, size_t buffer_bytes)
    : source_(std::move(source)),
      buf_(static_cast<size_t>(std::clamp<uint64_t>(buffer_bytes, 1, kMaxBufferBytes))) {}

Status BufferedInputStream::Fill(bool* more) {
  size_t got = 0;
  pos_ = limit_ = 0;
  AF_RETURN_IF_ERROR(source_->Read(buf_.data(), buf_.size(), &got));
  limit_ = got;
  *more = got > 0;
  return Status::OK();
}

Status BufferedInputStream::ReadNBytes(size_t n, std::string* out) {
  out->clear();
  return AppendNBytes(n, out);
}

Status BufferedInputStream::AppendNBytes(size_t n, std::string* out) {
  // Grows with what arrives: a length read from a corrupt file allocates no
  // more than the file holds.
  while (n > 0) {
    if (pos_ == limit_) {
      // Large reads go around the buffer, straight into *out.
      if (n >= buf_.size()) {
        const size_t old = out->size();
        out->resize(old + std::min(n, buf_.size() * 4));
        size_t got = 0;
        const Status s = source_->Read(out->data() + old, out->size() - old, &got);
        out->resize(old + got);
        AF_RETURN_IF_ERROR(s);
        if (got == 0) return errors::OutOfRange("end of '", filename(), "'");
        n -= got;
        continue;
      }
      bool more = false;
      AF_RETURN_IF_ERROR(Fill(&more));
      if (!more) return errors::OutOfRange("end of '", filename(), "'");
    }
    const size_t take = std::min(n, limit_ - pos_);
    out->append(buf_.data() + pos_, take);
    pos_ += take;
    n -= take;
  }
  return Status::OK();
}

Status BufferedInputStream::SkipNBytes(uint64_t n) {
  while (n > 0) {
    if (pos_ == limit_) {
      bool more = false;
      AF_RETURN_IF_ERROR(Fill(&more));
      if (!more) return errors::OutOfRange("end of '", filename(), "'");
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, limit_ - pos_));
    pos_ += take;
    n -= take;
  }
  return Status::OK();
}

Status BufferedInputStream::ReadLine(std::string* line, uint64_t max_bytes) {
  line->clear();
  const uint64_t start = Tell();
  // A line of max_bytes may be followed by a '\r' to drop: one byte more is held.
  const uint64_t hold = max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1;
  auto too_long = [&] {
    line->clear();
    line->shrink_to_fit();
    return errors::DataLoss("line at offset ", start, " of '", filename(), "' is longer than the limit of ", max_bytes,
                            " bytes (max_record_bytes): the file is corrupt or not text, or raise the limit");
  };
  for (;;) {
    if (pos_ == limit_) {
      bool more = false;
      AF_RETURN_IF_ERROR(Fill(&more));
      if (!more) break;
    }
    const char* start_p = buf_.data() + pos_;
    const auto* newline = static_cast<const char*>(std::memchr(start_p, '\n', limit_ - pos_));
    const size_t take = newline ? static_cast<size_t>(newline - start_p) : limit_ - pos_;
    if (take > hold - line->size()) return too_long();
    line->append(start_p, take);
    if (newline != nullptr) {
      pos_ += take + 1;
      if (!line->empty() && line->back() == '\r') line->pop_back();
      if (line->size() > max_bytes) return too_long();
      return Status::OK();
    }
    pos_ = limit_;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  if (line->size() > max_bytes) return too_long();
  if (line->empty()) return errors::OutOfRange("end of '", filename(), "'");
  return Status::OK();
}

}  // namespace io
}  // namespace actorflow
