// The steps of `actorflow run`: see tools/run_steps.hpp.
#include "tools/run_steps.hpp"

#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <set>
#include <stdexcept>
#include <utility>

#include "actorflow/core/allocator.hpp"
#include "tools/cli_common.hpp"
#include "tools/cli_memory.hpp"

namespace actorflow {
namespace cli {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

Status AddFeed(const std::string& name, const json& value, StepSpec* step) {
  std::string tensor_name;
  AF_RETURN_IF_ERROR(NormalizeTensorName(name, &tensor_name));
  Tensor t;
  Status s = TensorFromJson(value, &t);
  if (!s.ok()) return errors::InvalidArgument("feed '", name, "': ", s.message());
  step->feeds[tensor_name] = std::move(t);
  if (IsImplicitTensorJson(value))
    step->implicit_feeds[tensor_name] = value;
  else
    step->implicit_feeds.erase(tensor_name);
  return Status::OK();
}

std::map<std::string, DataType> FeedDtypes(const proto::GraphDef& def) {
  std::map<std::string, DataType> out;
  for (const auto& nd : def.node()) {
    if (nd.op() != "Placeholder" && nd.op() != "PlaceholderWithDefault") continue;
    auto it = nd.attr().find("dtype");
    if (it != nd.attr().end() && it->second.value_case() == proto::AttrValue::kType)
      out[nd.name() + ":0"] = static_cast<DataType>(it->second.type());
  }
  return out;
}

namespace {

Status ParseStepFeeds(const json& j, StepSpec* step) {
  if (!j.is_object()) return errors::InvalidArgument("\"feeds\" must be an object of tensor name -> value");
  std::set<std::string> seen;  // names fed by this line, to catch "x" next to "x:0"
  for (const auto& item : j.items()) {
    std::string tensor_name;
    AF_RETURN_IF_ERROR(NormalizeTensorName(item.key(), &tensor_name));
    if (!seen.insert(tensor_name).second) return errors::InvalidArgument("tensor '", tensor_name, "' is fed twice");
    AF_RETURN_IF_ERROR(AddFeed(item.key(), item.value(), step));
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
      AF_RETURN_IF_ERROR(ParseStepFeeds(value, step));
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
  auto resolve = [&](const std::string& name) {
    auto it = runner.aliases.find(name);
    return it == runner.aliases.end() ? name : it->second;
  };
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, given] : step.feeds) {
    const std::string tensor_name = resolve(name);
    Tensor tensor = given;
    // Implicit values take the placeholder's dtype.
    auto declared = runner.feed_dtypes.find(tensor_name);
    auto value = step.implicit_feeds.find(name);
    if (declared != runner.feed_dtypes.end() && value != step.implicit_feeds.end() &&
        declared->second != tensor.dtype()) {
      Status s = TensorFromJson(value->second, &tensor, declared->second);
      if (!s.ok())
        return errors::InvalidArgument("feed '", name, "': the placeholder is ", DataTypeString(declared->second),
                                       ": ", s.message());
    }
    feeds.emplace_back(tensor_name, std::move(tensor));
  }
  const std::vector<std::string> fetches = Unique(step.fetches);
  std::vector<std::string> resolved;
  for (const auto& f : fetches) resolved.push_back(resolve(f));
  RunOptions options;
  options.timeout_in_ms = step.timeout_ms;
  if (runner.trace) options.trace_level = TraceLevel::kFullTrace;
  std::vector<Tensor> outputs;
  RunMetadata md;
  const Status ran = runner.session->Run(options, feeds, resolved, step.targets, &outputs, &md);
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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace cli
}  // namespace actorflow
