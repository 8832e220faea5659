#include "actorflow/client/train/summary_writer.hpp"

#include "actorflow/core/proto/summary.pb.h"

namespace actorflow {

namespace {
double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

FileWriter::FileWriter(std::unique_ptr<io::EventsWriter> events, const Options& options)
    : events_(std::move(events)), options_(options), last_flush_(std::chrono::steady_clock::now()) {}

FileWriter::~FileWriter() { (void)Close(); }

Status FileWriter::Create(const std::string& logdir, const Options& options, std::unique_ptr<FileWriter>* out) {
  io::EventsWriter::Options eo;
  eo.filename_suffix = options.filename_suffix;
  std::unique_ptr<io::EventsWriter> events;
  AF_RETURN_IF_ERROR(io::EventsWriter::Create(logdir, eo, &events));
  out->reset(new FileWriter(std::move(events), options));
  return Status::OK();
}

Status FileWriter::AddEvent(proto::Event event) {
  if (event.wall_time() == 0) event.set_wall_time(WallTime());
  AF_RETURN_IF_ERROR(events_->WriteEvent(event));
  ++queued_;
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush_).count();
  if (queued_ >= options_.max_queue || since >= options_.flush_secs) return Flush();
  return Status::OK();
}

Status FileWriter::AddSummary(const std::string& serialized_summary, int64_t step) {
  proto::Event event;
  event.set_step(step);
  if (!event.mutable_summary()->ParseFromString(serialized_summary))
    return errors::InvalidArgument("not a serialized Summary (", serialized_summary.size(), " bytes) for '",
                                   filename(), "'");
  return AddEvent(std::move(event));
}

Status FileWriter::AddSummary(const Tensor& summary, int64_t step) {
  if (summary.dtype() != DT_STRING || summary.NumElements() != 1)
    return errors::InvalidArgument("a summary is a scalar string tensor, got ", DataTypeString(summary.dtype()), " ",
                                   summary.shape().DebugString());
  return AddSummary(summary.data<std::string>()[0], step);
}

Status FileWriter::AddScalar(const std::string& tag, double value, int64_t step) {
  proto::Event event;
  event.set_step(step);
  proto::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return AddEvent(std::move(event));
}

Status FileWriter::AddGraph(const proto::GraphDef& graph, int64_t step) {
  proto::Event event;
  event.set_step(step);
  if (!graph.SerializeToString(event.mutable_graph_def()))
    return errors::Internal("cannot serialize the graph for '", filename(), "'");
  return AddEvent(std::move(event));
}

Status FileWriter::Flush() {
  queued_ = 0;
  last_flush_ = std::chrono::steady_clock::now();
  return events_->Flush();
}

Status FileWriter::Close() { return events_->Close(); }

}  // namespace actorflow
