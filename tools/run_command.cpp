#include "tools/run_command.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/timeline.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/client/saved_model.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/comm/tls.hpp"
#include "tools/cli_common.hpp"
#include "tools/cli_memory.hpp"
#include "tools/json_tensor.hpp"
#include "tools/run_steps.hpp"

namespace actorflow {
namespace cli {

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
  std::string saved_model_dir;  // --saved-model, instead of --graph
  std::string tags;             // --tag: comma-separated (empty: "serve")
  std::string signature;        // --signature (empty: "serving_default")
  std::string steps_path;  // empty: one step from the flags
  std::string trace_path;  // empty: no tracing
  std::string session_target;  // --target actorflow://host:port: a master elsewhere
  TlsOptions tls;              // --cert, --key, --ca: for a server requiring mutual TLS
  bool has_timeout = false;
  bool optimize = true;  // --no-optimize: false
  bool has_devices = false;
  DeviceCounts devices;
  bool show_placement = false;
  bool soft_placement = false;  // --soft-placement: TensorFlow's allow_soft_placement
  bool has_summarize = false;
  TensorJsonOptions json_options;  // --summarize, --full-values
  uint64_t memory_limit = 0;       // --memory-limit; 0: none given
  StepSpec defaults;
};

// --feed NAME[:PORT]=VALUE
Status ParseFeedFlag(const std::string& spec, StepSpec* step) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return errors::InvalidArgument("--feed expects NAME[:PORT]=VALUE, got '", spec, "'");
  const std::string name = spec.substr(0, eq);
  std::string tensor_name;
  AF_RETURN_IF_ERROR(NormalizeTensorName(name, &tensor_name));
  if (step->feeds.count(tensor_name)) return errors::InvalidArgument("tensor '", tensor_name, "' is fed twice");
  json value;
  AF_RETURN_IF_ERROR(ParseJson(spec.substr(eq + 1), &value));
  return AddFeed(name, value, step);
}

Status ApplyRunFlag(const std::string& flag, const std::string& value, RunArgs* args) {
  StepSpec& step = args->defaults;
  if (flag == "--graph") return SetOnce(flag, value, &args->graph_path);
  if (flag == "--saved-model") return SetOnce(flag, value, &args->saved_model_dir);
  if (flag == "--tag") return SetOnce(flag, value, &args->tags);
  if (flag == "--signature") return SetOnce(flag, value, &args->signature);
  if (flag == "--steps") return SetOnce(flag, value, &args->steps_path);
  if (flag == "--trace") return SetOnce(flag, value, &args->trace_path);
  if (flag == "--no-optimize") {
    args->optimize = false;
    return Status::OK();
  }
  if (flag == "--soft-placement") {
    args->soft_placement = true;
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
  if (flag == "--feed") return ParseFeedFlag(value, &step);
  if (flag == "--fetch") {
    std::string tensor_name;
    AF_RETURN_IF_ERROR(NormalizeTensorName(value, &tensor_name));
    step.fetches.push_back(tensor_name);
    return Status::OK();
  }
  if (flag == "--cert") return SetOnce(flag, value, &args->tls.cert);
  if (flag == "--key") return SetOnce(flag, value, &args->tls.key);
  if (flag == "--ca") return SetOnce(flag, value, &args->tls.ca);
  if (flag == "--target" && value.find("://") != std::string::npos) {
    // A session target (no node name has "://"): where the steps run.
    return SetOnce("--target", value, &args->session_target);
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
  static const std::set<std::string> kFlags = {"--graph",   "--saved-model", "--tag", "--signature",
                                               "--feed",    "--fetch",     "--target",
                                               "--timeout-ms", "--steps", "--trace", "--devices",
                                               "--summarize",  "--memory-limit", "--cert", "--key", "--ca"};
  AF_RETURN_IF_ERROR(ParseFlags(
      argv, kFlags, &args->help,
      [&](const std::string& flag, const std::string& value) { return ApplyRunFlag(flag, value, args); },
      {"--no-optimize", "--show-placement", "--soft-placement", "--full-values"}));
  if (args->help) return Status::OK();
  if (args->graph_path.empty() == args->saved_model_dir.empty())
    return errors::InvalidArgument("give either --graph FILE or --saved-model DIR");
  if (args->saved_model_dir.empty() && (!args->tags.empty() || !args->signature.empty()))
    return errors::InvalidArgument("--tag and --signature go with --saved-model");
  if (args->tls.enabled()) {
    if (args->session_target.empty())
      return errors::InvalidArgument("--cert, --key and --ca go with --target actorflow://HOST:PORT");
    const Status checked = CheckTlsFiles(args->tls);
    if (!checked.ok()) return errors::InvalidArgument("--cert/--key/--ca: ", checked.message());
  }
  return Status::OK();
}

// Creates the session's graph from the file; `feed_dtypes` gets its placeholders' dtypes.
Status LoadGraph(const std::string& path, Session* session, std::map<std::string, DataType>* feed_dtypes) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(ReadGraphDefFile(path, &def));
  *feed_dtypes = FeedDtypes(def);
  return session->Create(def);
}

// Loads the SavedModel of --saved-model into the session: the step's names
// may be the signature's keys (`aliases`); with no fetch and no target, the
// signature's outputs are fetched.
Status LoadSavedModelForRun(const RunArgs& args, Session* session, StepSpec* defaults,
                            std::map<std::string, DataType>* feed_dtypes,
                            std::map<std::string, std::string>* aliases) {
  std::set<std::string> tags;
  std::stringstream list(args.tags.empty() ? std::string(kSavedModelServeTag) : args.tags);
  for (std::string tag; std::getline(list, tag, ',');)
    if (!tag.empty()) tags.insert(tag);
  proto::MetaGraphDef meta;
  AF_RETURN_IF_ERROR(LoadSavedModel(args.saved_model_dir, tags, session, &meta));
  *feed_dtypes = FeedDtypes(meta.graph_def());
  const std::string key = args.signature.empty() ? std::string(kDefaultServingSignature) : args.signature;
  const proto::SignatureDef* sig = nullptr;
  Status found = FindSignature(meta, key, &sig);
  if (!found.ok()) {
    // A model without signatures is still run by tensor names, unless one was asked for.
    if (!args.signature.empty() || !meta.signature_def().empty())
      return found.WithContext("SavedModel '" + args.saved_model_dir + "'");
    return Status::OK();
  }
  for (const auto* side : {&sig->inputs(), &sig->outputs()})
    for (const auto& [name, info] : *side) {
      if (info.name().empty())
        return errors::Unimplemented("signature '", key, "' key '", name, "' is not a dense tensor");
      (*aliases)[name + ":0"] = info.name();
      if (side == &sig->inputs() && info.dtype() != 0) (*feed_dtypes)[info.name()] = static_cast<DataType>(info.dtype());
    }
  if (defaults->fetches.empty() && defaults->targets.empty())
    for (const auto& kv : sig->outputs()) defaults->fetches.push_back(kv.first + ":0");
  return Status::OK();
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

}  // namespace

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

  // Declared before the session, which must end first; none when the master is elsewhere.
  std::optional<Runtime> runtime;
  SessionOptions options;
  if (args.session_target.empty()) {
    runtime.emplace(runtime_options);
    const Status gpus = CheckGpus(*runtime, args.devices);
    if (!gpus.ok()) return UsageError(gpus);
    options.runtime = &*runtime;
  } else {
    options.target = args.session_target;
    options.tls = args.tls;
  }
  options.graph_options.do_common_subexpression_elimination = args.optimize;
  options.graph_options.do_constant_folding = args.optimize;
  options.graph_options.do_remapping = args.optimize;
  if (!args.optimize) options.graph_options.fuse_optimizer_updates = FuseUpdates::kOff;
  options.allow_soft_placement = args.soft_placement;
  Session session(options);
  std::map<std::string, DataType> feed_dtypes;
  std::map<std::string, std::string> aliases;
  const Status loaded =
      args.saved_model_dir.empty()
          ? CatchOutOfMemory("loading the graph '" + args.graph_path + "'",
                             [&] { return LoadGraph(args.graph_path, &session, &feed_dtypes); })
          : CatchOutOfMemory("loading the SavedModel '" + args.saved_model_dir + "'", [&] {
              return LoadSavedModelForRun(args, &session, &args.defaults, &feed_dtypes, &aliases);
            });
  if (!loaded.ok()) return CommandError(loaded, errors::IsResourceExhausted(loaded) ? kExitStepFailed : kExitUsage);
  RunMetadata trace;
  RunMetadata* tracing = args.trace_path.empty() ? nullptr : &trace;
  StepRunner runner{&session, tracing, args.show_placement, args.json_options, args.memory_limit, std::move(feed_dtypes),
                    std::move(aliases)};
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

}  // namespace cli
}  // namespace actorflow
