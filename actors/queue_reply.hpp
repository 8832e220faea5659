// How the queue and accumulator actors answer a request of the queue service
// (net/queue_service.hpp) without ever throwing: a handler that threw would
// end the actor, and every step waiting on it.
#pragma once

#include <caf/response_promise.hpp>

#include "actorflow/core/exception_status.hpp"
#include "actorflow/net/queue_service.hpp"

namespace actorflow {

/// Answers `rp` with `r`; when there is no memory for the answer, with
/// OutOfMemoryStatus() (which needs none). Never throws.
inline void ReplyQueueResponse(caf::response_promise& rp, QueueResponse r) noexcept {
  try {
    rp.deliver(std::move(r));
    return;
  } catch (...) {
  }
  try {
    rp.deliver(QueueResponse{OutOfMemoryStatus(), {}, 0});
  } catch (...) {  // nothing left to answer with
  }
}

}  // namespace actorflow
