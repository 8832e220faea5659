#include "actors/kernel_segment.hpp"

#include <google/protobuf/util/message_differencer.h>

namespace actorflow {

Status KernelSegment::Get(const proto::NodeDef& node, bool stateful, Device* device, std::shared_ptr<OpKernel>* out) {
  // The same name with another definition (a feed or fetch node numbered
  // differently in another signature) is another kernel.
  using google::protobuf::util::MessageDifferencer;
  if (stateful) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = stateful_.find(node.name());
    if (it != stateful_.end() && MessageDifferencer::Equivalent(it->second.def, node)) {
      *out = it->second.kernel;
      return Status::OK();
    }
  }
  std::unique_ptr<OpKernel> k;
  AF_RETURN_IF_ERROR(CreateOpKernel(device, node, &k));
  std::shared_ptr<OpKernel> shared(std::move(k));
  if (stateful) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = stateful_.try_emplace(node.name(), Entry{node, shared});
    if (!inserted) {
      if (MessageDifferencer::Equivalent(it->second.def, node)) shared = it->second.kernel;  // another plan made it first
      else it->second = Entry{node, shared};
    }
  }
  *out = std::move(shared);
  return Status::OK();
}

}  // namespace actorflow
