#include "actorflow/ops/state/multi_tensor_plan.hpp"

#include <algorithm>
#include <set>

namespace actorflow {

std::vector<MultiTensorLaunch> PlanMultiTensorLaunches(const std::vector<int64_t>& sizes,
                                                       const std::vector<std::vector<const void*>>& writes,
                                                       const std::vector<std::vector<const void*>>& reads) {
  std::vector<MultiTensorLaunch> out;
  MultiTensorLaunch cur;
  std::set<const void*> written, read;  // by the members of `cur`
  auto flush = [&] {
    if (!cur.block_member.empty()) out.push_back(std::move(cur));
    cur = MultiTensorLaunch();
    written.clear();
    read.clear();
  };
  const std::vector<const void*> none;
  for (size_t m = 0; m < sizes.size(); ++m) {
    if (sizes[m] <= 0) continue;
    const std::vector<const void*>& w = m < writes.size() ? writes[m] : none;
    const std::vector<const void*>& r = m < reads.size() ? reads[m] : none;
    const auto in = [](const std::set<const void*>& set, const void* p) { return set.count(p) > 0; };
    const bool conflict = std::any_of(w.begin(), w.end(), [&](const void* p) { return in(written, p) || in(read, p); }) ||
                          std::any_of(r.begin(), r.end(), [&](const void* p) { return in(written, p); });
    if (conflict) flush();
    const int64_t chunks = (sizes[m] + kMultiTensorChunk - 1) / kMultiTensorChunk;
    for (int64_t c = 0; c < chunks; ++c) {
      const bool continuing = !cur.members.empty() && cur.members.back() == static_cast<int>(m);
      if (static_cast<int>(cur.block_member.size()) == kMaxLaunchBlocks ||
          (!continuing && static_cast<int>(cur.members.size()) == kMaxLaunchMembers))
        flush();
      if (cur.members.empty() || cur.members.back() != static_cast<int>(m)) {
        cur.members.push_back(static_cast<int>(m));
        written.insert(w.begin(), w.end());
        read.insert(r.begin(), r.end());
      }
      cur.block_member.push_back(static_cast<uint8_t>(cur.members.size() - 1));
      cur.block_chunk.push_back(static_cast<int32_t>(c));
    }
  }
  flush();
  return out;
}

}  // namespace actorflow
