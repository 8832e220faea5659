// FileWriter: what a training loop writes for TensorBoard (TensorFlow's
// tf.compat.v1.summary.FileWriter). Summaries fetched from summary ops
// (ScalarSummary, HistogramSummary, MergeSummary), scalars computed on the
// host and the graph go to an events file in `logdir`
// (core/io/events_writer.hpp), each event with the step and the wall time.
// Events reach the disk when max_queue of them are waiting, when flush_secs
// have passed since the last flush (checked as events are added), on Flush
// and on Close (or destruction).
//
//   std::unique_ptr<FileWriter> w;
//   AF_RETURN_IF_ERROR(FileWriter::Create(logdir, {}, &w));
//   AF_RETURN_IF_ERROR(w->AddGraph(graph_def));
//   for (...) { ...; AF_RETURN_IF_ERROR(w->AddSummary(fetched_summary, step)); }
//   AF_RETURN_IF_ERROR(w->Close());
//
// `tensorboard --logdir DIR` then shows the curves and the graph.
// Not thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "actorflow/core/io/events_writer.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

class FileWriter {
 public:
  struct Options {
    int max_queue = 10;           ///< events waiting before a flush
    double flush_secs = 120;      ///< at most this long between flushes, while events come
    std::string filename_suffix;  ///< after the hostname in the file's name
  };
  static Status Create(const std::string& logdir, const Options& options, std::unique_ptr<FileWriter>* out);
  ~FileWriter();

  /// A serialized Summary (a summary op's output) at `step`.
  Status AddSummary(const std::string& serialized_summary, int64_t step);
  /// A summary op's fetched output: a scalar string tensor.
  Status AddSummary(const Tensor& summary, int64_t step);
  /// A scalar computed on the host, as ScalarSummary would give it.
  Status AddScalar(const std::string& tag, double value, int64_t step);
  /// The graph, for TensorBoard's graph view.
  Status AddGraph(const proto::GraphDef& graph, int64_t step = 0);
  Status AddEvent(proto::Event event);
  Status Flush();
  Status Close();
  const std::string& filename() const { return events_->filename(); }

 private:
  FileWriter(std::unique_ptr<io::EventsWriter> events, const Options& options);
  std::unique_ptr<io::EventsWriter> events_;
  const Options options_;
  int queued_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace actorflow
