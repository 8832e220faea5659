// VariableAccess: how a kernel reaches the variables owned by the container
// actor (actors/container_actor.hpp). A kernel asks for a read or an update
// (net/variable_service.hpp) and is answered when it has been applied: by the
// kernel's own thread (or a pool job) directly on the variable when it lives
// in this process (ops/state/local_variable.hpp), by the actor otherwise.
// A read or update that can be applied on the calling thread at once
// (variables of this process, resolved before) is made by ReadNow / UpdateNow,
// with no request or callback; where they decline, by Read / Update.
// The device actor implements this interface.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/net/variable_service.hpp"

namespace actorflow {

/// How a kernel reaches the variables. Call only from the device actor's
/// thread (an AsyncOpKernel's ComputeAsync). A callback may run before the
/// call returns.
class VariableAccess {
 public:
  virtual ~VariableAccess() = default;
  /// `done` runs on the device actor's thread.
  virtual void Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) = 0;
  /// Read without a request or a callback, for a read that can be done on
  /// the calling thread at once (variables of this process, resolved before):
  /// reads the values of the `n` variables of `handles` (not check_only)
  /// under all their locks into out[0..n) and returns true, the read's
  /// failure, if any, in *status (`out` then unspecified). False, with
  /// nothing read, when the read must go by Read.
  virtual bool ReadNow(const std::string* const* handles, size_t n, Tensor* out, Status* status) {
    (void)handles, (void)n, (void)out, (void)status;
    return false;
  }
  /// `use_locking` is TensorFlow's attr: false lets updates of one variable
  /// of this process race (LocalVar); updates by message are always whole.
  /// `done` runs on the device actor's thread or, after a large update, on
  /// the compute pool's.
  virtual void Update(VarUpdateRequest req, bool use_locking, std::function<void(const Status&)> done) = 0;
  /// Update without a callback, for an update Update would apply on the
  /// calling thread before returning: applies `req` to the `n` variables of
  /// `handles` (its own handles are not read) and returns true, its outcome
  /// in *status. False, with nothing changed, when it must go by Update (not
  /// resolved yet, another process, a device's, or large).
  virtual bool UpdateNow(const std::string* const* handles, size_t n, const VarUpdateRequest& req, bool use_locking,
                         Status* status) {
    (void)handles, (void)n, (void)req, (void)use_locking, (void)status;
    return false;
  }
  /// As Update (locked), for updates that answer a value (kCountUpTo) or run
  /// on a device (on_device); `done` runs on the device actor's thread.
  virtual void UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) = 0;
  /// UpdateAndAnswer for several on_device requests (a fused update, one
  /// kernel writing them all): each is checked and its buffers chosen under
  /// the locks of every request's variables, held until `done` returns, so
  /// `done` enqueues the one kernel before anything reads them. One response
  /// per request; a request that fails changes nothing and fails its own
  /// response only. `done` runs on the device actor's thread.
  virtual void UpdateManyAndAnswer(std::vector<VarUpdateRequest> reqs,
                                   std::function<void(std::vector<VarUpdateResponse>&)> done) = 0;
  /// For a captured step (actors/device/step_capture.hpp), which writes the
  /// same buffers at every launch: resolves `handles` (this process's
  /// variables) and calls `fn` with all their locks held (until it returns):
  /// each one's buffer (null without a value) and whether another tensor
  /// shares it; or why they could not be resolved. On the device actor's
  /// thread. Unimplemented where there is nothing to inspect.
  using InspectFn =
      std::function<void(const Status&, const std::vector<const void*>& buffers, const std::vector<bool>& shared)>;
  virtual void InspectBuffers(std::vector<std::string> handles, InspectFn fn) {
    fn(errors::Unimplemented("no variables to inspect here"), {}, {});
  }
};

/// A kernel's update of the `n` variables of `handles` (pointers into its
/// inputs): by UpdateNow when it can, else by Update with the handles copied
/// into `req`. then(status) runs once, either way.
template <class Then>
void UpdateVariables(VariableAccess* vars, const std::string* const* handles, size_t n, VarUpdateRequest req,
                     bool use_locking, Then then) {
  Status now;
  if (vars->UpdateNow(handles, n, req, use_locking, &now)) return then(now);
  req.handles.reserve(n);
  for (size_t i = 0; i < n; ++i) req.handles.push_back(*handles[i]);
  vars->Update(std::move(req), use_locking, std::move(then));
}

}  // namespace actorflow
