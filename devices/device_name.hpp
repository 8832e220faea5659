// DeviceName: a parsed device spec, full ("/job:localhost/replica:0/task:0/device:CPU:0", the name of one device)
// or partial ("/job:ps", "/device:GPU:*", "CPU:1", a constraint on where a node may run). TensorFlow's
// DeviceNameUtils, with every component optional and device types kept upper case ("CPU", "GPU").
//
// The placer reads NodeDef.device with ParseDeviceName, merges the specs of a colocation group with
// MergeDeviceNames and picks a device whose full name DeviceNameMatches the merged spec. All functions are
// pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "actorflow/core/status.hpp"

namespace actorflow {

/// Every field is optional: has_X says whether the spec names X.
struct DeviceName {
  bool has_job = false;
  std::string job;
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  bool has_type = false;
  std::string type;  // upper case: "CPU", "GPU"
  bool has_id = false;
  int id = 0;
  /// Same components present with the same values (the values of absent components are ignored).
  bool operator==(const DeviceName& o) const;
  bool operator!=(const DeviceName& o) const { return !(*this == o); }
};

/// Parses a full or partial device spec: "/job:J/replica:R/task:T/device:TYPE:N", any subset of those
/// components in that order ("/job:ps", "/device:GPU:0", "/job:worker/task:1"), "TYPE:N" with or without a
/// leading "/device:" ("GPU:0", "/gpu:0", "cpu:1" — legacy lower-case types are accepted and upper-cased),
/// "*" for the id ("/device:CPU:*" = any CPU) and "" (matches everything). InvalidArgument naming the spec
/// on anything else (empty components, non-numeric ids, repeated components, junk).
///
/// As in TensorFlow, "/device:TYPE" without an id means any device of that type, and "/device:*:N" names
/// only the id. Job names are [a-z][a-z0-9_]*, types [A-Za-z][A-Za-z0-9_]*, numbers non-negative ints.
/// `out` is written only on success.
Status ParseDeviceName(const std::string& spec, DeviceName* out);

/// The task part of a full device name ("/job:J/replica:R/task:T" of
/// "/job:J/replica:R/task:T/device:CPU:0"); empty when it names none. A view into `device`.
std::string_view TaskOfDevice(std::string_view device);

/// "/job:J/replica:R/task:T/device:TYPE:N" for the components present (partial names print partially:
/// "/device:CPU:*" for a type without an id, "/device:*:N" for an id without a type, "" for nothing).
/// ParseDeviceName(DeviceNameString(n)) gives back n.
std::string DeviceNameString(const DeviceName& n);

/// Every component `spec` has equals `full`'s (types compared ignoring case); a component `spec` has and
/// `full` lacks does not match.
bool DeviceNameMatches(const DeviceName& spec, const DeviceName& full);

/// TF's MergeDevNames: fills `target`'s missing components from `other`; InvalidArgument when both have a
/// component and they differ (message names both specs and the component), used to merge colocation groups.
/// `target` is unchanged on error.
Status MergeDeviceNames(DeviceName* target, const DeviceName& other);

/// Whether `a` and `b` can be merged (no conflicting component).
bool DeviceNamesCompatible(const DeviceName& a, const DeviceName& b);

}  // namespace actorflow
