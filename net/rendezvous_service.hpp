// The rendezvous service: how device actors hand tensors to each other
// through a rendezvous actor (actors/rendezvous_actor.hpp), keyed by
// RendezvousKey (net/rendezvous_key.hpp).
//
//   RendezvousSend                       a _Send's tensor (no answer)
//   RendezvousRecv -> RendezvousRecvResponse
//   RendezvousBatch                      many Sends and Recvs; Recvs answered by RendezvousDeliver
//   RendezvousAbort                      a step failed: its Recvs fail
//   RendezvousStepDone                   a step ended everywhere: drop what it left
//
// Every message may cross a process: registered in net/protocol.cpp.
#pragma once

#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "actorflow/net/rendezvous_key.hpp"
#include "actorflow/net/wire_format.hpp"

namespace actorflow {

struct RendezvousSend {
  int64_t step_id = 0;
  RendezvousKey key;
  Tensor value;
  bool is_dead = false;  // sent from an untaken branch (control flow)
  bool truncate16 = false;  // to another task: float32 as 16 bits on the wire
};

struct RendezvousRecv {
  int64_t step_id = 0;
  RendezvousKey key;
};

struct RendezvousRecvResponse {
  Status status;
  Tensor value;
  bool is_dead = false;
};

struct RendezvousBatch {
  struct Sent {
    int64_t step_id = 0;
    RendezvousKey key;
    Tensor value;
    bool is_dead = false;
    bool truncate16 = false;
  };
  struct Wanted {
    int64_t step_id = 0;
    RendezvousKey key;
    uint64_t ticket = 0;  // the asker's, echoed in the RendezvousDeliver item
  };
  std::vector<Sent> sends;
  std::vector<Wanted> recvs;
};

struct RendezvousDeliver {
  struct Item {
    int64_t step_id = 0;
    uint64_t ticket = 0;  // the Wanted's
    Status status;
    Tensor value;
    bool is_dead = false;
  };
  std::vector<Item> items;
};

struct RendezvousAbort {
  int64_t step_id = 0;
  Status status;
};

struct RendezvousStepDone {
  int64_t step_id = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousKey& x) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    std::string text;
    if (auto err = f(caf::meta::type_name("RendezvousKey"), text)) return err;
    x = RendezvousKey(std::move(text));
    return caf::error{};
  } else {
    std::string text = x.str();
    return f(caf::meta::type_name("RendezvousKey"), text);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousSend& x) {
  return f(caf::meta::type_name("RendezvousSend"), x.step_id, x.key, x.value, x.is_dead, x.truncate16);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousRecv& x) {
  return f(caf::meta::type_name("RendezvousRecv"), x.step_id, x.key);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousRecvResponse& x) {
  return f(caf::meta::type_name("RendezvousRecvResponse"), x.status, x.value, x.is_dead);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousBatch::Sent& x) {
  return f(caf::meta::type_name("RendezvousBatch::Sent"), x.step_id, x.key, x.value, x.is_dead, x.truncate16);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousBatch::Wanted& x) {
  return f(caf::meta::type_name("RendezvousBatch::Wanted"), x.step_id, x.key, x.ticket);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousBatch& x) {
  return f(caf::meta::type_name("RendezvousBatch"), x.sends, x.recvs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousDeliver::Item& x) {
  return f(caf::meta::type_name("RendezvousDeliver::Item"), x.step_id, x.ticket, x.status, x.value, x.is_dead);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousDeliver& x) {
  return f(caf::meta::type_name("RendezvousDeliver"), x.items);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousAbort& x) {
  return f(caf::meta::type_name("RendezvousAbort"), x.step_id, x.status);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RendezvousStepDone& x) {
  return f(caf::meta::type_name("RendezvousStepDone"), x.step_id);
}

}  // namespace actorflow
