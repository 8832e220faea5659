// How _Send and _Recv kernels reach the rendezvous actor, and the keys they
// meet under.
//
// A tensor crossing from one device's partition to another's is sent by a
// _Send node and received by the _Recv node of the same key, in the same step
// (a step of several partitions shares the client's step id). The rendezvous
// actor (actors/rendezvous_actor.hpp) matches them; a Send never waits, a Recv
// is answered when its tensor is there, or with the step's error when the
// step is aborted. The device actor implements RendezvousAccess by messages,
// so a waiting Recv holds no thread.
//
// Keys: net/rendezvous_key.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/net/rendezvous_key.hpp"

namespace actorflow {

class RendezvousAccess {
 public:
  using RecvCallback = std::function<void(const Status& status, Tensor value, bool is_dead)>;
  virtual ~RendezvousAccess() = default;
  /// Hands `value` over for the Recv of `key` in step `step_id`; never waits.
  /// Thread-safe: a kernel may call it from any thread while its node runs.
  /// `truncate16`: a float32 tensor crossing to another task travels as 16 bits (graph/partition.hpp).
  virtual void Send(int64_t step_id, const RendezvousKey& key, const Tensor& value, bool is_dead,
                    bool truncate16 = false) = 0;
  /// Calls `done` (on the device actor's thread) when the tensor of `key` in
  /// step `step_id` has been sent, or with an error when the step is aborted.
  virtual void Recv(int64_t step_id, const RendezvousKey& key, RecvCallback done) = 0;
};

/// Implemented by a _Recv kernel whose only work is to take the tensor: a
/// device actor may then wait for the tensor itself and hand it to the node's
/// consumers when it arrives, as the kernel would (no kernel start, no
/// callback objects: the common CPU case of every transfer). A _Recv that does
/// more (the GPU's, which copies to device memory) does not implement it.
class DirectRecvKernel {
 public:
  virtual ~DirectRecvKernel() = default;
  virtual const RendezvousKey& rendezvous_key() const = 0;
  /// Its key in `iteration` of loop frame instance `frame_id`.
  virtual RendezvousKey rendezvous_key_in(int64_t frame_id, int64_t iteration) const = 0;
};

}  // namespace actorflow
