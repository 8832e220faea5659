// Memory the actorflow command may use for what it reads and writes.
//
// The command refuses, with RESOURCE_EXHAUSTED, work whose memory it can
// bound beforehand and that would not fit (a fetch's JSON text, a --steps
// line), rather than relying on std::bad_alloc: under a cgroup limit or with
// the kernel's overcommit a too-large allocation does not fail, the process
// is killed. The limit is --memory-limit when given, else what is available
// now: the smaller of /proc/meminfo's MemAvailable and the room left under
// the process's cgroup (v2 memory.max, v1 memory.limit_in_bytes). Header
// only: both functions are small and used by the command alone
// (tools/actorflow.cpp parses --memory-limit, tools/run_steps.cpp checks it).
#pragma once

#include <cctype>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace cli_memory {

// The first number in the file at `path` (after `key` when not empty); false
// when the file or number is missing ("max" for no cgroup limit included).
inline bool ReadNumber(const std::string& path, const std::string& key, uint64_t* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string word;
  bool after_key = key.empty();
  while (in >> word) {
    if (!after_key) {
      after_key = word == key;
      continue;
    }
    if (word.empty() || !std::isdigit(static_cast<unsigned char>(word[0]))) return false;
    try {
      *out = std::stoull(word);
    } catch (const std::exception&) {
      return false;
    }
    return true;
  }
  return false;
}

}  // namespace cli_memory

/// Bytes this process may still allocate now (see the file comment);
/// UINT64_MAX when the system says nothing.
inline uint64_t AvailableMemoryBytes() {
  uint64_t available = std::numeric_limits<uint64_t>::max();
  uint64_t kib = 0;
  if (cli_memory::ReadNumber("/proc/meminfo", "MemAvailable:", &kib) && kib < available / 1024) available = kib * 1024;
  struct Cgroup {
    const char* limit;
    const char* usage;
  };
  for (const Cgroup& c : {Cgroup{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                          Cgroup{"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                 "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    uint64_t limit = 0, usage = 0;
    if (!cli_memory::ReadNumber(c.limit, "", &limit)) continue;
    if (!cli_memory::ReadNumber(c.usage, "", &usage)) usage = 0;
    const uint64_t room = usage < limit ? limit - usage : 0;
    if (room < available) available = room;
  }
  return available;
}

/// "1048576", "512K", "64M", "2G", "1T" (binary units, an optional trailing
/// "B" or "iB", case ignored) -> bytes, at least 1; InvalidArgument otherwise.
inline Status ParseByteSize(const std::string& text, uint64_t* out) {
  const Status bad = errors::InvalidArgument("expected a size in bytes such as 1048576, 512K, 64M or 2G, got '", text,
                                             "'");
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 19) return bad;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && (unit.substr(1) == "B" || unit.substr(1) == "IB")) unit = unit.substr(0, 1);
  int shift = 0;
  if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else if (!unit.empty() && unit != "B") return bad;
  const uint64_t value = std::stoull(text.substr(0, digits));
  if (value == 0 || value > (std::numeric_limits<uint64_t>::max() >> shift)) return bad;
  *out = value << shift;
  return Status::OK();
}

}  // namespace actorflow
