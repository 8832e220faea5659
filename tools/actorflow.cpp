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
// `graph`, `gradients` and `ops` are in tools/graph_commands.hpp, `records`
// in tools/records_command.hpp; this file holds main, the dispatch to each
// command, the usage text and `run`'s flags, whose steps tools/run_steps.hpp
// runs and reports.
#include <algorithm>
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
#include "client/session.hpp"
#include "client/timeline.hpp"
#include "core/proto/graph.pb.h"
#include "core/status.hpp"
#include "core/tensor.hpp"
#include "graph/graph_def_io.hpp"
#include "tools/cli_common.hpp"
#include "tools/cli_memory.hpp"
#include "tools/graph_commands.hpp"
#include "tools/json_tensor.hpp"
#include "tools/records_command.hpp"
#include "tools/run_steps.hpp"

namespace actorflow {
namespace cli {

extern const char kUsage[] = R"(usage:
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

namespace {

using json = nlohmann::json;

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
// Dispatch.

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
}  // namespace cli
}  // namespace actorflow

int main(int argc, char** argv) {
  try {
    return actorflow::cli::Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::bad_alloc& e) {  // where no command caught it: still no abort
    std::cerr << "actorflow: RESOURCE_EXHAUSTED: out of memory (" << e.what() << ")\n";
    return actorflow::cli::kExitStepFailed;
  } catch (const std::length_error& e) {
    std::cerr << "actorflow: RESOURCE_EXHAUSTED: out of memory (" << e.what() << ")\n";
    return actorflow::cli::kExitStepFailed;
  } catch (const std::exception& e) {
    std::cerr << "actorflow: INTERNAL: " << e.what() << "\n";
    return actorflow::cli::kExitStepFailed;
  }
}
