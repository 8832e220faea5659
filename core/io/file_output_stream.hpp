// FileOutputStream: a file written front to back through a buffer. Flush
// writes the buffer with write(2); Sync also fsyncs it; Close flushes and
// closes. A destroyed stream that was not closed is flushed and closed with
// errors ignored: call Close where they matter.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/io/output_stream.hpp"

namespace actorflow {
namespace io {

class FileOutputStream : public OutputStream {
 public:
  static constexpr size_t kDefaultBufferBytes = 256 << 10;

  /// Creates `path` (emptying it when it exists) for writing.
  static Status Create(const std::string& path, std::unique_ptr<FileOutputStream>* out,
                       size_t buffer_bytes = kDefaultBufferBytes);
  ~FileOutputStream() override;

  Status Append(const void* data, size_t n) override;
  Status Flush() override;
  Status Close() override;
  /// Flush, then fsync.
  Status Sync();
  const std::string& filename() const override { return path_; }

 private:
  FileOutputStream(file_io::File file, size_t buffer_bytes);

  file_io::File file_;
  const std::string path_;
  std::vector<char> buf_;
  size_t used_ = 0;
  Status status_;  // the first error; every later call returns it
  bool closed_ = false;
};

}  // namespace io
}  // namespace actorflow
