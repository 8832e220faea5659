#include "actorflow/core/io/tfrecord_file_reader.hpp"

namespace actorflow {
namespace io {

Status TFRecordFileReader::Create(const Options& options, std::unique_ptr<FileRecordReader>* out) {
  if (options.max_record_bytes == 0) return errors::InvalidArgument("max_record_bytes must be > 0, got 0");
  *out = std::make_unique<TFRecordFileReader>(options);
  return Status::OK();
}

Status TFRecordFileReader::Open(const std::string& filename) {
  Close();
  RecordReaderOptions options;
  options.compression = options_.compression;
  options.max_record_bytes = options_.max_record_bytes;
  AF_RETURN_IF_ERROR(RecordReader::Open(filename, options, &reader_));
  filename_ = filename;
  return Status::OK();
}

Status TFRecordFileReader::ReadRecord(std::string* key, std::string* value) {
  if (!reader_) return errors::FailedPrecondition("TFRecord reader: no file is open");
  const uint64_t offset = reader_->offset();
  AF_RETURN_IF_ERROR(reader_->ReadRecord(value));
  *key = filename_ + ":" + std::to_string(offset);
  return Status::OK();
}

void TFRecordFileReader::Close() {
  reader_.reset();
  filename_.clear();
}

}  // namespace io
}  // namespace actorflow
