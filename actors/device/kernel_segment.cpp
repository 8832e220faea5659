#include "actorflow/actors/device/kernel_segment.hpp"

#include <google/protobuf/util/message_differencer.h>

namespace actorflow {

namespace {
// Op and attrs equal; inputs and requested device ignored.
bool SameKernel(const proto::NodeDef& a, const proto::NodeDef& b) {
  if (a.op() != b.op() || a.attr_size() != b.attr_size()) return false;
  for (const auto& [name, value] : a.attr()) {
    auto it = b.attr().find(name);
    if (it == b.attr().end() || !google::protobuf::util::MessageDifferencer::Equivalent(value, it->second))
      return false;
  }
  return true;
}
}  // namespace

Status KernelSegment::Get(const proto::NodeDef& node, bool stateful, Device* device, std::shared_ptr<OpKernel>* out) {
  // The same name is the same kernel when its op and attrs agree (its
  // inputs may differ: a feed rewires them); a feed or fetch node numbered
  // differently in another signature is another kernel.
  if (stateful) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = stateful_.find(node.name());
    if (it != stateful_.end() && SameKernel(it->second.def, node)) {
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
      if (SameKernel(it->second.def, node)) shared = it->second.kernel;  // another plan made it first
      else it->second = Entry{node, shared};
    }
  }
  *out = std::move(shared);
  return Status::OK();
}

}  // namespace actorflow
