#include "actorflow/devices/device_manager.hpp"

#include <cctype>

#include "actorflow/devices/device.hpp"

namespace actorflow {

namespace {
bool EqualIgnoringCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}
}  // namespace

DeviceManager::DeviceManager(std::vector<Device*> devices) : devices_(std::move(devices)) {
  parsed_.resize(devices_.size());
  parsed_ok_.resize(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) parsed_ok_[i] = ParseDeviceName(devices_[i]->name(), &parsed_[i]).ok();
}

Status DeviceManager::Lookup(const std::string& name, Device** out) const {
  for (Device* d : devices_) {
    if (d->name() == name) {
      *out = d;
      return Status::OK();
    }
  }
  std::vector<Device*> matching;
  AF_RETURN_IF_ERROR(Matching(name, &matching));
  if (matching.size() == 1) {
    *out = matching[0];
    return Status::OK();
  }
  if (matching.empty()) return errors::NotFound("no device matches '", name, "'; devices: ", DeviceList());
  return errors::NotFound("device spec '", name, "' matches ", matching.size(), " devices, not one; devices: ",
                          DeviceList());
}

int DeviceManager::IndexOf(const Device* d) const {
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i] == d) return static_cast<int>(i);
  return -1;
}

Status DeviceManager::Matching(const std::string& spec, std::vector<Device*>* out) const {
  DeviceName want;
  AF_RETURN_IF_ERROR(ParseDeviceName(spec, &want));
  out->clear();
  for (size_t i = 0; i < devices_.size(); ++i)
    if (parsed_ok_[i] && DeviceNameMatches(want, parsed_[i])) out->push_back(devices_[i]);
  return Status::OK();
}

std::vector<Device*> DeviceManager::OfType(const std::string& type) const {
  std::vector<Device*> out;
  for (Device* d : devices_)
    if (EqualIgnoringCase(d->device_type(), type)) out.push_back(d);
  return out;
}

std::string DeviceManager::DebugString() const {
  std::string s;
  for (size_t i = 0; i < devices_.size(); ++i)
    s += std::to_string(i) + ": " + devices_[i]->name() + " (" + devices_[i]->device_type() + ")\n";
  return s;
}

std::string DeviceManager::DeviceList() const {
  std::string s;
  for (const Device* d : devices_) s += (s.empty() ? "" : ", ") + d->name();
  return s.empty() ? "(none)" : s;
}

}  // namespace actorflow
