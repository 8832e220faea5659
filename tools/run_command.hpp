// actorflow run: loads a GraphDef (binary .pb or text .pbtxt) into one Session and runs
// steps in it. Without --steps the flags form exactly one step. With --steps,
// FILE ("-" for stdin) holds one JSON object per line (blank lines skipped),
//
//   {"feeds": {"x": VALUE, ...}, "fetches": [...], "targets": [...], "timeout_ms": N}
//
// and its lines run in order, in the same session. The flags are then defaults
// under every line: a line's feeds are merged over the --feed values (by
// tensor name), and its "fetches", "targets" and "timeout_ms" replace the
// flags' ones. VALUE is a tensor in JSON (see tools/json_tensor.hpp). Tensor
// names without ":PORT" mean port 0. --no-optimize runs the graph as written
// (no common subexpression elimination, no constant folding: graph/optimize.hpp).
//
// stdout gets one JSON line per step, with fetch keys in "name:port" form:
//
//   {"step":0,"ok":true,"fetches":{"y:0":{"dtype":"float32","shape":[2],"values":[1,2]}}}
//   {"step":1,"ok":false,"code":"INVALID_ARGUMENT","message":"..."}
//
// A fetched tensor of more than 1000 elements is summarised (numpy's print
// threshold): {"dtype":"int32","shape":[2000000],"summarized":true,
// "first":[0,1,2],"last":[1999997,1999998,1999999]}, flat first and last 3
// values (--summarize N: N of each); --full-values writes every value.
//
// A failed step (a bad line, a bad feed, an error running the graph) does not
// stop the steps after it. Exit status: 0 when every step succeeded, 1 when a
// step failed, 2 for a usage error or a graph that does not load.
//
// Running out of memory never aborts the command. What can be bounded first
// is checked against the memory limit and refused: a step whose fetches' JSON
// may not fit, or a --steps line longer than 1/32 of the limit (JSON takes
// many times its text's size once parsed; the line is skipped). The limit is
// --memory-limit BYTES, which is also each device's budget for its tensors,
// else what is available now (tools/cli_memory.hpp) within the process's
// budget (core/allocator.hpp, ACTORFLOW_MEMORY_LIMIT_MB). Those
// steps, and any step in which an allocation fails (std::bad_alloc), get a
// RESOURCE_EXHAUSTED step line, and the steps after them still run. Out of
// memory outside a step, and in the other commands, is a RESOURCE_EXHAUSTED
// error on stderr and exit status 1.
//
// With --trace FILE every step runs with TraceLevel::kFullTrace and, once all
// have run, the stats of all of them (failed ones included) are written to
// FILE as one Chrome trace (client/timeline.hpp); stderr says where. FILE is
// opened before the first step: one that cannot be is a usage error (2), a
// write that fails at the end is 1.
//
// --devices cpu:N[,gpu:M] gives the runtime N CPU devices (default cpu:1) on
// which the placer (graph/placer.hpp) spreads the graph, and M GPU devices;
// more GPUs than the runtime has (no CUDA build, no GPU) is refused
// (UNAVAILABLE). With
// --show-placement, the device of every node of the first step that was
// placed goes to stderr, one "NODE -> DEVICE" line each, sorted by node name;
// stdout is unchanged.
//
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

/// Runs `actorflow run ARGS...`; returns the exit status.
int RunCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
