// StepResources: state that lives exactly as long as one step of one graph
// partition (TensorFlow's per-step resource manager), such as the stacks of
// the stack ops (ops/stack/stack.hpp), which while-loop gradients use to keep
// per-iteration values.
//
// The StepState of a step owns one (actors/device/step_state.hpp); kernels reach it
// through OpKernelContext::step_resources(). A resource is named by a
// ResourceHandle whose container is private to the step ("_step_<n>", unique
// in the process), so a handle that outlives its step, or that reaches
// another step or another device's part of the step, is NotFound rather than
// someone else's state. Everything goes when the step ends.
//
// Thread-safe: the kernels that use it run inline on the device actor's
// thread, but nothing stops one from running on a pool thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actorflow/core/resource_handle.hpp"
#include "actorflow/core/status.hpp"

namespace actorflow {

/// One piece of per-step state.
class StepResource {
 public:
  virtual ~StepResource() = default;
};

class StepResources {
 public:
  StepResources() = default;
  StepResources(const StepResources&) = delete;
  StepResources& operator=(const StepResources&) = delete;

  /// A name unique in this step made from `base`: "<base>_<n>", n counting
  /// from 0 per step, so a node creating a resource in every loop iteration
  /// makes a new one each time.
  std::string UniqueName(const std::string& base);
  /// Adds `resource` as `name` (from UniqueName) and returns its handle,
  /// `dtype` recorded in it. InvalidArgument when the name is taken.
  Status Add(const std::string& name, DataType dtype, std::shared_ptr<StepResource> resource, ResourceHandle* handle);
  /// The resource `handle` names. NotFound, naming `kind` ("stack") and the
  /// resource, when it is not one of this step's.
  Status Lookup(const ResourceHandle& handle, const char* kind, std::shared_ptr<StepResource>* out) const;
  /// As Lookup, and InvalidArgument when the resource is not a T.
  template <class T>
  Status Lookup(const ResourceHandle& handle, const char* kind, std::shared_ptr<T>* out) const {
    std::shared_ptr<StepResource> r;
    AF_RETURN_IF_ERROR(Lookup(handle, kind, &r));
    *out = std::dynamic_pointer_cast<T>(r);
    if (!*out) return errors::InvalidArgument("resource '", handle.name, "' of this step is not a ", kind);
    return Status::OK();
  }
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::string container_;  // "" until the first name is made; guarded by mu_
  int64_t next_id_ = 0;    // guarded by mu_
  std::map<std::string, std::shared_ptr<StepResource>> resources_;  // by name; guarded by mu_
};

}  // namespace actorflow
