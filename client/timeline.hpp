// Timeline: a step's statistics as a Chrome trace, the EEG-like view of the
// TensorFlow whitepaper's section 9.2.
//
//   RunOptions opts;
//   opts.trace_level = TraceLevel::kFullTrace;
//   RunMetadata md;
//   AF_RETURN_IF_ERROR(session.Run(opts, feeds, fetches, {}, &out, &md));
//   std::ofstream("step.json") << ChromeTraceJson(md);  // open in ui.perfetto.dev or chrome://tracing
//
// The JSON is the trace-event format: {"traceEvents":[...]} with one complete
// ("X") event per node (name: the node, cat: its op, ts: its absolute start
// in microseconds, dur, args: op, where it ran and its outputs' dtypes,
// shapes and bytes), one process per device (named by a "process_name"
// metadata event) and one track per thread (named by a "thread_name" event
// with the thread's id). Timestamps are absolute (steady clock), so the stats
// of several steps, or of several devices, concatenated into one RunMetadata
// share one time line. Pure function of its input; thread-safe.
#pragma once

#include <string>

#include "actorflow/client/session.hpp"

namespace actorflow {

/// The Chrome trace-event JSON of `md.step_stats`. Names that are not valid
/// UTF-8 have their bad bytes replaced (U+FFFD), so the text always parses.
std::string ChromeTraceJson(const RunMetadata& md);

}  // namespace actorflow
