// CollectiveLayout: how a collective group's all-reduce runs, from where its
// members are (comm/collective_executor.hpp). Pure: a function of the
// members' hosts, in rank order, so every rank that knows the same hosts
// derives the same layout.
//
//   flat     one ring of every rank (or one exchange for two): when every
//            task has a host of its own, when all share one host, when a
//            host is unknown, or when the flat ring is forced (kRing)
//   leader   2 hosts or more, some with 2 tasks or more (kAuto): a host's
//            tasks give their tensors to the host's leader (its lowest rank),
//            which sums them (reading them from the tasks' memory over the
//            transport's same-host path); the leaders run the ring across
//            hosts; each leader shares the result back on its host
//   sharded  asked for (kSharded), 2 hosts or more, every host with the same
//            number k >= 2 of tasks: the tensor is cut into k shards; the tasks of a
//            host reduce-scatter it among themselves (task j sums shard j of
//            its host's tensors, read from their memory over the transport's
//            same-host path), task j of every host runs the ring across hosts
//            for shard j (k rings at once, one per local index), and the
//            host's tasks all-gather the reduced shards (hosts of different
//            sizes: leader)
// Both hierarchical layouts send 2 (H-1)/H of the tensor each way over each
// host's link (H hosts), once per host, where a flat ring whose neighbours
// sit on other hosts sends that much per task. The sharded one also splits
// the host's work (reads, sums, the ring's turns) among its tasks instead of
// loading the leader with all of it (NCCL's way), which pays where a host's
// CPUs or memory are the limit; in bench/bench_allreduce_multihost.sh (4
// hosts x 2 tasks on 1 Gbit/s links, 8 processes on 2 shared cores) the two
// measured alike within the noise (medians of 4 runs at 64 MiB: leader 7%
// faster in block placement, 2% in cyclic), so the default is the leader
// layout the issue describes.
//
// A host is the address a task's transport is reached at (the membership's
// TaskRecord::host; 127.0.0.1 and 127.0.0.2 are two hosts). `hash` names the
// layout (0 for flat); the ranks compare theirs when the group forms and run
// hierarchically only when every rank's is the same (so a rank that does not
// know its own host, or that forces another algorithm, makes the group flat).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorflow {

/// What a process asks for: kAuto (leader or flat, as the hosts call for),
/// kRing (always flat), kSharded (sharded where the hosts allow, else as kAuto).
enum class CollectiveAlgorithm { kAuto, kRing, kSharded };

struct CollectiveLayout {
  /// Per rank: its host's index (hosts numbered in the order of their lowest rank).
  std::vector<int64_t> host;
  /// Per host: its ranks, ascending; the first is the host's leader.
  std::vector<std::vector<int64_t>> ranks_of_host;
  /// 0: flat; otherwise the layout's hash (never 0).
  uint64_t hash = 0;
  /// Hierarchical and sharded (else leader).
  bool sharded = false;

  bool hierarchical() const { return hash != 0; }
  /// The ranks of `rank`'s ring, in host order: sharded, the tasks of its
  /// local index on every host; leader, the hosts' leaders; flat, every rank.
  std::vector<int64_t> Ring(int64_t rank) const;
  /// "flat", "sharded: hosts {0,1} {2,3}" or "leader: hosts {0} {1,2} {3}", for messages.
  std::string DebugString() const;
};

/// The layout for members whose hosts, in rank order, are `hosts` ("": not known).
CollectiveLayout PlanCollectiveLayout(const std::vector<std::string>& hosts, CollectiveAlgorithm algorithm);

/// Elements [offset, offset + length) of piece `i` of `total` cut into `n`
/// nearly equal pieces (the first total % n one longer): the ring's chunks,
/// the sharded layout's shards.
std::pair<int64_t, int64_t> CollectivePiece(int64_t total, int64_t n, int64_t i);

}  // namespace actorflow
