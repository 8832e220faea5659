#include "actorflow/core/io/file_output_stream.hpp"

#include <algorithm>
#include <cstring>

namespace actorflow {
namespace io {

Status FileOutputStream::Create(const std::string& path, std::unique_ptr<FileOutputStream>* out,
                                size_t buffer_bytes) {
  file_io::File file;
  AF_RETURN_IF_ERROR(file_io::File::CreateOrTruncate(path, &file));
  out->reset(new FileOutputStream(std::move(file), buffer_bytes));
  return Status::OK();
}

FileOutputStream::FileOutputStream(file_io::File file, size_t buffer_bytes)
    : file_(std::move(file)), path_(file_.path()), buf_(std::max<size_t>(buffer_bytes, 1)) {}

FileOutputStream::~FileOutputStream() {
  if (!closed_) Close().ok();  // errors ignored: Close() reports them to callers that want them
}

Status FileOutputStream::Append(const void* data, size_t n) {
  if (closed_) return errors::FailedPrecondition("'", path_, "' is closed");
  AF_RETURN_IF_ERROR(status_);
  const char* p = static_cast<const char*>(data);
  if (used_ + n > buf_.size()) {
    AF_RETURN_IF_ERROR(Flush());
    if (n >= buf_.size()) {  // too large to buffer: straight to the file
      status_.Update(file_.Write(p, n));
      return status_;
    }
  }
  std::memcpy(buf_.data() + used_, p, n);
  used_ += n;
  return Status::OK();
}

Status FileOutputStream::Flush() {
  if (closed_) return errors::FailedPrecondition("'", path_, "' is closed");
  AF_RETURN_IF_ERROR(status_);
  if (used_ > 0) {
    status_.Update(file_.Write(buf_.data(), used_));
    used_ = 0;
  }
  return status_;
}

Status FileOutputStream::Sync() {
  AF_RETURN_IF_ERROR(Flush());
  status_.Update(file_.Sync());
  return status_;
}

Status FileOutputStream::Close() {
  if (closed_) return status_;  // closing twice is closing once
  Status s = Flush();
  closed_ = true;
  s.Update(file_.Close());
  status_.Update(s);
  return s;
}

}  // namespace io
}  // namespace actorflow
