// VariableAccess: how a kernel reaches the variables held by the container
// actor (actors/container_actor.hpp). A kernel never touches a variable: it
// sends a read or an update (net/variable_service.hpp) and is answered when
// the actor has applied it. The device actor implements this interface.
#pragma once

#include <functional>

#include "actorflow/core/status.hpp"
#include "actorflow/net/variable_service.hpp"

namespace actorflow {

/// How a kernel reaches the variables. Call only from the device actor's
/// thread (an AsyncOpKernel's ComputeAsync); the callback runs there too.
class VariableAccess {
 public:
  virtual ~VariableAccess() = default;
  virtual void Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) = 0;
  virtual void Update(VarUpdateRequest req, std::function<void(const Status&)> done) = 0;
  /// As Update, for updates that answer a value (kCountUpTo).
  virtual void UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) = 0;
};

}  // namespace actorflow
