// What the actorflow command's subcommands share (tools/actorflow.cpp,
// tools/*_command.hpp, tools/run_steps.hpp): exit statuses, the way an
// error is printed, flag parsing, tensor names and the --devices flag.
//
// Contract: every function here reports failure as a Status (InvalidArgument
// naming the flag or value for bad input) and none throws, except where an
// allocation fails: std::bad_alloc and std::length_error pass through, and
// CatchOutOfMemory turns them into ResourceExhausted for the caller. The
// printing helpers write to stderr and return the exit status to use.
#pragma once

#include <cstdint>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/status.hpp"

namespace actorflow {
namespace cli {

constexpr int kExitOk = 0;
constexpr int kExitStepFailed = 1;  // a step failed, an output could not be written, memory ran out
constexpr int kExitUsage = 2;       // a usage error or a graph that does not load

/// The usage text of every command (`actorflow help`, and each command's
/// --help), defined in tools/actorflow.cpp.
extern const char kUsage[];

/// Prints `status` as a usage error and returns kExitUsage.
int UsageError(const Status& status);

/// Prints `status` as the error of a command and returns `exit_code`.
int CommandError(const Status& status, int exit_code);

/// The status of an allocation that failed (std::bad_alloc, or
/// std::length_error for a container asked to outgrow its maximum) while
/// doing `what`: ResourceExhausted.
Status OutOfMemory(const std::string& what, const std::exception& e);

/// Calls `fn` (returning a Status), turning an allocation that fails in it
/// into ResourceExhausted naming `what`.
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

/// JSON text of a message: never throws a JSON error, even for strings that
/// are not UTF-8 (they are replaced).
std::string DumpJson(const nlohmann::ordered_json& j);

/// `text`, cut to 200 characters and "..." when longer: for error messages.
std::string Shorten(const std::string& text);

/// Parses `text` as JSON; InvalidArgument quoting it when malformed.
Status ParseJson(const std::string& text, nlohmann::json* out);

/// "name" or "name:port" -> "name:port"; InvalidArgument for anything else.
Status NormalizeTensorName(const std::string& name, std::string* out);

/// Parses `text` as an integer from lo to hi for `flag`; InvalidArgument naming the flag otherwise.
Status ParseInt(const std::string& flag, const std::string& text, int lo, int hi, int* out);

/// Sets `*field` to `value` for `flag`; InvalidArgument when it was set
/// already or `value` is empty.
Status SetOnce(const std::string& flag, const std::string& value, std::string* field);

/// Walks `argv` as "--flag VALUE" or "--flag=VALUE" pairs, each flag one of
/// `known`, calling apply(flag, value); a flag of `switches` takes no value
/// (apply gets ""); "--help"/"-h" sets *help and stops. InvalidArgument for
/// an unknown argument or a flag without its value; apply's error otherwise.
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

// ---------------------------------------------------------------------------
// --devices cpu:N[,gpu:M]

/// The most devices of one type --devices accepts.
constexpr int kMaxDevicesPerType = 64;

/// What --devices asks for.
struct DeviceCounts {
  int cpu = 1;
  int gpu = 0;
};

/// Parses --devices cpu:N[,gpu:M] (case ignored), N from 1 and M from 0 to
/// kMaxDevicesPerType; InvalidArgument quoting `spec` otherwise.
Status ParseDevices(const std::string& spec, DeviceCounts* out);

/// Sets the runtime options giving the devices of `counts`.
Status RuntimeOptionsFor(const DeviceCounts& counts, RuntimeOptions* out);

/// OK when the runtime got every GPU --devices asked for (GPUs exist only in
/// a CUDA build on a machine that has them); Unavailable otherwise.
Status CheckGpus(const Runtime& runtime, const DeviceCounts& counts);

}  // namespace cli
}  // namespace actorflow
