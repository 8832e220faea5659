#include "actorflow/devices/device_name.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <string_view>

namespace actorflow {

namespace {

// Components of a "/"-separated spec, in the order they must appear.
enum Rank { kJob = 0, kReplica = 1, kTask = 2, kDevice = 3 };

Status Bad(const std::string& spec, std::string_view why) {
  return errors::InvalidArgument("invalid device spec '", spec, "': ", why);
}

// A non-negative int written in decimal digits only.
bool ParseNumber(std::string_view s, int* out) {
  if (s.empty()) return false;
  long long v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
    if (v > INT_MAX) return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// TensorFlow's job names: [a-z][a-z0-9_]*.
bool IsJobName(std::string_view s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

// Device types: [A-Za-z][A-Za-z0-9_]*.
bool IsTypeName(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string Upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

bool SameType(const std::string& a, const std::string& b) { return Upper(a) == Upper(b); }

// "TYPE:N" or "TYPE:*"; after "/device:" also "TYPE" (any id) and "*" for the type.
Status ParseTypeAndId(const std::string& spec, std::string_view text, bool after_device, DeviceName* n) {
  const size_t colon = text.find(':');
  const std::string_view type = text.substr(0, colon);
  if (type.empty()) return Bad(spec, "empty device type");
  if (!(after_device && type == "*")) {
    if (!IsTypeName(type)) return Bad(spec, strings::StrCat("bad device type '", type, "'"));
    n->has_type = true;
    n->type = Upper(type);
  }
  if (colon == std::string_view::npos) {
    if (!after_device) return Bad(spec, strings::StrCat("'", text, "' is neither a known component nor TYPE:N"));
    return Status::OK();
  }
  const std::string_view id = text.substr(colon + 1);
  if (id == "*") return Status::OK();
  if (id.empty()) return Bad(spec, "empty device id");
  if (!ParseNumber(id, &n->id)) return Bad(spec, strings::StrCat("device id '", id, "' is not a non-negative int"));
  n->has_id = true;
  return Status::OK();
}

// One "key:value" component (without its leading '/'), at rank `rank`.
Status ParseComponent(const std::string& spec, std::string_view comp, Rank rank, DeviceName* n) {
  const std::string_view value = comp.substr(comp.find(':') + 1);
  switch (rank) {
    case kJob:
      if (!IsJobName(value)) return Bad(spec, strings::StrCat("bad job name '", value, "'"));
      n->has_job = true;
      n->job = std::string(value);
      return Status::OK();
    case kReplica:
      if (!ParseNumber(value, &n->replica))
        return Bad(spec, strings::StrCat("replica '", value, "' is not a non-negative int"));
      n->has_replica = true;
      return Status::OK();
    case kTask:
      if (!ParseNumber(value, &n->task))
        return Bad(spec, strings::StrCat("task '", value, "' is not a non-negative int"));
      n->has_task = true;
      return Status::OK();
    case kDevice:
      break;
  }
  const bool after_device = comp.substr(0, comp.find(':')) == "device";
  return ParseTypeAndId(spec, after_device ? value : comp, after_device, n);
}

Rank RankOf(std::string_view key) {
  if (key == "job") return kJob;
  if (key == "replica") return kReplica;
  if (key == "task") return kTask;
  return kDevice;  // "device:..." or a legacy "TYPE:N"
}

const char* RankName(Rank r) {
  static const char* const kNames[] = {"job", "replica", "task", "device"};
  return kNames[r];
}

// The first component both name with different values: its name and the two values; false when none.
bool FindConflict(const DeviceName& a, const DeviceName& b, const char** what, std::string* va, std::string* vb) {
  auto set = [&](const char* w, std::string x, std::string y) {
    *what = w;
    *va = std::move(x);
    *vb = std::move(y);
    return true;
  };
  if (a.has_job && b.has_job && a.job != b.job) return set("job", a.job, b.job);
  if (a.has_replica && b.has_replica && a.replica != b.replica)
    return set("replica", std::to_string(a.replica), std::to_string(b.replica));
  if (a.has_task && b.has_task && a.task != b.task)
    return set("task", std::to_string(a.task), std::to_string(b.task));
  if (a.has_type && b.has_type && !SameType(a.type, b.type)) return set("device type", a.type, b.type);
  if (a.has_id && b.has_id && a.id != b.id) return set("device id", std::to_string(a.id), std::to_string(b.id));
  return false;
}

}  // namespace

bool DeviceName::operator==(const DeviceName& o) const {
  return has_job == o.has_job && (!has_job || job == o.job) && has_replica == o.has_replica &&
         (!has_replica || replica == o.replica) && has_task == o.has_task && (!has_task || task == o.task) &&
         has_type == o.has_type && (!has_type || type == o.type) && has_id == o.has_id && (!has_id || id == o.id);
}

Status ParseDeviceName(const std::string& spec, DeviceName* out) {
  DeviceName n;
  if (spec.empty()) {
    *out = n;
    return Status::OK();
  }
  if (spec[0] != '/') {  // a local name: "TYPE:N"
    AF_RETURN_IF_ERROR(ParseTypeAndId(spec, spec, /*after_device=*/false, &n));
    *out = n;
    return Status::OK();
  }
  int last = -1;  // rank of the previous component
  size_t pos = 1;
  while (true) {
    const size_t end = std::min(spec.find('/', pos), spec.size());
    const std::string_view comp(spec.data() + pos, end - pos);
    if (comp.empty()) return Bad(spec, "empty component");
    const size_t colon = comp.find(':');
    const std::string_view key = comp.substr(0, colon);
    const Rank rank = RankOf(key);
    if ((rank < kDevice || key == "device") && (colon == std::string_view::npos || colon + 1 == comp.size()))
      return Bad(spec, strings::StrCat("component '", comp, "' has no value"));
    if (rank == last) return Bad(spec, strings::StrCat("repeated ", RankName(rank), " component '", comp, "'"));
    if (rank < last)
      return Bad(spec, strings::StrCat("component '", comp, "' after the ", RankName(static_cast<Rank>(last)),
                                       " (expected the order /job/replica/task/device)"));
    AF_RETURN_IF_ERROR(ParseComponent(spec, comp, rank, &n));
    last = rank;
    if (end == spec.size()) break;
    pos = end + 1;
  }
  *out = n;
  return Status::OK();
}

std::string DeviceNameString(const DeviceName& n) {
  std::string s;
  if (n.has_job) s += "/job:" + n.job;
  if (n.has_replica) s += "/replica:" + std::to_string(n.replica);
  if (n.has_task) s += "/task:" + std::to_string(n.task);
  if (n.has_type || n.has_id)
    s += "/device:" + (n.has_type ? n.type : std::string("*")) + ":" + (n.has_id ? std::to_string(n.id) : "*");
  return s;
}

bool DeviceNameMatches(const DeviceName& spec, const DeviceName& full) {
  if (spec.has_job && (!full.has_job || spec.job != full.job)) return false;
  if (spec.has_replica && (!full.has_replica || spec.replica != full.replica)) return false;
  if (spec.has_task && (!full.has_task || spec.task != full.task)) return false;
  if (spec.has_type && (!full.has_type || !SameType(spec.type, full.type))) return false;
  if (spec.has_id && (!full.has_id || spec.id != full.id)) return false;
  return true;
}

bool DeviceNamesCompatible(const DeviceName& a, const DeviceName& b) {
  const char* what;
  std::string va, vb;
  return !FindConflict(a, b, &what, &va, &vb);
}

Status MergeDeviceNames(DeviceName* target, const DeviceName& other) {
  const char* what;
  std::string vt, vo;
  if (FindConflict(*target, other, &what, &vt, &vo))
    return errors::InvalidArgument("cannot merge device specs '", DeviceNameString(*target), "' and '",
                                   DeviceNameString(other), "': conflicting ", what, " ('", vt, "' vs '", vo, "')");
  if (!target->has_job && other.has_job) {
    target->has_job = true;
    target->job = other.job;
  }
  if (!target->has_replica && other.has_replica) {
    target->has_replica = true;
    target->replica = other.replica;
  }
  if (!target->has_task && other.has_task) {
    target->has_task = true;
    target->task = other.task;
  }
  if (!target->has_type && other.has_type) {
    target->has_type = true;
    target->type = other.type;
  }
  if (!target->has_id && other.has_id) {
    target->has_id = true;
    target->id = other.id;
  }
  return Status::OK();
}

std::string_view TaskOfDevice(std::string_view device) {
  const size_t d = device.find("/device:");
  return d == std::string_view::npos ? std::string_view() : device.substr(0, d);
}

}  // namespace actorflow
