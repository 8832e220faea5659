#include "actorflow/core/io/file_input_stream.hpp"

namespace actorflow {
namespace io {

Status FileInputStream::Open(const std::string& path, std::unique_ptr<FileInputStream>* out) {
  file_io::File file;
  AF_RETURN_IF_ERROR(file_io::File::OpenForRead(path, &file));
  out->reset(new FileInputStream(std::move(file)));
  return Status::OK();
}

Status FileInputStream::Read(void* dst, size_t n, size_t* got) {
  AF_RETURN_IF_ERROR(file_.ReadAt(offset_, dst, n, got));
  offset_ += *got;
  return Status::OK();
}

}  // namespace io
}  // namespace actorflow
