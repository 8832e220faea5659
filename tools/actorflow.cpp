// actorflow: the command-line front end of the actorflow runtime.
//
//   actorflow run --graph FILE [--feed NAME[:PORT]=VALUE]... [--fetch NAME[:PORT]]...
//                 [--target NAME]... [--timeout-ms N] [--steps FILE] [--trace FILE]
//                 [--no-optimize] [--devices cpu:N[,gpu:M]] [--show-placement]
//                 [--full-values | --summarize N] [--memory-limit BYTES]
//   actorflow graph --graph FILE --dot OUT [--feed NAME[:PORT]]... [--fetch NAME[:PORT]]...
//                   [--target NAME]... [--devices cpu:N[,gpu:M]] [--placed] [--partitioned]
//   actorflow gradients --graph FILE --y NAME[:PORT] [--y ...] --x NAME[:PORT] [--x ...] --out FILE
//   actorflow records convert-idx|convert-csv|count|print ...   (tools/records_command.hpp)
//   actorflow ops
//   actorflow help
//
// `run` loads a GraphDef (binary .pb or text .pbtxt) into one Session and runs
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
// budget (devices/allocator.hpp, ACTORFLOW_MEMORY_LIMIT_MB). Those
// steps, and any step in which an allocation fails (std::bad_alloc), get a
// RESOURCE_EXHAUSTED step line, and the steps after them still run. Out of
// memory outside a step, and in the other commands, is a RESOURCE_EXHAUSTED
// error on stderr and exit status 1.
//
// With --trace FILE every step runs with TraceLevel::kFullTrace and, once all
// have run, the stats of all of them (failed ones included) are written to
// FILE as one Chrome trace (actors/timeline.hpp); stderr says where. FILE is
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
// `graph` writes the graph as Graphviz DOT to OUT ("-": stdout), see
// tools/graph_dot.hpp. With --fetch/--target it is first pruned as a step with
// those fetches, targets and --feed tensors would be (not optimized). --placed
// also places it on the --devices and draws one cluster per device;
// --partitioned (which implies --placed) draws the partitions, with their
// _Send/_Recv nodes, one cluster each. Exit status: 0 written, 1 OUT could
// not be written, 2 a usage error or a graph that does not load, prune or place.
//
// `gradients` loads a GraphDef as `run` does, adds the nodes computing the
// gradient of the sum of the ys (every element of each) with respect to each x
// (graph/gradients.hpp), writes the graph to the --out file (text for .pbtxt
// or .txt, binary otherwise) and prints the gradients' tensor names, one per
// line in --x order, ready for `run --fetch`. Exit status: 0 done, 1 the
// output could not be written, 2 a usage error, a graph that does not load or
// a gradient that cannot be built (an op without one on the path).
//
// `ops` lists the registered ops, sorted by name, with the device and type
// constraints of each of their kernels:
//
//   MatMul  kernels: CPU[T=float,double,int32,int64]
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/runtime.hpp"
#include "devices/allocator.hpp"
#include "devices/device.hpp"
#include "devices/device_manager.hpp"
#include "actors/session.hpp"
#include "actors/timeline.hpp"
#include "core/proto/graph.pb.h"
#include "core/status.hpp"
#include "core/tensor.hpp"
#include "graph/builder.hpp"
#include "graph/gradients.hpp"
#include "graph/graph.hpp"
#include "graph/graph_def_io.hpp"
#include "graph/partition.hpp"
#include "graph/placer.hpp"
#include "graph/subgraph.hpp"
#include "ops/op_kernel.hpp"
#include "ops/op_registry.hpp"
#include "tools/cli_memory.hpp"
#include "tools/graph_dot.hpp"
#include "tools/json_tensor.hpp"
#include "tools/records_command.hpp"

namespace actorflow {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr int kExitOk = 0;
constexpr int kExitStepFailed = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] = R"(usage:
  actorflow run --graph FILE [--feed NAME[:PORT]=VALUE]... [--fetch NAME[:PORT]]...
                [--target NAME]... [--timeout-ms N] [--steps FILE] [--trace FILE]
                [--no-optimize] [--devices cpu:N[,gpu:M]] [--show-placement]
                [--full-values | --summarize N] [--memory-limit BYTES]
  actorflow graph --graph FILE --dot OUT [--feed NAME[:PORT]]... [--fetch NAME[:PORT]]...
                  [--target NAME]... [--devices cpu:N[,gpu:M]] [--placed] [--partitioned]
  actorflow gradients --graph FILE --y NAME[:PORT] [--y ...] --x NAME[:PORT] [--x ...] --out FILE
  actorflow records convert-idx|convert-csv|count|print ...
  actorflow ops
  actorflow help

run   Loads the GraphDef in FILE (.pb or .pbtxt) into a session and runs steps,
      printing one JSON line per step on stdout.
      --graph FILE          the graph to load (required)
      --feed NAME=VALUE     feeds a tensor; VALUE is JSON: a scalar, a nested array
                            or {"dtype":"float64","shape":[2],"values":[1,2]}
      --fetch NAME          fetches a tensor ("node" or "node:port")
      --target NAME         runs a node without fetching anything
      --timeout-ms N        fails a step that runs longer than N ms (0: no limit,
                            at most 2147483647)
      --steps FILE          runs the JSON object on each line of FILE ("-": stdin),
                            {"feeds":{...},"fetches":[...],"targets":[...],"timeout_ms":N},
                            with the flags above as defaults
      --trace FILE          traces every step (how and when each node ran, its outputs'
                            shapes and bytes) and writes them as one Chrome trace to
                            FILE (open it in ui.perfetto.dev or chrome://tracing)
      --no-optimize         runs the graph as written: no common subexpression
                            elimination, no constant folding
      --devices cpu:N[,gpu:M]
                            the devices the graph is placed on: N CPU devices (1 to
                            64; default cpu:1) and M GPUs (refused when the machine or
                            build has fewer)
      --show-placement      prints the device of each node of the first placed step
                            to stderr, "NODE -> DEVICE", sorted by node name
      --summarize N         a fetched tensor of more than 1000 (and 2N) elements is
                            summarised: dtype, shape, "summarized":true and its first
                            and last N values, flat (default 3)
      --full-values         writes every value of every fetched tensor
      --memory-limit BYTES  the memory each device's tensors, a step's output JSON and a
                            --steps line may take (e.g. 512M, 4G; default: the memory
                            available); a step over it fails with RESOURCE_EXHAUSTED
      Exit status: 0 all steps succeeded, 1 a step failed (out of memory included) or
      the trace could not be written, 2 usage or graph error.
graph Writes the GraphDef in FILE as Graphviz DOT: one box per op (name, op), data
      edges labelled with dtype and shape when known, control edges dashed.
      --graph FILE          the graph to load (required)
      --dot OUT             where to write the DOT text ("-": stdout; required)
      --feed NAME           a tensor fed by the step drawn (no value: it cuts the graph)
      --fetch NAME          a tensor fetched by the step drawn; with --fetch or
      --target NAME         --target the graph is pruned to what they need
      --devices cpu:N[,gpu:M]
                            the devices to place on, as for run (default cpu:1)
      --placed              places the pruned graph and groups nodes by device
      --partitioned         draws the partitions of the placed graph, one cluster per
                            device, with a dotted edge from each _Send to its _Recv
      Exit status: 0 written, 1 OUT could not be written, 2 usage error or a graph that
      does not load, prune or place.
gradients
      Adds to the GraphDef in FILE (.pb or .pbtxt) the nodes computing the gradient
      of the ys (the sum of all their elements) with respect to each x, writes the
      graph to the --out file and prints the gradient tensors' names, one per line
      in --x order (fetch them with 'run --fetch'). An x that no y depends on gets
      zeros.
      --graph FILE          the graph to load (required)
      --y NAME              a tensor to differentiate ("node" or "node:port"; at least one)
      --x NAME              a tensor to differentiate with respect to (at least one)
      --out FILE            where to write the graph: text if FILE ends in .pbtxt or
                            .txt, binary otherwise (required)
      Exit status: 0 written, 1 the output could not be written, 2 usage error, a graph
      that does not load, or a gradient that cannot be built.
records
      Converts IDX (MNIST, Fashion-MNIST) and CSV files to TFRecord files, counts
      and prints the records of TFRecord files: see 'actorflow records help'.
ops   Lists the registered ops and the type constraints of their kernels.
)";

// Prints `status` as a usage error and returns the usage exit status.
int UsageError(const Status& status) {
  std::cerr << "actorflow: " << status.ToString() << "\nRun 'actorflow help' for usage.\n";
  return kExitUsage;
}

// The status of an allocation that failed (std::bad_alloc, or std::length_error
// for a container asked to outgrow its maximum) while doing `what`.
Status OutOfMemory(const std::string& what, const std::exception& e) {
  return errors::ResourceExhausted("out of memory ", what, " (", e.what(), ")");
}

// Prints `status` as the error of a command and returns `exit_code`.
int CommandError(const Status& status, int exit_code) {
  std::cerr << "actorflow: " << status.ToString() << "\n";
  return exit_code;
}

// JSON text of a message: never throws, even for strings that are not UTF-8.
std::string DumpJson(const ordered_json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Shorten(const std::string& text) {
  constexpr size_t kMaxChars = 200;
  return text.size() > kMaxChars ? text.substr(0, kMaxChars) + "..." : text;
}

Status ParseJson(const std::string& text, json* out) {
  try {
    *out = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    return errors::InvalidArgument("malformed JSON '", Shorten(text), "': ", e.what());
  }
  return Status::OK();
}

// "name" or "name:port" -> "name:port".
Status NormalizeTensorName(const std::string& name, std::string* out) {
  std::string node;
  int port = 0;
  if (!ParseTensorName(name, &node, &port) || port < 0)
    return errors::InvalidArgument("malformed tensor name '", name, "' (expected NAME or NAME:PORT)");
  *out = node + ":" + std::to_string(port);
  return Status::OK();
}

// The largest timeout accepted, in ms (about 24.8 days).
constexpr int64_t kMaxTimeoutMs = std::numeric_limits<int32_t>::max();

Status ParseTimeoutMs(const std::string& text, int64_t* out) {
  size_t used = 0;
  try {
    *out = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || *out < 0 || *out > kMaxTimeoutMs)
    return errors::InvalidArgument("expected an integer from 0 to ", kMaxTimeoutMs, ", got '", text, "'");
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Devices.

// The most devices of one type --devices accepts.
constexpr int kMaxDevicesPerType = 64;

// What --devices asks for.
struct DeviceCounts {
  int cpu = 1;
  int gpu = 0;
};

// A decimal count from 0 to kMaxDevicesPerType; false for anything else.
bool ParseDeviceCount(const std::string& text, int* out) {
  if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoi(text);
  return *out <= kMaxDevicesPerType;
}

// --devices cpu:N[,gpu:M] (case ignored).
Status ParseDevices(const std::string& spec, DeviceCounts* out) {
  std::string text = spec;
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  const Status bad = errors::InvalidArgument("--devices expects cpu:N[,gpu:M] with N from 1 to ", kMaxDevicesPerType,
                                             " and M from 0 to ", kMaxDevicesPerType, ", got '", spec, "'");
  const size_t comma = text.find(',');
  const std::string cpu = text.substr(0, comma);
  DeviceCounts counts;
  if (cpu.rfind("cpu:", 0) != 0 || !ParseDeviceCount(cpu.substr(4), &counts.cpu) || counts.cpu < 1) return bad;
  if (comma != std::string::npos) {
    const std::string gpu = text.substr(comma + 1);
    if (gpu.rfind("gpu:", 0) != 0 || !ParseDeviceCount(gpu.substr(4), &counts.gpu)) return bad;
  }
  *out = counts;
  return Status::OK();
}

// The runtime options giving the devices of `counts`. UNAVAILABLE for GPUs:
// the runtime has no GPU device yet (once it has, gpu:M is passed on here).
Status RuntimeOptionsFor(const DeviceCounts& counts, RuntimeOptions* out) {
  out->num_cpu_devices = counts.cpu;
  out->num_gpu_devices = counts.gpu;
  return Status::OK();
}

// The runtime got every GPU --devices asked for (GPUs exist only in a CUDA
// build on a machine that has them).
Status CheckGpus(const Runtime& runtime, const DeviceCounts& counts) {
  const size_t have = runtime.device_manager().OfType(DEVICE_GPU).size();
  if (have >= static_cast<size_t>(counts.gpu)) return Status::OK();
  return errors::Unavailable("--devices asks for ", counts.gpu, " GPU device", counts.gpu == 1 ? "" : "s",
                             " (gpu:", counts.gpu, "), but this runtime has ", have,
                             " (GPUs need a CUDA build and a GPU): use fewer, or cpu:N only");
}

// ---------------------------------------------------------------------------
// Steps.

// What one step feeds, fetches and runs; tensor names in "name:port" form.
struct StepSpec {
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  int64_t timeout_ms = 0;
};

// Adds the feed `name` = `value` (JSON) to `feeds`, replacing any earlier one.
Status AddFeed(const std::string& name, const json& value, std::map<std::string, Tensor>* feeds) {
  std::string tensor_name;
  AF_RETURN_IF_ERROR(NormalizeTensorName(name, &tensor_name));
  Tensor t;
  Status s = TensorFromJson(value, &t);
  if (!s.ok()) return errors::InvalidArgument("feed '", name, "': ", s.message());
  (*feeds)[tensor_name] = std::move(t);
  return Status::OK();
}

Status ParseStepFeeds(const json& j, std::map<std::string, Tensor>* feeds) {
  if (!j.is_object()) return errors::InvalidArgument("\"feeds\" must be an object of tensor name -> value");
  std::set<std::string> seen;  // names fed by this line, to catch "x" next to "x:0"
  for (const auto& item : j.items()) {
    std::string tensor_name;
    AF_RETURN_IF_ERROR(NormalizeTensorName(item.key(), &tensor_name));
    if (!seen.insert(tensor_name).second) return errors::InvalidArgument("tensor '", tensor_name, "' is fed twice");
    AF_RETURN_IF_ERROR(AddFeed(item.key(), item.value(), feeds));
  }
  return Status::OK();
}

// A JSON array of strings; tensor names are normalized when `tensors`.
Status ParseNameList(const json& j, const char* key, bool tensors, std::vector<std::string>* out) {
  if (!j.is_array()) return errors::InvalidArgument("\"", key, "\" must be an array of names");
  out->clear();
  for (const auto& v : j) {
    if (!v.is_string() || v.get_ref<const std::string&>().empty())
      return errors::InvalidArgument("\"", key, "\" must hold non-empty names, got ", JsonSnippet(v));
    std::string name = v.get<std::string>();
    if (tensors) AF_RETURN_IF_ERROR(NormalizeTensorName(name, &name));
    out->push_back(std::move(name));
  }
  return Status::OK();
}

// Parses one --steps line over the defaults from the flags.
Status ParseStepLine(const std::string& line, const StepSpec& defaults, StepSpec* step) {
  json j;
  AF_RETURN_IF_ERROR(ParseJson(line, &j));
  if (!j.is_object()) return errors::InvalidArgument("a step must be a JSON object, got '", Shorten(line), "'");
  *step = defaults;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const json& value = item.value();
    if (key == "feeds") {
      AF_RETURN_IF_ERROR(ParseStepFeeds(value, &step->feeds));
    } else if (key == "fetches") {
      AF_RETURN_IF_ERROR(ParseNameList(value, "fetches", /*tensors=*/true, &step->fetches));
    } else if (key == "targets") {
      AF_RETURN_IF_ERROR(ParseNameList(value, "targets", /*tensors=*/false, &step->targets));
    } else if (key == "timeout_ms") {
      // An unsigned value is compared as one: above INT64_MAX, get<int64_t> would wrap.
      const bool valid = value.is_number_unsigned()
                             ? value.get<uint64_t>() <= static_cast<uint64_t>(kMaxTimeoutMs)
                             : value.is_number_integer() && value.get<int64_t>() >= 0 &&
                                   value.get<int64_t>() <= kMaxTimeoutMs;
      if (!valid)
        return errors::InvalidArgument("\"timeout_ms\" must be an integer from 0 to ", kMaxTimeoutMs, ", got ",
                                       JsonSnippet(value));
      step->timeout_ms = value.get<int64_t>();
    } else {
      return errors::InvalidArgument("unknown key \"", key,
                                     "\" in step (expected \"feeds\", \"fetches\", \"targets\", \"timeout_ms\")");
    }
  }
  return Status::OK();
}

std::vector<std::string> Unique(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& n : names)
    if (seen.insert(n).second) out.push_back(n);
  return out;
}

// What the steps of one `run` share.
struct StepRunner {
  Session* session;
  RunMetadata* trace;              // nullptr: steps are not traced
  bool placement_pending = false;  // --show-placement, until a step has been placed
  TensorJsonOptions json_options;  // --summarize, --full-values
  uint64_t memory_limit = 0;       // --memory-limit; 0: the memory available at each step
};

// The memory a step's output may take: --memory-limit, else what is
// available now within the process's budget (ACTORFLOW_MEMORY_LIMIT_MB).
uint64_t MemoryLimit(const StepRunner& runner) {
  if (runner.memory_limit != 0) return runner.memory_limit;
  return std::min(AvailableMemoryBytes(), static_cast<uint64_t>(std::max<int64_t>(DefaultMemoryLimit(), 0)));
}

// JSON takes this many times the size of its text at most once parsed, with
// the tensors built from it (a value of "1," is a 16-byte json node, a
// pointer to it and the element).
constexpr uint64_t kParsedBytesPerJsonByte = 32;

// Writes the "fetches" object of a step's line, {"y:0":{...},...}, into `out`;
// ResourceExhausted, before writing, when it may take more than `limit` bytes.
Status FetchesJson(const std::vector<std::string>& names, const std::vector<Tensor>& tensors,
                   const StepRunner& runner, std::string* out) {
  uint64_t bytes = 2, largest_bytes = 0;
  size_t largest = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const uint64_t b = TensorJsonBytesBound(tensors[i], runner.json_options) + 6 * names[i].size() + 4;
    bytes += b;
    if (b > largest_bytes) {
      largest_bytes = b;
      largest = i;
    }
  }
  const uint64_t limit = MemoryLimit(runner);
  if (bytes > limit) {
    const Tensor& t = tensors[largest];
    const bool whole = !IsSummarized(t, runner.json_options);
    return errors::ResourceExhausted(
        "the JSON of the fetches may take up to ", bytes, " bytes, more than the ", limit, " bytes of memory ",
        runner.memory_limit != 0 ? "--memory-limit allows" : "available", ": fetch '", names[largest], "' (",
        DataTypeString(t.dtype()), " ", t.shape().DebugString(), ", ", t.NumElements(), " elements",
        whole ? ", written whole" : ", summarised", ") takes up to ", largest_bytes,
        whole && runner.json_options.summarize_threshold < 0 ? "; drop --full-values to summarise it" : "",
        "; fetch a slice or less");
  }
  out->clear();
  out->push_back('{');
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out->push_back(',');
    *out += DumpJson(names[i]);
    out->push_back(':');
    AppendTensorJson(tensors[i], runner.json_options, out);
  }
  out->push_back('}');
  return Status::OK();
}

// Runs `step`, writing the JSON object of its fetched tensors by name to
// `fetched`. With a trace, the step is traced and its stats are appended to it.
Status RunStep(const StepRunner& runner, const StepSpec& step, std::string* fetched) {
  const std::vector<std::pair<std::string, Tensor>> feeds(step.feeds.begin(), step.feeds.end());
  const std::vector<std::string> fetches = Unique(step.fetches);
  RunOptions options;
  options.timeout_in_ms = step.timeout_ms;
  if (runner.trace) options.trace_level = TraceLevel::kFullTrace;
  std::vector<Tensor> outputs;
  RunMetadata md;
  const Status ran = runner.session->Run(options, feeds, fetches, step.targets, &outputs, &md);
  if (runner.trace) {
    for (auto& s : md.step_stats) runner.trace->step_stats.push_back(std::move(s));
  }
  AF_RETURN_IF_ERROR(ran);
  if (outputs.size() != fetches.size())
    return errors::Internal("Run returned ", outputs.size(), " tensors for ", fetches.size(), " fetches");
  return FetchesJson(fetches, outputs, runner, fetched);
}

// Prints the JSON line of step `index` with the JSON object `fetched` (when
// ok); returns whether it succeeded. Never throws: a line that cannot be built
// for want of memory is printed from a fixed text.
bool Report(int index, const Status& status, const std::string& fetched) {
  try {
    if (status.ok()) {
      // Written in pieces: `fetched` may be most of the memory there is.
      std::cout << "{\"step\":" << index << ",\"ok\":true,\"fetches\":" << fetched << "}" << std::endl;
      return true;
    }
    ordered_json line;
    line["step"] = index;
    line["ok"] = false;
    line["code"] = CodeName(status.code());
    line["message"] = status.message();
    std::cout << DumpJson(line) << std::endl;  // flushed: lines stream out as steps finish
  } catch (const std::exception&) {        // std::bad_alloc
    std::cout << "{\"step\":" << index
              << R"(,"ok":false,"code":"RESOURCE_EXHAUSTED","message":"out of memory writing this step's line"})"
              << std::endl;
  }
  return false;
}

// Prints the placement of the last step prepared in `session` to stderr, one
// "NODE -> DEVICE" line per node, sorted by name; false when none was placed yet.
bool ShowPlacement(const Session& session) {
  const std::map<std::string, std::string> placement = session.LastPlacement();
  if (placement.empty()) return false;
  std::string text = "actorflow: placement of the first step:\n";
  for (const auto& [node, device] : placement) text += node + " -> " + device + "\n";
  std::cerr << text << std::flush;
  return true;
}

bool RunAndReport(StepRunner* runner, int index, const StepSpec& step) {
  std::string fetched;
  Status status;
  try {
    status = RunStep(*runner, step, &fetched);
    if (runner->placement_pending && ShowPlacement(*runner->session)) runner->placement_pending = false;
  } catch (const std::bad_alloc& e) {
    status = OutOfMemory("running the step or writing its fetches", e);
  } catch (const std::length_error& e) {
    status = OutOfMemory("running the step or writing its fetches", e);
  }
  if (!status.ok()) std::string().swap(fetched);  // what was written so far is given back
  return Report(index, status, fetched);
}

// Reads the next line of `in` (its '\n' dropped) into `line`; false at the
// end of input. A line longer than `max_bytes`, or one that could not be held
// (std::bad_alloc), is read to its end and dropped, and `*too_long` set.
bool ReadLine(std::istream& in, uint64_t max_bytes, std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  for (;;) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) return any;
    any = true;
    if (c == '\n') return true;
    if (*too_long) continue;
    if (line->size() >= max_bytes) {
      *too_long = true;
      std::string().swap(*line);
      continue;
    }
    try {
      line->push_back(static_cast<char>(c));
    } catch (const std::bad_alloc&) {
      *too_long = true;
      std::string().swap(*line);
    }
  }
}

// Runs every non-blank line of `in` as a step; returns whether all succeeded.
bool RunStepLines(StepRunner* runner, std::istream& in, const StepSpec& defaults) {
  bool all_ok = true;
  int index = 0;
  int64_t line_number = 0;
  std::string line;
  bool too_long = false;
  for (;;) {
    const uint64_t max_line = MemoryLimit(*runner) / kParsedBytesPerJsonByte;
    if (!ReadLine(in, max_line, &line, &too_long)) break;
    ++line_number;
    if (!too_long && line.find_first_not_of(" \t\r") == std::string::npos) continue;
    StepSpec step;
    Status parsed;
    if (too_long) {
      parsed = errors::ResourceExhausted("--steps line ", line_number, " (step ", index, ") is longer than the ",
                                         max_line, " bytes that 1/", kParsedBytesPerJsonByte, " of the ",
                                         runner->memory_limit != 0 ? "--memory-limit" : "memory available",
                                         " allows; it is skipped");
    } else {
      try {
        parsed = ParseStepLine(line, defaults, &step);
      } catch (const std::bad_alloc& e) {
        parsed = OutOfMemory("reading the step's line", e);
      } catch (const std::length_error& e) {
        parsed = OutOfMemory("reading the step's line", e);
      }
    }
    const bool ok = parsed.ok() ? RunAndReport(runner, index, step) : Report(index, parsed, std::string());
    all_ok = all_ok && ok;
    ++index;
  }
  return all_ok;
}

// ---------------------------------------------------------------------------
// `actorflow run`.

struct RunArgs {
  bool help = false;
  std::string graph_path;
  std::string steps_path;  // empty: one step from the flags
  std::string trace_path;  // empty: no tracing
  bool has_timeout = false;
  bool optimize = true;  // --no-optimize: false
  bool has_devices = false;
  DeviceCounts devices;
  bool show_placement = false;
  bool has_summarize = false;
  TensorJsonOptions json_options;  // --summarize, --full-values
  uint64_t memory_limit = 0;       // --memory-limit; 0: none given
  StepSpec defaults;
};

// --feed NAME[:PORT]=VALUE
Status ParseFeedFlag(const std::string& spec, std::map<std::string, Tensor>* feeds) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return errors::InvalidArgument("--feed expects NAME[:PORT]=VALUE, got '", spec, "'");
  const std::string name = spec.substr(0, eq);
  std::string tensor_name;
  AF_RETURN_IF_ERROR(NormalizeTensorName(name, &tensor_name));
  if (feeds->count(tensor_name)) return errors::InvalidArgument("tensor '", tensor_name, "' is fed twice");
  json value;
  AF_RETURN_IF_ERROR(ParseJson(spec.substr(eq + 1), &value));
  return AddFeed(name, value, feeds);
}

Status SetOnce(const std::string& flag, const std::string& value, std::string* field) {
  if (!field->empty()) return errors::InvalidArgument(flag, " is given twice");
  if (value.empty()) return errors::InvalidArgument(flag, " needs a non-empty value");
  *field = value;
  return Status::OK();
}

Status ApplyRunFlag(const std::string& flag, const std::string& value, RunArgs* args) {
  StepSpec& step = args->defaults;
  if (flag == "--graph") return SetOnce(flag, value, &args->graph_path);
  if (flag == "--steps") return SetOnce(flag, value, &args->steps_path);
  if (flag == "--trace") return SetOnce(flag, value, &args->trace_path);
  if (flag == "--no-optimize") {
    args->optimize = false;
    return Status::OK();
  }
  if (flag == "--show-placement") {
    args->show_placement = true;
    return Status::OK();
  }
  if (flag == "--devices") {
    if (args->has_devices) return errors::InvalidArgument(flag, " is given twice");
    args->has_devices = true;
    return ParseDevices(value, &args->devices);
  }
  if (flag == "--full-values" || flag == "--summarize") {
    if (args->has_summarize) return errors::InvalidArgument("--full-values and --summarize are given together or twice");
    args->has_summarize = true;
    if (flag == "--full-values") {
      args->json_options.summarize_threshold = -1;
      return Status::OK();
    }
    if (value.empty() || value.size() > 7 || value.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(value) < 1)
      return errors::InvalidArgument("--summarize expects a count of values from 1 to 9999999, got '", value, "'");
    args->json_options.edge_items = std::stoi(value);
    return Status::OK();
  }
  if (flag == "--memory-limit") {
    if (args->memory_limit != 0) return errors::InvalidArgument(flag, " is given twice");
    const Status s = ParseByteSize(value, &args->memory_limit);
    return s.ok() ? s : errors::InvalidArgument("--memory-limit: ", s.message());
  }
  if (flag == "--feed") return ParseFeedFlag(value, &step.feeds);
  if (flag == "--fetch") {
    std::string tensor_name;
    AF_RETURN_IF_ERROR(NormalizeTensorName(value, &tensor_name));
    step.fetches.push_back(tensor_name);
    return Status::OK();
  }
  if (flag == "--target") {
    if (value.empty()) return errors::InvalidArgument("--target needs a node name");
    step.targets.push_back(value);
    return Status::OK();
  }
  if (flag == "--timeout-ms") {
    if (args->has_timeout) return errors::InvalidArgument(flag, " is given twice");
    args->has_timeout = true;
    Status s = ParseTimeoutMs(value, &step.timeout_ms);
    return s.ok() ? s : errors::InvalidArgument("--timeout-ms: ", s.message());
  }
  return errors::InvalidArgument("unknown flag '", flag, "'");
}

// Walks `argv` as "--flag VALUE" or "--flag=VALUE" pairs, each flag one of
// `known`, calling apply(flag, value); a flag of `switches` takes no value
// (apply gets ""); "--help"/"-h" sets *help and stops.
template <class Apply>
Status ParseFlags(const std::vector<std::string>& argv, const std::set<std::string>& known, bool* help,
                  Apply&& apply, const std::set<std::string>& switches = {}) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return Status::OK();
    }
    std::string value;
    if (switches.count(flag)) {
      AF_RETURN_IF_ERROR(apply(flag, value));
      continue;
    }
    const size_t eq = flag.find('=');
    const bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (!known.count(flag)) return errors::InvalidArgument("unknown argument '", argv[i], "'");
    if (!inline_value) {
      if (i + 1 >= argv.size()) return errors::InvalidArgument(flag, " needs a value");
      value = argv[++i];
    }
    AF_RETURN_IF_ERROR(apply(flag, value));
  }
  return Status::OK();
}

Status ParseRunArgs(const std::vector<std::string>& argv, RunArgs* args) {
  static const std::set<std::string> kFlags = {"--graph",   "--feed",    "--fetch",     "--target",
                                               "--timeout-ms", "--steps", "--trace", "--devices",
                                               "--summarize",  "--memory-limit"};
  AF_RETURN_IF_ERROR(ParseFlags(
      argv, kFlags, &args->help,
      [&](const std::string& flag, const std::string& value) { return ApplyRunFlag(flag, value, args); },
      {"--no-optimize", "--show-placement", "--full-values"}));
  if (args->help) return Status::OK();
  if (args->graph_path.empty()) return errors::InvalidArgument("--graph is required");
  return Status::OK();
}

// Calls `fn` (returning a Status), turning an allocation that fails in it
// into ResourceExhausted naming `what`.
template <class Fn>
Status CatchOutOfMemory(const std::string& what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc& e) {
    return OutOfMemory(what, e);
  } catch (const std::length_error& e) {
    return OutOfMemory(what, e);
  }
}

Status LoadGraph(const std::string& path, Session* session) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(ReadGraphDefFile(path, &def));
  return session->Create(def);
}

// Opens the --steps file ("-": stdin) into `*in`.
Status OpenSteps(const std::string& path, std::ifstream* file, std::istream** in) {
  if (path == "-") {
    *in = &std::cin;
    return Status::OK();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return errors::InvalidArgument("--steps '", path, "' is a directory");
  file->open(path);
  if (!*file) return errors::NotFound("cannot read --steps file '", path, "'");
  *in = file;
  return Status::OK();
}

// Opens the --trace file for writing into `*file`.
Status OpenTrace(const std::string& path, std::ofstream* file) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return errors::InvalidArgument("--trace '", path, "' is a directory");
  file->open(path, std::ios::out | std::ios::trunc);
  if (!*file) return errors::NotFound("cannot open --trace file '", path, "' for writing");
  return Status::OK();
}

// Writes the Chrome trace of `trace` to the open `file` and says where on stderr.
Status WriteTrace(const RunMetadata& trace, const std::string& path, std::ofstream* file) {
  try {
    *file << ChromeTraceJson(trace) << '\n';
  } catch (const std::bad_alloc& e) {
    return OutOfMemory("writing the trace to '" + path + "'", e);
  } catch (const std::length_error& e) {
    return OutOfMemory("writing the trace to '" + path + "'", e);
  }
  file->close();
  if (!*file) return errors::DataLoss("failed writing the trace to '", path, "'");
  std::cerr << "actorflow: trace of " << trace.step_stats.size() << " node runs written to " << path << "\n";
  return Status::OK();
}

int RunCommand(const std::vector<std::string>& argv) {
  RunArgs args;
  const Status parsed = ParseRunArgs(argv, &args);
  if (args.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  RuntimeOptions runtime_options;
  const Status devices = RuntimeOptionsFor(args.devices, &runtime_options);
  if (!devices.ok()) return UsageError(devices);
  // Each device's tensors get the budget too, so a step whose tensors do not fit fails as well.
  runtime_options.device_memory_limit_bytes =
      static_cast<int64_t>(std::min<uint64_t>(args.memory_limit, std::numeric_limits<int64_t>::max()));

  std::ifstream steps_file;
  std::istream* steps = nullptr;
  if (!args.steps_path.empty()) {
    const Status opened = OpenSteps(args.steps_path, &steps_file, &steps);
    if (!opened.ok()) return UsageError(opened);
  }

  // Opened now, so that a path that cannot be written fails before any step runs.
  std::ofstream trace_file;
  if (!args.trace_path.empty()) {
    const Status opened = OpenTrace(args.trace_path, &trace_file);
    if (!opened.ok()) return UsageError(opened);
  }

  Runtime runtime(runtime_options);  // declared before the session, which must end first
  const Status gpus = CheckGpus(runtime, args.devices);
  if (!gpus.ok()) return UsageError(gpus);
  SessionOptions options;
  options.runtime = &runtime;
  options.graph_options.do_common_subexpression_elimination = args.optimize;
  options.graph_options.do_constant_folding = args.optimize;
  Session session(options);
  const Status loaded =
      CatchOutOfMemory("loading the graph '" + args.graph_path + "'", [&] { return LoadGraph(args.graph_path, &session); });
  if (!loaded.ok()) return CommandError(loaded, errors::IsResourceExhausted(loaded) ? kExitStepFailed : kExitUsage);
  RunMetadata trace;
  RunMetadata* tracing = args.trace_path.empty() ? nullptr : &trace;
  StepRunner runner{&session, tracing, args.show_placement, args.json_options, args.memory_limit};
  const bool all_ok = steps ? RunStepLines(&runner, *steps, args.defaults) : RunAndReport(&runner, 0, args.defaults);
  session.Close();
  if (tracing) {
    const Status written = WriteTrace(trace, args.trace_path, &trace_file);
    if (!written.ok()) {
      std::cerr << "actorflow: " << written.ToString() << "\n";
      return kExitStepFailed;
    }
  }
  return all_ok ? kExitOk : kExitStepFailed;
}

// ---------------------------------------------------------------------------
// `actorflow graph`.

struct GraphArgs {
  bool help = false;
  std::string graph_path;
  std::string dot_path;  // "-": stdout
  std::vector<std::string> feeds, fetches;  // "name:port"
  std::vector<std::string> targets;
  bool has_devices = false;
  DeviceCounts devices;
  bool placed = false;
  bool partitioned = false;
};

Status ApplyGraphFlag(const std::string& flag, const std::string& value, GraphArgs* args) {
  if (flag == "--graph") return SetOnce(flag, value, &args->graph_path);
  if (flag == "--dot") return SetOnce(flag, value, &args->dot_path);
  if (flag == "--placed" || flag == "--partitioned") {
    (flag == "--placed" ? args->placed : args->partitioned) = true;
    return Status::OK();
  }
  if (flag == "--devices") {
    if (args->has_devices) return errors::InvalidArgument(flag, " is given twice");
    args->has_devices = true;
    return ParseDevices(value, &args->devices);
  }
  if (flag == "--target") {
    if (value.empty()) return errors::InvalidArgument("--target needs a node name");
    args->targets.push_back(value);
    return Status::OK();
  }
  std::string tensor_name;  // --feed or --fetch
  Status s = NormalizeTensorName(value, &tensor_name);
  if (!s.ok()) return errors::InvalidArgument(flag, ": ", s.message());
  (flag == "--feed" ? args->feeds : args->fetches).push_back(tensor_name);
  return Status::OK();
}

Status ParseGraphArgs(const std::vector<std::string>& argv, GraphArgs* args) {
  static const std::set<std::string> kFlags = {"--graph", "--dot", "--feed", "--fetch", "--target", "--devices"};
  AF_RETURN_IF_ERROR(ParseFlags(
      argv, kFlags, &args->help,
      [&](const std::string& flag, const std::string& value) { return ApplyGraphFlag(flag, value, args); },
      {"--placed", "--partitioned"}));
  if (args->help) return Status::OK();
  if (args->graph_path.empty()) return errors::InvalidArgument("--graph is required");
  if (args->dot_path.empty()) return errors::InvalidArgument("--dot is required");
  const bool prunes = !args->fetches.empty() || !args->targets.empty();
  if (!args->feeds.empty() && !prunes) return errors::InvalidArgument("--feed needs a --fetch or --target");
  if ((args->placed || args->partitioned) && !prunes)
    return errors::InvalidArgument(args->partitioned ? "--partitioned" : "--placed",
                                   " needs a --fetch or --target: the step whose graph is placed");
  return Status::OK();
}

// Loads the graph, prunes, places and partitions it as asked, and writes its DOT text.
Status BuildDot(const GraphArgs& args, const RuntimeOptions& runtime_options, std::string* dot) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(ReadGraphDefFile(args.graph_path, &def));
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(def, &g));
  if (!args.fetches.empty() || !args.targets.empty()) {
    FeedFetchInfo info;
    AF_RETURN_IF_ERROR(RewriteGraphForExecution(&g, args.feeds, args.fetches, args.targets, &info));
  }
  if (!args.placed && !args.partitioned) {
    *dot = GraphToDot(g, DotGrouping::kNone);
    return Status::OK();
  }
  Runtime runtime(runtime_options);  // for its devices only: nothing runs
  AF_RETURN_IF_ERROR(CheckGpus(runtime, args.devices));
  AF_RETURN_IF_ERROR(PlaceGraph(&g, runtime.device_manager(), PlacerOptions()));
  if (!args.partitioned) {
    *dot = GraphToDot(g, DotGrouping::kByDevice);
    return Status::OK();
  }
  std::vector<GraphPartition> partitions;
  AF_RETURN_IF_ERROR(PartitionGraph(g, PartitionOptions(), &partitions));
  return PartitionsToDot(partitions, dot);
}

// Writes `text` to `path` ("-": stdout).
Status WriteText(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    return std::cout ? Status::OK() : errors::DataLoss("failed writing to stdout");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return errors::InvalidArgument("--dot '", path, "' is a directory");
  std::ofstream file(path, std::ios::out | std::ios::trunc);
  if (!file) return errors::NotFound("cannot open --dot file '", path, "' for writing");
  file << text;
  file.close();
  if (!file) return errors::DataLoss("failed writing the graph to '", path, "'");
  return Status::OK();
}

int GraphCommand(const std::vector<std::string>& argv) {
  GraphArgs args;
  const Status parsed = ParseGraphArgs(argv, &args);
  if (args.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  RuntimeOptions runtime_options;
  runtime_options.num_threads = 1;
  const Status devices = RuntimeOptionsFor(args.devices, &runtime_options);
  if (!devices.ok()) return UsageError(devices);
  std::string dot;
  const Status built = CatchOutOfMemory("drawing the graph", [&] { return BuildDot(args, runtime_options, &dot); });
  if (!built.ok()) return CommandError(built, errors::IsResourceExhausted(built) ? kExitStepFailed : kExitUsage);
  const Status written = CatchOutOfMemory("writing the DOT text", [&] { return WriteText(args.dot_path, dot); });
  if (!written.ok()) return CommandError(written, kExitStepFailed);
  return kExitOk;
}

// ---------------------------------------------------------------------------
// `actorflow gradients`.

struct GradientsArgs {
  bool help = false;
  std::string graph_path;
  std::string out_path;
  std::vector<std::string> ys, xs;  // tensor names as given
};

Status ParseGradientsArgs(const std::vector<std::string>& argv, GradientsArgs* args) {
  static const std::set<std::string> kFlags = {"--graph", "--out", "--y", "--x"};
  AF_RETURN_IF_ERROR(ParseFlags(argv, kFlags, &args->help, [&](const std::string& flag, const std::string& value) {
    if (flag == "--graph") return SetOnce(flag, value, &args->graph_path);
    if (flag == "--out") return SetOnce(flag, value, &args->out_path);
    if (value.empty()) return errors::InvalidArgument(flag, " needs a tensor name");
    (flag == "--y" ? args->ys : args->xs).push_back(value);
    return Status::OK();
  }));
  if (args->help) return Status::OK();
  if (args->graph_path.empty()) return errors::InvalidArgument("--graph is required");
  if (args->out_path.empty()) return errors::InvalidArgument("--out is required");
  if (args->ys.empty()) return errors::InvalidArgument("at least one --y is required");
  if (args->xs.empty()) return errors::InvalidArgument("at least one --x is required");
  return Status::OK();
}

// The Output named `name` ("node" or "node:port") in the scope's graph.
Status FindTensor(const Scope& scope, const std::string& flag, const std::string& name, Output* out) {
  std::string node_name;
  int port = 0;
  if (!ParseTensorName(name, &node_name, &port) || port < 0)
    return errors::InvalidArgument(flag, " '", name, "' is not a tensor name (expected NAME or NAME:PORT)");
  Node* node = scope.graph()->FindNode(node_name);
  if (node == nullptr) return errors::NotFound(flag, " '", name, "': the graph has no node named '", node_name, "'");
  if (port >= node->num_outputs())
    return errors::InvalidArgument(flag, " '", name, "': node '", node_name, "' (op '", node->type_string(),
                                   "') has ", node->num_outputs(), " outputs");
  *out = Output(node, port);
  return Status::OK();
}

// Loads the graph, adds the gradients, returns the graph and their names.
Status BuildGradients(const GradientsArgs& args, proto::GraphDef* out, std::vector<std::string>* names) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(ReadGraphDefFile(args.graph_path, &def));
  const Scope root = Scope::NewRootScope();
  AF_RETURN_IF_ERROR(root.ImportGraphDef(def));
  OutputList ys(args.ys.size()), xs(args.xs.size()), grads;
  for (size_t i = 0; i < ys.size(); ++i) AF_RETURN_IF_ERROR(FindTensor(root, "--y", args.ys[i], &ys[i]));
  for (size_t i = 0; i < xs.size(); ++i) AF_RETURN_IF_ERROR(FindTensor(root, "--x", args.xs[i], &xs[i]));
  AF_RETURN_IF_ERROR(AddSymbolicGradients(root, ys, xs, &grads));
  AF_RETURN_IF_ERROR(root.ToGraphDef(out));
  names->clear();
  for (const Output& g : grads) names->push_back(g.name());
  return Status::OK();
}

int GradientsCommand(const std::vector<std::string>& argv) {
  GradientsArgs args;
  const Status parsed = ParseGradientsArgs(argv, &args);
  if (args.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  proto::GraphDef def;
  std::vector<std::string> names;
  const Status built = CatchOutOfMemory("building the gradients", [&] { return BuildGradients(args, &def, &names); });
  if (!built.ok()) return CommandError(built, errors::IsResourceExhausted(built) ? kExitStepFailed : kExitUsage);
  const Status written = CatchOutOfMemory("writing the graph to '" + args.out_path + "'",
                                          [&] { return WriteGraphDefFile(args.out_path, def); });
  if (!written.ok()) return CommandError(written, kExitStepFailed);
  for (const std::string& name : names) std::cout << name << '\n';
  return kExitOk;
}

// ---------------------------------------------------------------------------
// `actorflow ops`.

// "CPU[T=float,double;Tidx=int32,int64]", or "CPU" without type constraints.
std::string FormatKernel(const KernelDef& kernel) {
  std::string out = kernel.device_type;
  if (kernel.type_constraints.empty()) return out;
  out += '[';
  bool first_attr = true;
  for (const auto& [attr, types] : kernel.type_constraints) {
    if (!first_attr) out += ';';
    first_attr = false;
    out += attr + "=";
    for (size_t i = 0; i < types.size(); ++i) out += (i ? "," : "") + DataTypeString(types[i]);
  }
  out += ']';
  return out;
}

int OpsCommand(const std::vector<std::string>& argv) {
  if (!argv.empty()) return UsageError(errors::InvalidArgument("ops takes no arguments, got '", argv[0], "'"));
  std::vector<std::string> names = OpRegistry::Global()->ListOpNames();
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string line = name + "  kernels:";
    const std::vector<KernelDef> kernels = KernelRegistry::Global()->KernelsForOp(name);
    if (kernels.empty()) line += " none";
    for (const auto& kernel : kernels) line += " " + FormatKernel(kernel);
    std::cout << line << '\n';
  }
  return kExitOk;
}

int Main(std::vector<std::string> argv) {
  if (argv.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string command = argv.front();
  argv.erase(argv.begin());
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "run") return RunCommand(argv);
  if (command == "graph") return GraphCommand(argv);
  if (command == "gradients") return GradientsCommand(argv);
  if (command == "records") return RecordsCommand(argv);
  if (command == "ops") return OpsCommand(argv);
  return UsageError(errors::InvalidArgument("unknown command '", command, "'"));
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  try {
    return actorflow::Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::bad_alloc& e) {  // where no command caught it: still no abort
    std::cerr << "actorflow: RESOURCE_EXHAUSTED: out of memory (" << e.what() << ")\n";
    return actorflow::kExitStepFailed;
  } catch (const std::length_error& e) {
    std::cerr << "actorflow: RESOURCE_EXHAUSTED: out of memory (" << e.what() << ")\n";
    return actorflow::kExitStepFailed;
  } catch (const std::exception& e) {
    std::cerr << "actorflow: INTERNAL: " << e.what() << "\n";
    return actorflow::kExitStepFailed;
  }
}
