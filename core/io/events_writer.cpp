#include "actorflow/core/io/events_writer.hpp"

#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "actorflow/core/io/record_writer.hpp"

namespace actorflow {
namespace io {

namespace {

std::string Hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

}  // namespace

EventsWriter::EventsWriter(std::unique_ptr<FileOutputStream> file, std::string path)
    : file_(std::move(file)), path_(std::move(path)) {}

EventsWriter::~EventsWriter() {
  if (!closed_) (void)Close();
}

Status EventsWriter::Create(const std::string& logdir, const Options& options, std::unique_ptr<EventsWriter>* out) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) return errors::NotFound("cannot create the log directory '", logdir, "': ", ec.message());
  if (!std::filesystem::is_directory(logdir, ec))
    return errors::InvalidArgument("log directory '", logdir, "' is not a directory");
  const double now = options.now_seconds >= 0
                         ? options.now_seconds
                         : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const long long seconds = static_cast<long long>(std::floor(now));
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", seconds);
  const std::string path = (std::filesystem::path(logdir) / ("events.out.tfevents." + std::string(stamp) + "." +
                                                             Hostname() + options.filename_suffix))
                               .string();
  std::unique_ptr<FileOutputStream> file;
  AF_RETURN_IF_ERROR(FileOutputStream::Create(path, &file));
  std::unique_ptr<EventsWriter> w(new EventsWriter(std::move(file), path));
  proto::Event version;
  version.set_wall_time(static_cast<double>(seconds));  // whole seconds, as TensorFlow writes it
  version.set_file_version(kEventFileVersion);
  version.mutable_source_metadata()->set_writer("actorflow.core.io.events_writer");
  AF_RETURN_IF_ERROR(w->WriteEvent(version));
  AF_RETURN_IF_ERROR(w->Flush());
  *out = std::move(w);
  return Status::OK();
}

Status EventsWriter::WriteEvent(const proto::Event& event) {
  std::string bytes;
  if (!event.SerializeToString(&bytes)) return errors::Internal("cannot serialize an event for '", path_, "'");
  return WriteSerializedEvent(bytes);
}

Status EventsWriter::WriteSerializedEvent(std::string_view event) {
  if (closed_) return errors::FailedPrecondition("events file '", path_, "' is closed");
  char header[kRecordHeaderBytes], footer[kRecordFooterBytes];
  EncodeRecordFraming(event, header, footer);
  AF_RETURN_IF_ERROR(file_->Append(header, sizeof(header)));
  AF_RETURN_IF_ERROR(file_->Append(event.data(), event.size()));
  AF_RETURN_IF_ERROR(file_->Append(footer, sizeof(footer)));
  ++outstanding_;
  return Status::OK();
}

Status EventsWriter::Flush() {
  if (closed_) return errors::FailedPrecondition("events file '", path_, "' is closed");
  if (outstanding_ == 0) return Status::OK();
  AF_RETURN_IF_ERROR(file_->Sync());
  outstanding_ = 0;
  return Status::OK();
}

Status EventsWriter::Close() {
  if (closed_) return Status::OK();
  Status s = Flush();
  closed_ = true;
  const Status c = file_->Close();
  return s.ok() ? c : s;
}

}  // namespace io
}  // namespace actorflow
