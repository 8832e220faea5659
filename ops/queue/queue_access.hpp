// QueueAccess: how queue kernels reach queue actors (actors/queue_actor.hpp)
// with the messages of net/queue_service.hpp. The device actor implements it;
// a kernel never waits: it finishes when the queue actor answers.
#pragma once

#include <functional>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/net/queue_service.hpp"

namespace actorflow {

class QueueAccess {
 public:
  using Done = std::function<void(QueueResponse& response)>;
  virtual ~QueueAccess() = default;
  /// Creates (or finds and checks) the queue of `encoded_handle`.
  virtual void Open(const std::string& encoded_handle, const QueueSpec& spec, std::function<void(const Status&)> done) = 0;
  /// Sends `request` to the queue of `encoded_handle`; `done` runs on the
  /// device actor's thread with the answer. May be called from any thread
  /// while the kernel asking is running (a reader op on a pool thread); off
  /// the device actor's thread the request goes out by way of that actor.
  virtual void Request(const std::string& encoded_handle, QueueRequest request, Done done) = 0;
};

}  // namespace actorflow
