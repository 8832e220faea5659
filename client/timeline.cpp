#include "actorflow/client/timeline.hpp"

#include <cstdint>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "actorflow/core/dtypes.hpp"

namespace actorflow {

namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json MetadataEvent(const char* name, int pid, int tid, ordered_json args) {
  ordered_json e;
  e["name"] = name;
  e["ph"] = "M";
  e["pid"] = pid;
  e["tid"] = tid;
  e["args"] = std::move(args);
  return e;
}

ordered_json OutputsJson(const std::vector<NodeOutputStats>& outputs) {
  ordered_json list = ordered_json::array();
  for (const NodeOutputStats& o : outputs) {
    ordered_json j;
    j["dtype"] = o.dtype == DT_INVALID ? std::string("none") : DataTypeString(o.dtype);
    j["shape"] = o.shape;
    j["bytes"] = o.bytes;
    list.push_back(std::move(j));
  }
  return list;
}

}  // namespace

std::string ChromeTraceJson(const RunMetadata& md) {
  // Devices become processes and threads tracks, both numbered from 1 in order of
  // first appearance: raw thread ids are 64-bit hashes, beyond the integers a
  // JavaScript number holds exactly.
  std::map<std::string, int> pids;
  std::map<std::pair<int, uint64_t>, int> tids;
  ordered_json events = ordered_json::array();
  for (const NodeExecStats& s : md.step_stats) {
    auto [dev, new_dev] = pids.emplace(s.device, static_cast<int>(pids.size()) + 1);
    const int pid = dev->second;
    if (new_dev) {
      const std::string name = s.device.empty() ? "(unknown device)" : s.device;
      events.push_back(MetadataEvent("process_name", pid, 0, {{"name", name}}));
      events.push_back(MetadataEvent("process_sort_index", pid, 0, {{"sort_index", pid}}));
    }
    auto [thr, new_thr] = tids.emplace(std::make_pair(pid, s.thread), static_cast<int>(tids.size()) + 1);
    const int tid = thr->second;
    if (new_thr) {
      char name[32];
      std::snprintf(name, sizeof(name), "thread %016llx", static_cast<unsigned long long>(s.thread));
      events.push_back(MetadataEvent("thread_name", pid, tid, {{"name", name}}));
    }
    ordered_json e;
    e["name"] = s.node;
    e["cat"] = s.op;
    e["ph"] = "X";
    e["ts"] = s.all_start_us;
    e["dur"] = s.end_us > s.start_us ? s.end_us - s.start_us : 0;
    e["pid"] = pid;
    e["tid"] = tid;
    e["args"] = {{"op", s.op}, {"where", s.where}, {"outputs", OutputsJson(s.outputs)}};
    events.push_back(std::move(e));
  }
  ordered_json trace;
  trace["traceEvents"] = std::move(events);
  return trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace actorflow
