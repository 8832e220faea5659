#include "actorflow/core/io/record_writer.hpp"

#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/file_output_stream.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/zlib_output_stream.hpp"

namespace actorflow {
namespace io {
Status RecordWriterOptions::FromCompressionType(const std::string& compression_type, RecordWriterOptions* out) {
  RecordWriterOptions options;
  AF_RETURN_IF_ERROR(ParseCompression(compression_type, &options.compression));
  *out = options;
  return Status::OK();
}

void EncodeRecordFraming(std::string_view data, char header[kRecordHeaderBytes], char footer[kRecordFooterBytes]) {
  fixed::EncodeFixed64(header, data.size());
  fixed::EncodeFixed32(header + sizeof(uint64_t), crc32c::Mask(crc32c::Value(header, sizeof(uint64_t))));
  fixed::EncodeFixed32(footer, crc32c::Mask(crc32c::Value(data.data(), data.size())));
}

Status RecordWriter::Create(const std::string& path, const RecordWriterOptions& options,
                            std::unique_ptr<RecordWriter>* out) {
  std::unique_ptr<FileOutputStream> file;
  AF_RETURN_IF_ERROR(FileOutputStream::Create(path, &file, options.buffer_bytes));
  std::unique_ptr<OutputStream> stream = std::move(file);
  if (options.compression != Compression::kNone)
    stream = std::make_unique<ZlibOutputStream>(std::move(stream), options.compression, options.buffer_bytes);
  *out = std::make_unique<RecordWriter>(std::move(stream));
  return Status::OK();
}

RecordWriter::RecordWriter(std::unique_ptr<OutputStream> stream) : stream_(std::move(stream)) {}

RecordWriter::~RecordWriter() {
  if (!closed_) Close().ok();  // errors ignored: Close() reports them to callers that want them
}

Status RecordWriter::WriteRecord(std::string_view data) {
  char header[kRecordHeaderBytes], footer[kRecordFooterBytes];
  EncodeRecordFraming(data, header, footer);
  AF_RETURN_IF_ERROR(stream_->Append(header, sizeof(header)));
  AF_RETURN_IF_ERROR(stream_->Append(data.data(), data.size()));
  return stream_->Append(footer, sizeof(footer));
}

Status RecordWriter::Flush() { return stream_->Flush(); }

Status RecordWriter::Close() {
  closed_ = true;
  return stream_->Close();
}

}  // namespace io
}  // namespace actorflow
