// RendezvousKey: the name under which a _Send and its _Recv meet in the
// rendezvous actor (actors/rendezvous_actor.hpp).
//
// Text: "send_device;send_device_incarnation;recv_device;tensor_name;frame:iteration"
// (TensorFlow's layout); the frame and iteration are "0:0" outside loops.
//
// A key is built once, by the kernel that uses it, and then shared: copies
// (into messages, the rendezvous actor's table, a device's waiting Recvs) take
// a reference, not a copy of the text, and carry its hash, so a transfer in
// one process allocates nothing for its key. Keys compare by text (by identity
// first); across processes the text is what is serialized.
//
// Across processes a transfer is a message on the tensor transport's
// rendezvous channel (comm/tensor_transport.hpp) whose meta bytes are
//   i64 step_id | u32 key_len | key text      (little endian, core/io/fixed_width.hpp)
// made by EncodeRendezvousMeta and checked by DecodeRendezvousMeta.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "actorflow/core/status.hpp"

namespace actorflow {

class RendezvousKey {
 public:
  RendezvousKey() = default;
  RendezvousKey(std::string text);  // NOLINT: implicit, a key is its text
  RendezvousKey(const char* text) : RendezvousKey(std::string(text)) {}  // NOLINT

  const std::string& str() const;
  size_t hash() const { return rep_ ? rep_->hash : 0; }
  bool empty() const { return !rep_; }

  friend bool operator==(const RendezvousKey& a, const RendezvousKey& b) {
    return a.rep_ == b.rep_ || (a.hash() == b.hash() && a.str() == b.str());
  }
  friend bool operator!=(const RendezvousKey& a, const RendezvousKey& b) { return !(a == b); }

 private:
  struct Rep {
    std::string text;
    size_t hash;
  };
  std::shared_ptr<const Rep> rep_;
};

struct RendezvousKeyHash {
  size_t operator()(const RendezvousKey& k) const { return k.hash(); }
};

/// The tasks of a key's sending and receiving devices ("/job:J/replica:R/task:T"), as views into
/// `key`'s text, without allocating; empty when the text does not have that layout.
std::string_view SendTaskOfKey(const std::string& key);
std::string_view RecvTaskOfKey(const std::string& key);

/// The key of one transfer (see the file comment).
RendezvousKey MakeRendezvousKey(const std::string& send_device, uint64_t send_device_incarnation,
                                const std::string& recv_device, const std::string& tensor_name, int64_t frame_id = 0,
                                int64_t iteration = 0);

/// The longest key a rendezvous meta carries.
constexpr uint32_t kMaxRendezvousKeyBytes = 8 << 10;

/// The meta of a transfer of `key` in step `step_id` (see the file comment).
std::string EncodeRendezvousMeta(int64_t step_id, const RendezvousKey& key);
/// DataLoss (saying what is wrong) unless `meta` has that layout, with a key
/// of 1..kMaxRendezvousKeyBytes bytes; `key` null: only checked.
Status DecodeRendezvousMeta(const std::string& meta, int64_t* step_id, RendezvousKey* key);
/// DecodeRendezvousMeta's checks, and that the key's receiving task is `task`
/// (a tensor for another task is not this process's to take): a meta that
/// arrived at `task`, checked without allocating.
Status CheckRendezvousMeta(const std::string& meta, const std::string& task);

}  // namespace actorflow
