#include "actorflow/devices/device_factory.hpp"

#include <map>

namespace actorflow {

namespace {
std::map<std::string, DeviceFactory>& Factories() {
  static auto* factories = new std::map<std::string, DeviceFactory>();  // never destroyed: used at exit
  return *factories;
}
}  // namespace

void RegisterDeviceFactory(const std::string& device_type, DeviceFactory factory) {
  Factories()[device_type] = std::move(factory);
}

std::vector<std::unique_ptr<Device>> CreateDevices(const std::string& device_type, const std::string& task_name,
                                                   int max_devices, ComputePool* pool) {
  auto it = Factories().find(device_type);
  if (it == Factories().end() || max_devices == 0) return {};
  return it->second(task_name, max_devices, pool);
}

}  // namespace actorflow
