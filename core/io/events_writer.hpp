// EventsWriter: an events file for TensorBoard, as TensorFlow's EventsWriter
// writes it: <logdir>/events.out.tfevents.<seconds, 10 digits>.<hostname><suffix>,
// TFRecord-framed Event protos (core/proto/event.proto), the first one
// {wall_time: whole seconds, file_version: "brain.Event:2", source_metadata}
// flushed at once. Flush writes what is buffered and fsyncs the file.
//
//   std::unique_ptr<io::EventsWriter> w;
//   AF_RETURN_IF_ERROR(io::EventsWriter::Create("/tmp/logs/run1", {}, &w));
//   AF_RETURN_IF_ERROR(w->WriteEvent(event));
//   AF_RETURN_IF_ERROR(w->Close());
//
// Not thread-safe. Errors name the file; after one, every call returns it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "actorflow/core/io/file_output_stream.hpp"
#include "actorflow/core/proto/event.pb.h"
#include "actorflow/core/status.hpp"

namespace actorflow {
namespace io {

/// The first record's file_version, TensorFlow's "brain.Event:" + 2.
constexpr const char* kEventFileVersion = "brain.Event:2";

class EventsWriter {
 public:
  struct Options {
    std::string filename_suffix;  ///< after the hostname (TensorFlow 2 writes ".v2" and more)
    double now_seconds = -1;      ///< the file's time; < 0: the clock's (tests fix it)
  };
  /// Creates `logdir` (and its parents) if needed, then the file.
  static Status Create(const std::string& logdir, const Options& options, std::unique_ptr<EventsWriter>* out);
  ~EventsWriter();
  EventsWriter(const EventsWriter&) = delete;
  EventsWriter& operator=(const EventsWriter&) = delete;

  Status WriteEvent(const proto::Event& event);
  Status WriteSerializedEvent(std::string_view event);
  /// The events written so far reach the disk (write, fsync).
  Status Flush();
  Status Close();
  const std::string& filename() const { return path_; }

 private:
  EventsWriter(std::unique_ptr<FileOutputStream> file, std::string path);
  std::unique_ptr<FileOutputStream> file_;
  const std::string path_;
  int64_t outstanding_ = 0;
  bool closed_ = false;
};

}  // namespace io
}  // namespace actorflow
