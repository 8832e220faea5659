#include "actorflow/comm/collective_layout.hpp"

#include <map>

#include "actorflow/ops/collective_access.hpp"

namespace actorflow {

std::vector<int64_t> CollectiveLayout::Leaders() const {
  std::vector<int64_t> out;
  for (const auto& ranks : ranks_of_host) out.push_back(ranks.front());
  return out;
}

std::string CollectiveLayout::DebugString() const {
  if (!hierarchical()) return "flat";
  std::string s = "hierarchical: hosts";
  for (const auto& ranks : ranks_of_host) {
    s += " {";
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
    s += "}";
  }
  return s;
}

CollectiveLayout PlanCollectiveLayout(const std::vector<std::string>& hosts, bool allow_hierarchical) {
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
  if (!allow_hierarchical || !known || !shared || layout.ranks_of_host.size() < 2) return layout;
  // The hash of the host indices (the same text on every rank that knows the same hosts).
  std::string text = "hosts";
  for (int64_t h : layout.host) text += " " + std::to_string(h);
  layout.hash = CollectivePlanHash(text);
  return layout;
}

}  // namespace actorflow
