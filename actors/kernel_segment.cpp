#include "actors/kernel_segment.hpp"

namespace actorflow {

Status KernelSegment::Get(const proto::NodeDef& node, bool stateful, Device* device, std::shared_ptr<OpKernel>* out) {
  if (stateful) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = stateful_.find(node.name());
    if (it != stateful_.end() && it->second->type_string() == node.op()) {
      *out = it->second;
      return Status::OK();
    }
  }
  std::unique_ptr<OpKernel> k;
  AF_RETURN_IF_ERROR(CreateOpKernel(device, node, &k));
  std::shared_ptr<OpKernel> shared(std::move(k));
  if (stateful) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = stateful_.emplace(node.name(), shared);
    if (!inserted) {
      if (it->second->type_string() == node.op()) shared = it->second;  // another plan made it first
      else it->second = shared;
    }
  }
  *out = std::move(shared);
  return Status::OK();
}

}  // namespace actorflow
