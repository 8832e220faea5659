#include "core/io/buffered_input_stream.hpp"

#include <algorithm>
#include <cstring>

#include "core/io/file_input_stream.hpp"
#include "core/io/zlib_input_stream.hpp"

namespace actorflow {
namespace io {

Status BufferedInputStream::Open(const std::string& path, Compression compression,
                                 std::unique_ptr<BufferedInputStream>* out, size_t buffer_bytes) {
  std::unique_ptr<FileInputStream> file;
  AF_RETURN_IF_ERROR(FileInputStream::Open(path, &file));
  std::unique_ptr<InputStream> source = std::move(file);
  if (compression != Compression::kNone)
    source = std::make_unique<ZlibInputStream>(std::move(source), compression, buffer_bytes);
  *out = std::make_unique<BufferedInputStream>(std::move(source), buffer_bytes);
  return Status::OK();
}

BufferedInputStream::BufferedInputStream(std::unique_ptr<InputStream> source, size_t buffer_bytes)
    : source_(std::move(source)), buf_(std::max<size_t>(buffer_bytes, 1)) {}

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

Status BufferedInputStream::ReadLine(std::string* line) {
  line->clear();
  for (;;) {
    if (pos_ == limit_) {
      bool more = false;
      AF_RETURN_IF_ERROR(Fill(&more));
      if (!more) break;
    }
    const char* start = buf_.data() + pos_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', limit_ - pos_));
    if (newline != nullptr) {
      line->append(start, static_cast<size_t>(newline - start));
      pos_ += static_cast<size_t>(newline - start) + 1;
      if (!line->empty() && line->back() == '\r') line->pop_back();
      return Status::OK();
    }
    line->append(start, limit_ - pos_);
    pos_ = limit_;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  if (line->empty()) return errors::OutOfRange("end of '", filename(), "'");
  return Status::OK();
}

}  // namespace io
}  // namespace actorflow
