// KernelSegment: the kernels of stateful nodes, shared by every plan a
// session registers on a device (TensorFlow's OpSegment).
//
// A session prepares one plan per Run signature; a stateful node (a random
// op with its stream position, anything keeping state in its kernel) must be
// the same kernel in all of them, or a new signature would restart its
// stream. Stateless kernels stay per plan. Plans are built on pool threads,
// so the segment is thread-safe; the device actor keeps one per session and
// drops it when the session closes (plans still running keep their kernels).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "actorflow/core/status.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

class KernelSegment {
 public:
  /// The kernel of `node` on `device`: the segment's own for stateful ops
  /// (created on first use), a new one otherwise.
  Status Get(const proto::NodeDef& node, bool stateful, Device* device, std::shared_ptr<OpKernel>* out);

 private:
  struct Entry {
    proto::NodeDef def;  // what it was made from
    std::shared_ptr<OpKernel> kernel;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> stateful_;  // by node name; guarded by mu_
};

}  // namespace actorflow
