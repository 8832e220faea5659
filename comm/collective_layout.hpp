// CollectiveLayout: how a collective group's all-reduce runs, from where its
// members are (comm/collective_executor.hpp). Pure: a function of the
// members' hosts, in rank order, so every rank that knows the same hosts
// derives the same layout.
//
//   flat          one ring of every rank (or one exchange for two): when
//                 every task has a host of its own, when all share one host,
//                 when a host is unknown, or when the flat ring is forced
//   hierarchical  when there are 2 hosts or more and some host has 2 tasks
//                 or more: the tasks of a host give their tensors to the
//                 host's leader (its lowest rank), which sums them (over the
//                 transport's same-host path, a read of the peer's memory);
//                 the leaders run the ring across hosts; each leader shares
//                 the result back with its host's tasks. Across hosts each
//                 host then sends and receives 2 (H-1)/H of the tensor (H
//                 hosts), once, where a flat ring whose neighbours sit on
//                 other hosts sends that much per task.
//
// A host is the address a task's transport is reached at (the membership's
// TaskRecord::host; 127.0.0.1 and 127.0.0.2 are two hosts). `hash` names the
// layout (0 for flat); the ranks compare theirs when the group forms and run
// hierarchically only when every rank's is the same (so a rank that does not
// know its own host, or that forces the flat ring, makes the group flat).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace actorflow {

struct CollectiveLayout {
  /// Per rank: its host's index (hosts numbered in the order of their lowest rank).
  std::vector<int64_t> host;
  /// Per host: its ranks, ascending; the first is the host's leader.
  std::vector<std::vector<int64_t>> ranks_of_host;
  /// 0: flat; otherwise the host map's hash (never 0).
  uint64_t hash = 0;

  bool hierarchical() const { return hash != 0; }
  /// The leaders (the first rank of each host), in host order.
  std::vector<int64_t> Leaders() const;
  /// "flat" or "hierarchical: hosts {0,1} {2,3}", for messages.
  std::string DebugString() const;
};

/// The layout for members whose hosts, in rank order, are `hosts` ("": not
/// known). `allow_hierarchical` false: flat whatever the hosts.
CollectiveLayout PlanCollectiveLayout(const std::vector<std::string>& hosts, bool allow_hierarchical);

}  // namespace actorflow
