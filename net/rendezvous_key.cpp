#include "actorflow/net/rendezvous_key.hpp"

#include <cinttypes>
#include <cstdio>
#include <functional>

#include "actorflow/devices/device_name.hpp"

namespace actorflow {

RendezvousKey::RendezvousKey(std::string text) {
  const size_t h = std::hash<std::string>()(text);
  rep_ = std::make_shared<const Rep>(Rep{std::move(text), h});
}

const std::string& RendezvousKey::str() const {
  static const std::string* empty = new std::string();  // never destroyed: keys may outlive statics
  return rep_ ? rep_->text : *empty;
}

std::string_view SendTaskOfKey(const std::string& key) {
  const size_t a = key.find(';');
  return a == std::string::npos ? std::string_view() : TaskOfDevice(std::string_view(key).substr(0, a));
}

std::string_view RecvTaskOfKey(const std::string& key) {
  const size_t a = key.find(';');
  const size_t b = a == std::string::npos ? a : key.find(';', a + 1);
  const size_t c = b == std::string::npos ? b : key.find(';', b + 1);
  if (c == std::string::npos) return std::string_view();
  return TaskOfDevice(std::string_view(key).substr(b + 1, c - b - 1));
}

RendezvousKey MakeRendezvousKey(const std::string& send_device, uint64_t send_device_incarnation,
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
  return RendezvousKey(std::move(key));
}

}  // namespace actorflow
