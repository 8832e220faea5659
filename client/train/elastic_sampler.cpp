#include "actorflow/client/train/elastic_sampler.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace actorflow {

ElasticSampler::ElasticSampler(int64_t size, uint64_t seed) : size_(std::max<int64_t>(1, size)), seed_(seed) {}

const std::vector<int64_t>& ElasticSampler::Permutation(int64_t epoch) {
  for (int i = 0; i < 2; ++i)
    if (cached_epoch_[i] == epoch) return cached_[i];
  // Replace the older epoch's (steps move forward; a rollback is one epoch at most).
  const int slot = cached_epoch_[0] < cached_epoch_[1] ? 0 : 1;
  std::vector<int64_t>& p = cached_[slot];
  p.resize(static_cast<size_t>(size_));
  std::iota(p.begin(), p.end(), int64_t{0});
  // A Fisher-Yates shuffle of our own over mt19937_64 (seeded by the seed
  // and the epoch): std::shuffle's algorithm is the library's, so two builds could differ.
  std::mt19937_64 rng(seed_ ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(epoch + 1)));
  for (int64_t i = size_ - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  cached_epoch_[slot] = epoch;
  return p;
}

void ElasticSampler::Batch(int64_t position, int64_t members, int64_t rank, int64_t batch,
                           std::vector<int64_t>* indices) {
  indices->clear();
  if (position < 0 || members < 1 || rank < 0 || rank >= members || batch < 1) return;
  indices->reserve(static_cast<size_t>(batch));
  const int64_t first = position + rank * batch;
  for (int64_t q = first; q < first + batch; ++q) {
    const std::vector<int64_t>& p = Permutation(q / size_);
    indices->push_back(p[static_cast<size_t>(q % size_)]);
  }
}

}  // namespace actorflow
