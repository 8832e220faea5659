#include "actorflow/devices/device.hpp"

namespace actorflow {

Status Device::BeginCapture(Allocator*) {
  return errors::Unimplemented(name_, " cannot capture its work (only a GPU can)");
}

Status Device::EndCapture(std::unique_ptr<CapturedWork>*) {
  return errors::Unimplemented(name_, " cannot capture its work (only a GPU can)");
}

Status Device::CopyOnDevice(const void*, void*, size_t) {
  return errors::Unimplemented(name_, " has no device-to-device copy");
}

Status Device::CopyFromHost(const Tensor&, void*) {
  return errors::Unimplemented(name_, " has no host-to-device copy");
}

}  // namespace actorflow
