#include "tools/graph_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/preparation.hpp"
#include "tools/cli_common.hpp"
#include "tools/graph_dot.hpp"

namespace actorflow {
namespace cli {


namespace {

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
  // The session's pipeline (graph/preparation.hpp), without optimization,
  // up to the stage asked for.
  PreparationOptions prep;
  PreparedGraph prepared;
  if (!args.placed && !args.partitioned) {
    prep.last_stage = PreparationStage::kPrune;
    AF_RETURN_IF_ERROR(PrepareGraph(&g, args.feeds, args.fetches, args.targets, prep, &prepared));
    *dot = GraphToDot(g, DotGrouping::kNone);
    return Status::OK();
  }
  Runtime runtime(runtime_options);  // for its devices only: nothing runs
  AF_RETURN_IF_ERROR(CheckGpus(runtime, args.devices));
  prep.devices = &runtime.device_manager();
  prep.last_stage = args.partitioned ? PreparationStage::kPartition : PreparationStage::kPlace;
  AF_RETURN_IF_ERROR(PrepareGraph(&g, args.feeds, args.fetches, args.targets, prep, &prepared));
  if (!args.partitioned) {
    *dot = GraphToDot(g, DotGrouping::kByDevice);
    return Status::OK();
  }
  return PartitionsToDot(prepared.partitions, dot);
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

}  // namespace

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

}  // namespace cli
}  // namespace actorflow
