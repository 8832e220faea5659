// ElasticSampler: which examples each member of an elastic data-parallel
// group trains on, so that the data follows the membership (issue 32). The
// training set, `size` examples, is read as one stream, epoch after epoch,
// each epoch a fresh permutation (the same in every process for a seed). A
// step reads the next members x batch examples of the stream: the member of
// rank r the r-th batch of them. The group's position in the stream (examples
// read so far) is state of the model: a variable updated by each step and
// synced with the others (BroadcastVariables) and saved with them. So when the
// group changes, the rest of the epoch is split over the members alive from
// the next step on: no example of an epoch is skipped or read twice, whatever
// the group's sizes (torchelastic's ElasticDistributedSampler re-splits only
// at an epoch's start).
//
//   ElasticSampler sampler(60000, /*seed=*/2024);
//   std::vector<int64_t> mine;
//   sampler.Batch(position, members, rank, batch, &mine);  // then position += members * batch
//
// Not thread-safe (it caches the current epochs' permutations).
#pragma once

#include <cstdint>
#include <vector>

namespace actorflow {

class ElasticSampler {
 public:
  /// `size` > 0 examples; `seed` fixes every epoch's permutation.
  ElasticSampler(int64_t size, uint64_t seed);

  /// The examples (indices into the set) of rank `rank` of `members`, each
  /// reading `batch`, in the step that begins at stream position `position`
  /// (>= 0): stream positions position + rank*batch up to the next rank's.
  /// A batch may run over an epoch's end into the next epoch.
  void Batch(int64_t position, int64_t members, int64_t rank, int64_t batch, std::vector<int64_t>* indices);

  /// The epoch a stream position falls in (0 first).
  int64_t EpochOf(int64_t position) const { return position / size_; }
  int64_t size() const { return size_; }

 private:
  const std::vector<int64_t>& Permutation(int64_t epoch);

  int64_t size_;
  uint64_t seed_;
  int64_t cached_epoch_[2] = {-1, -1};
  std::vector<int64_t> cached_[2];
};

}  // namespace actorflow
