#include "actorflow/comm/collective_message.hpp"

#include "actorflow/core/io/fixed_width.hpp"

namespace actorflow {

std::string EncodeCollectiveMessage(const CollectiveMessage& m) {
  std::string out;
  out.reserve(CollectiveMessage::kBytes);
  fixed::Put<uint8_t>(&out, m.kind);
  fixed::Put<uint8_t>(&out, m.forming ? 1 : 0);
  fixed::Put<uint16_t>(&out, m.elastic ? 1 : 0);
  fixed::Put<int32_t>(&out, m.dtype);
  fixed::Put<int64_t>(&out, m.group);
  fixed::Put<int64_t>(&out, m.size);
  fixed::Put<uint64_t>(&out, m.epoch);
  fixed::Put<uint64_t>(&out, m.incarnation);
  fixed::Put<uint64_t>(&out, m.plan);
  fixed::Put<int64_t>(&out, m.from);
  fixed::Put<int64_t>(&out, m.instance);
  fixed::Put<int64_t>(&out, m.execution);
  fixed::Put<int64_t>(&out, m.phase);
  fixed::Put<int64_t>(&out, m.elements);
  return out;
}

Status DecodeCollectiveMessage(const std::string& meta, CollectiveMessage* out) {
  if (meta.size() != CollectiveMessage::kBytes)
    return errors::DataLoss("a collective message header of ", meta.size(), " bytes (", CollectiveMessage::kBytes,
                            " expected)");
  const char* p = meta.data();
  const uint8_t kind = fixed::Get<uint8_t>(p);
  const uint8_t forming = fixed::Get<uint8_t>(p + 1);
  if (kind < CollectiveMessage::kJoin || kind > CollectiveMessage::kData)
    return errors::DataLoss("a collective message of unknown kind ", static_cast<int>(kind));
  const uint16_t flags = fixed::Get<uint16_t>(p + 2);
  if (forming > 1 || (forming && kind != CollectiveMessage::kJoin) || flags > 1 ||
      (flags != 0 && kind != CollectiveMessage::kJoin))
    return errors::DataLoss("a collective message with unknown flags");
  CollectiveMessage m;
  m.kind = static_cast<CollectiveMessage::Kind>(kind);
  m.forming = forming == 1;
  m.elastic = flags == 1;
  m.dtype = fixed::Get<int32_t>(p + 4);
  m.group = fixed::Get<int64_t>(p + 8);
  m.size = fixed::Get<int64_t>(p + 16);
  m.epoch = fixed::Get<uint64_t>(p + 24);
  m.incarnation = fixed::Get<uint64_t>(p + 32);
  m.plan = fixed::Get<uint64_t>(p + 40);
  m.from = fixed::Get<int64_t>(p + 48);
  m.instance = fixed::Get<int64_t>(p + 56);
  m.execution = fixed::Get<int64_t>(p + 64);
  m.phase = fixed::Get<int64_t>(p + 72);
  m.elements = fixed::Get<int64_t>(p + 80);
  if (m.kind == CollectiveMessage::kJoin && m.size <= 0)
    return errors::DataLoss("a collective JOIN for a group of ", m.size, " members");
  if (m.kind != CollectiveMessage::kJoin && m.from < 0)
    return errors::DataLoss("a collective message from rank ", m.from);
  if (m.kind == CollectiveMessage::kData && (m.phase < -1 || m.elements < 0))
    return errors::DataLoss("a collective data message of phase ", m.phase, " and ", m.elements, " elements");
  *out = m;
  return Status::OK();
}

}  // namespace actorflow
