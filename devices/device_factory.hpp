// Device factories: how a Runtime finds the devices of a type that this
// build and this machine have.
//
// CPU devices are made by the Runtime itself. Other device types register a
// factory at load time, next to their code (devices/cuda/gpu_device.cpp
// registers "GPU" in CUDA builds); a build without one simply has no such
// devices, so the Runtime needs no build-time switch. A factory fails softly:
// hardware it cannot use (no driver, no GPU) yields no devices, not an error.
//
// Registration happens during static initialization, lookups afterwards; the
// registry is not guarded for registration racing with lookups.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/devices/device.hpp"

namespace actorflow {

/// Creates up to `max_devices` devices (-1: every one present) whose expensive
/// kernels use `pool`, named `task_name` + "/device:TYPE:N" (the task's name,
/// e.g. "/job:localhost/replica:0/task:0").
using DeviceFactory = std::function<std::vector<std::unique_ptr<Device>>(const std::string& task_name,
                                                                         int max_devices, ComputePool* pool)>;

/// Registers the factory of `device_type` ("GPU"); a second registration replaces the first.
void RegisterDeviceFactory(const std::string& device_type, DeviceFactory factory);

/// The devices the factory of `device_type` creates; none when no factory is registered.
std::vector<std::unique_ptr<Device>> CreateDevices(const std::string& device_type, const std::string& task_name,
                                                   int max_devices, ComputePool* pool);

namespace detail {
struct DeviceFactoryRegistrar {
  DeviceFactoryRegistrar(const std::string& type, DeviceFactory f) { RegisterDeviceFactory(type, std::move(f)); }
};
}  // namespace detail

}  // namespace actorflow
