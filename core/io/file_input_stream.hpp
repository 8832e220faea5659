// FileInputStream: the bytes of one file, read with pread from its start.
// Unbuffered: each Read is one system call (or a few, on EINTR or a short
// read), so readers put a BufferedInputStream on top (buffered_input_stream.hpp).
#pragma once

#include <memory>
#include <string>

#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/io/input_stream.hpp"

namespace actorflow {
namespace io {

class FileInputStream : public InputStream {
 public:
  /// Opens `path` for reading: NotFound, PermissionDenied, ... naming it.
  static Status Open(const std::string& path, std::unique_ptr<FileInputStream>* out);

  Status Read(void* dst, size_t n, size_t* got) override;
  uint64_t Tell() const override { return offset_; }
  const std::string& filename() const override { return file_.path(); }

 private:
  explicit FileInputStream(file_io::File file) : file_(std::move(file)) {}

  file_io::File file_;
  uint64_t offset_ = 0;
};

}  // namespace io
}  // namespace actorflow
