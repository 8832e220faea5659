// The steps of `actorflow run` (tools/actorflow.cpp parses its flags): what a
// step feeds, fetches and runs, the --steps lines that describe steps, running
// a step in the session and the JSON line reporting it on stdout.
//
// A --steps line is one JSON object,
//   {"feeds": {"x": VALUE, ...}, "fetches": [...], "targets": [...], "timeout_ms": N}
// parsed over the defaults from the flags: its feeds are merged over theirs
// (by tensor name), its "fetches", "targets" and "timeout_ms" replace theirs.
// Each step gets one line on stdout, flushed as it ends:
//   {"step":0,"ok":true,"fetches":{"y:0":{"dtype":"float32","shape":[2],"values":[1,2]}}}
//   {"step":1,"ok":false,"code":"INVALID_ARGUMENT","message":"..."}
// with each fetched tensor written by AppendTensorJson (summarised or whole,
// tools/json_tensor.hpp).
//
// Contract: running and reporting never throw and never abort. A step whose
// fetches' JSON may take more than the memory limit (StepRunner), a --steps
// line longer than 1/32 of it (read to its end and skipped), and a step in
// which an allocation fails (std::bad_alloc, std::length_error) get a
// RESOURCE_EXHAUSTED line; a failed step does not stop the ones after it.
#pragma once

#include <cstdint>
#include <istream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "tools/json_tensor.hpp"

namespace actorflow {
namespace cli {

/// The largest step timeout accepted, in ms (about 24.8 days).
constexpr int64_t kMaxTimeoutMs = std::numeric_limits<int32_t>::max();

/// What one step feeds, fetches and runs; tensor names in "name:port" form.
struct StepSpec {
  std::map<std::string, Tensor> feeds;
  /// The JSON of the feeds written in the implicit form (whose dtype follows
  /// from their elements): a step reads them again with the dtype the graph
  /// declares for the fed tensor (StepRunner::feed_dtypes), so that [[1, 2]]
  /// feeds a float32 placeholder.
  std::map<std::string, nlohmann::json> implicit_feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  int64_t timeout_ms = 0;
};

/// Adds the feed `name` = `value` (a tensor in JSON) to `feeds`, replacing
/// any earlier one of the same tensor; InvalidArgument naming the feed when
/// the name or value is malformed.
Status AddFeed(const std::string& name, const nlohmann::json& value, StepSpec* step);

/// What the steps of one `run` share.
struct StepRunner {
  Session* session;
  RunMetadata* trace;              // nullptr: steps are not traced
  bool placement_pending = false;  // --show-placement, until a step has been placed
  TensorJsonOptions json_options;  // --summarize, --full-values
  uint64_t memory_limit = 0;       // --memory-limit; 0: the memory available at each step
  /// The dtype the graph declares for a tensor that may be fed (a
  /// placeholder's output), by "name:port" (FeedDtypes).
  std::map<std::string, DataType> feed_dtypes;
  /// Other names of tensors, "key:0" -> "node:port" (a SavedModel signature's
  /// input and output keys): a step's feeds and fetches may use them, and
  /// its line reports the fetches by the names the step used.
  std::map<std::string, std::string> aliases;
};

/// The dtypes of the graph's placeholders' outputs, by "name:0".
std::map<std::string, DataType> FeedDtypes(const proto::GraphDef& def);

/// Runs `step` as step `index` and prints its line; returns whether it
/// succeeded. With runner->trace the step is traced and its stats appended;
/// with placement_pending the first placement is printed to stderr, one
/// "NODE -> DEVICE" line per node sorted by name.
bool RunAndReport(StepRunner* runner, int index, const StepSpec& step);

/// Runs every non-blank line of `in` as a step over `defaults`, numbered from
/// 0; a line that does not parse is a failed step. Returns whether all
/// succeeded.
bool RunStepLines(StepRunner* runner, std::istream& in, const StepSpec& defaults);

}  // namespace cli
}  // namespace actorflow
