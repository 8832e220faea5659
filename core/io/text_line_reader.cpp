#include "actorflow/core/io/text_line_reader.hpp"

namespace actorflow {
namespace io {

Status TextLineReader::Create(const Options& options, std::unique_ptr<FileRecordReader>* out) {
  if (options.skip_header_lines < 0)
    return errors::InvalidArgument("skip_header_lines must be >= 0, got ", options.skip_header_lines);
  if (options.max_record_bytes == 0) return errors::InvalidArgument("max_record_bytes must be > 0, got 0");
  *out = std::make_unique<TextLineReader>(options);
  return Status::OK();
}

Status TextLineReader::Open(const std::string& filename) {
  Close();
  std::unique_ptr<BufferedInputStream> in;
  AF_RETURN_IF_ERROR(BufferedInputStream::Open(filename, options_.compression, &in));
  std::string header;
  int64_t line = 0;
  bool at_end = false;
  for (; line < options_.skip_header_lines; ++line) {
    const Status s = in->ReadLine(&header, options_.max_record_bytes);
    if (errors::IsOutOfRange(s)) {  // fewer lines than the header: no records
      at_end = true;
      break;
    }
    AF_RETURN_IF_ERROR(s);
  }
  in_ = std::move(in);
  filename_ = filename;
  line_number_ = line;
  at_end_ = at_end;
  return Status::OK();
}

Status TextLineReader::ReadRecord(std::string* key, std::string* value) {
  if (!in_) return errors::FailedPrecondition("TextLine reader: no file is open");
  if (at_end_) return errors::OutOfRange("end of '", filename_, "'");
  AF_RETURN_IF_ERROR(status_);
  const Status s = in_->ReadLine(value, options_.max_record_bytes);
  if (errors::IsOutOfRange(s)) at_end_ = true;
  else if (!s.ok()) status_ = s;
  AF_RETURN_IF_ERROR(s);
  ++line_number_;
  *key = filename_ + ":" + std::to_string(line_number_);
  return Status::OK();
}

void TextLineReader::Close() {
  in_.reset();
  filename_.clear();
  line_number_ = 0;
  at_end_ = false;
  status_ = Status::OK();
}

}  // namespace io
}  // namespace actorflow
