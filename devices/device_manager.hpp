// DeviceManager: the devices of one process, found by full name or by spec.
//
// The Runtime builds one over its devices (in order: CPU:0, CPU:1, ..., then GPU:0, ...) and keeps it for its
// lifetime; the placer asks it which devices a node's requested spec allows. It does not own the devices,
// which must outlive it. Immutable after construction, so every method is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/devices/device_name.hpp"

namespace actorflow {

class Device;

class DeviceManager {
 public:
  /// Not owned; in order: CPU:0, CPU:1, ..., GPU:0... A device whose name does not parse as a device spec is
  /// found only by its exact name.
  explicit DeviceManager(std::vector<Device*> devices);

  const std::vector<Device*>& devices() const { return devices_; }
  int size() const { return static_cast<int>(devices_.size()); }

  /// The device with this full name (or any spec naming exactly one device, e.g. "CPU:1", "/device:GPU:0").
  /// NotFound naming the spec and listing the devices when it names none or several; InvalidArgument when the
  /// spec does not parse.
  Status Lookup(const std::string& name, Device** out) const;
  /// The position of `d` in devices(); -1 when not ours.
  int IndexOf(const Device* d) const;
  /// The devices `spec` matches, in order (empty when none; InvalidArgument when the spec does not parse).
  Status Matching(const std::string& spec, std::vector<Device*>* out) const;
  /// The devices of one type ("CPU", "GPU"; case ignored), in order.
  std::vector<Device*> OfType(const std::string& type) const;
  /// One line per device: "0: /job:localhost/replica:0/task:0/device:CPU:0 (CPU)".
  std::string DebugString() const;

 private:
  // The names of all devices, ", "-separated, for error messages.
  std::string DeviceList() const;

  std::vector<Device*> devices_;
  std::vector<DeviceName> parsed_;  // parsed_[i]: devices_[i]'s name
  std::vector<bool> parsed_ok_;     // false: the name did not parse; never matched by a spec
};

}  // namespace actorflow
