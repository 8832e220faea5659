#include "actorflow/net/rendezvous_key.hpp"

#include <cinttypes>
#include <cstdio>
#include <functional>

#include "actorflow/core/io/fixed_width.hpp"
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

namespace {

std::string_view RecvTaskOf(std::string_view key) {
  const size_t a = key.find(';');
  const size_t b = a == std::string::npos ? a : key.find(';', a + 1);
  const size_t c = b == std::string::npos ? b : key.find(';', b + 1);
  if (c == std::string::npos) return std::string_view();
  return TaskOfDevice(key.substr(b + 1, c - b - 1));
}

constexpr size_t kMetaFixed = 8 + 4;  // step id, key length

// The key text of a rendezvous meta, after its checks.
Status KeyOfMeta(const std::string& meta, std::string_view* key) {
  if (meta.size() < kMetaFixed) return errors::DataLoss("a rendezvous meta of ", meta.size(), " bytes");
  const uint32_t len = fixed::Get<uint32_t>(meta.data() + 8);
  if (len == 0 || len > kMaxRendezvousKeyBytes || meta.size() != kMetaFixed + len)
    return errors::DataLoss("a rendezvous meta whose key length (", len, ") disagrees with its ", meta.size(),
                            " bytes");
  *key = std::string_view(meta).substr(kMetaFixed);
  return Status::OK();
}

}  // namespace

std::string_view RecvTaskOfKey(const std::string& key) { return RecvTaskOf(key); }

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

std::string EncodeRendezvousMeta(int64_t step_id, const RendezvousKey& key) {
  std::string meta;
  meta.reserve(kMetaFixed + key.str().size());
  fixed::Put<int64_t>(&meta, step_id);
  fixed::Put<uint32_t>(&meta, static_cast<uint32_t>(key.str().size()));
  meta += key.str();
  return meta;
}

Status DecodeRendezvousMeta(const std::string& meta, int64_t* step_id, RendezvousKey* key) {
  std::string_view text;
  AF_RETURN_IF_ERROR(KeyOfMeta(meta, &text));
  *step_id = fixed::Get<int64_t>(meta.data());
  if (key) *key = RendezvousKey(std::string(text));
  return Status::OK();
}

Status CheckRendezvousMeta(const std::string& meta, const std::string& task) {
  std::string_view text;
  AF_RETURN_IF_ERROR(KeyOfMeta(meta, &text));
  if (RecvTaskOf(text) != task)
    return errors::DataLoss("a tensor for another task (key ", std::string(text), ")");
  return Status::OK();
}

}  // namespace actorflow
