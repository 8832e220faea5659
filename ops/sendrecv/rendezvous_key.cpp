#include <cinttypes>
#include <cstdio>

#include "ops/sendrecv/rendezvous_access.hpp"

namespace actorflow {

std::string RendezvousKey(const std::string& send_device, uint64_t send_device_incarnation,
                          const std::string& recv_device, const std::string& tensor_name, int64_t frame_id,
                          int64_t iteration) {
  char incarnation[17];
  std::snprintf(incarnation, sizeof(incarnation), "%016" PRIx64, send_device_incarnation);
  std::string key;
  key.reserve(send_device.size() + recv_device.size() + tensor_name.size() + 48);
  key += send_device;
  key += ';';
  key += incarnation;
  key += ';';
  key += recv_device;
  key += ';';
  key += tensor_name;
  key += ';';
  key += std::to_string(frame_id);
  key += ':';
  key += std::to_string(iteration);
  return key;
}

}  // namespace actorflow
