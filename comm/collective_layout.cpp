#include "actorflow/comm/collective_layout.hpp"

#include <algorithm>
#include <map>

#include "actorflow/ops/collective_access.hpp"

namespace actorflow {

std::vector<int64_t> CollectiveLayout::Ring(int64_t rank) const {
  std::vector<int64_t> out;
  if (!hierarchical()) {
    for (size_t r = 0; r < host.size(); ++r) out.push_back(static_cast<int64_t>(r));
    return out;
  }
  const auto& mine = ranks_of_host[host[rank]];
  const size_t local = std::find(mine.begin(), mine.end(), rank) - mine.begin();
  for (const auto& ranks : ranks_of_host) out.push_back(sharded ? ranks[local] : ranks.front());
  return out;
}

std::string CollectiveLayout::DebugString() const {
  if (!hierarchical()) return "flat";
  std::string s = sharded ? "sharded: hosts" : "leader: hosts";
  for (const auto& ranks : ranks_of_host) {
    s += " {";
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
    s += "}";
  }
  return s;
}

CollectiveLayout PlanCollectiveLayout(const std::vector<std::string>& hosts, CollectiveAlgorithm algorithm) {
  CollectiveLayout layout;
  std::map<std::string, int64_t> index;
  bool known = true, shared = false;
  for (size_t r = 0; r < hosts.size(); ++r) {
    known = known && !hosts[r].empty();
    auto [it, added] = index.emplace(hosts[r], static_cast<int64_t>(index.size()));
    if (added) layout.ranks_of_host.emplace_back();
    layout.host.push_back(it->second);
    layout.ranks_of_host[it->second].push_back(static_cast<int64_t>(r));
    shared = shared || layout.ranks_of_host[it->second].size() > 1;
  }
  if (algorithm == CollectiveAlgorithm::kRing || !known || !shared || layout.ranks_of_host.size() < 2) return layout;
  layout.sharded = algorithm == CollectiveAlgorithm::kSharded;
  for (const auto& ranks : layout.ranks_of_host)
    layout.sharded = layout.sharded && ranks.size() == layout.ranks_of_host.front().size();
  // The hash of the layout's kind and host indices (the same text on every
  // rank that knows the same hosts and asks for the same).
  std::string text = layout.sharded ? "sharded" : "leader";
  for (int64_t h : layout.host) text += " " + std::to_string(h);
  layout.hash = CollectivePlanHash(text);
  return layout;
}

std::pair<int64_t, int64_t> CollectivePiece(int64_t total, int64_t n, int64_t i) {
  const int64_t base = total / n, extra = total % n;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

}  // namespace actorflow
