#include "actorflow/ops/step_resources.hpp"

#include <atomic>

namespace actorflow {

std::string StepResources::UniqueName(const std::string& base) {
  std::lock_guard<std::mutex> l(mu_);
  if (container_.empty()) {
    // Made on first use: a step that makes no resource pays nothing.
    static std::atomic<uint64_t> next_container{1};
    container_ = "_step_" + std::to_string(next_container++);
  }
  return base + "_" + std::to_string(next_id_++);
}

Status StepResources::Add(const std::string& name, DataType dtype, std::shared_ptr<StepResource> resource,
                          ResourceHandle* handle) {
  std::lock_guard<std::mutex> l(mu_);
  if (container_.empty()) return errors::Internal("step resource '", name, "' added before its name was made");
  if (!resources_.emplace(name, std::move(resource)).second)
    return errors::InvalidArgument("step resource '", name, "' exists already");
  handle->container = container_;
  handle->name = name;
  handle->dtype = dtype;
  handle->shape = PartialTensorShape();
  return Status::OK();
}

Status StepResources::Lookup(const ResourceHandle& handle, const char* kind, std::shared_ptr<StepResource>* out) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = handle.container == container_ ? resources_.find(handle.name) : resources_.end();
  if (it == resources_.end())
    return errors::NotFound(kind, " '", handle.name, "' is not one of this step's (its handle is from ",
                            handle.container, "; a ", kind, " lives as long as the step, on the device, that made it)");
  *out = it->second;
  return Status::OK();
}

size_t StepResources::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return resources_.size();
}

}  // namespace actorflow
