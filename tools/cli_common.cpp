// What the actorflow command's subcommands share: see tools/cli_common.hpp.
#include "tools/cli_common.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>

#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {
namespace cli {

using json = nlohmann::json;

int UsageError(const Status& status) {
  std::cerr << "actorflow: " << status.ToString() << "\nRun 'actorflow help' for usage.\n";
  return kExitUsage;
}

int CommandError(const Status& status, int exit_code) {
  std::cerr << "actorflow: " << status.ToString() << "\n";
  return exit_code;
}

Status OutOfMemory(const std::string& what, const std::exception& e) {
  return errors::ResourceExhausted("out of memory ", what, " (", e.what(), ")");
}

std::string DumpJson(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

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

Status NormalizeTensorName(const std::string& name, std::string* out) {
  std::string node;
  int port = 0;
  if (!ParseTensorName(name, &node, &port) || port < 0)
    return errors::InvalidArgument("malformed tensor name '", name, "' (expected NAME or NAME:PORT)");
  *out = node + ":" + std::to_string(port);
  return Status::OK();
}

Status ParseInt(const std::string& flag, const std::string& text, int lo, int hi, int* out) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < lo || v > hi)
    return errors::InvalidArgument(flag, " expects an integer from ", lo, " to ", hi, ", got '", text, "'");
  *out = static_cast<int>(v);
  return Status::OK();
}

Status SetOnce(const std::string& flag, const std::string& value, std::string* field) {
  if (!field->empty()) return errors::InvalidArgument(flag, " is given twice");
  if (value.empty()) return errors::InvalidArgument(flag, " needs a non-empty value");
  *field = value;
  return Status::OK();
}

namespace {

// A decimal count from 0 to kMaxDevicesPerType; false for anything else.
bool ParseDeviceCount(const std::string& text, int* out) {
  if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoi(text);
  return *out <= kMaxDevicesPerType;
}

}  // namespace

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

Status RuntimeOptionsFor(const DeviceCounts& counts, RuntimeOptions* out) {
  out->num_cpu_devices = counts.cpu;
  out->num_gpu_devices = counts.gpu;
  return Status::OK();
}

Status CheckGpus(const Runtime& runtime, const DeviceCounts& counts) {
  const size_t have = runtime.device_manager().OfType(DEVICE_GPU).size();
  if (have >= static_cast<size_t>(counts.gpu)) return Status::OK();
  return errors::Unavailable("--devices asks for ", counts.gpu, " GPU device", counts.gpu == 1 ? "" : "s",
                             " (gpu:", counts.gpu, "), but this runtime has ", have,
                             " (GPUs need a CUDA build and a GPU): use fewer, or cpu:N only");
}

}  // namespace cli
}  // namespace actorflow
