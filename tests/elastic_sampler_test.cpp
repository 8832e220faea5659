// ElasticSampler (client/train/elastic_sampler.hpp): whatever the group's
// sizes from step to step, every example of an epoch is read exactly once;
// the members of a step read disjoint batches; a step read again (after a
// rollback to a synced position) reads the same examples; every process
// draws the same permutations for a seed, and each epoch a new one.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "actorflow/client/train/elastic_sampler.hpp"

using namespace actorflow;

TEST_CASE("elastic sampler: with the group changing size between steps, each epoch's examples are read exactly once") {
  constexpr int64_t kSize = 1000, kBatch = 7;
  ElasticSampler sampler(kSize, 2024);
  // Members per step: 3, then one lost (2), one joins (3), two lost (1), ...
  const std::vector<int64_t> sizes = {3, 3, 3, 2, 2, 3, 1, 1, 4, 2, 3};
  std::map<int64_t, std::vector<int>> seen;  // epoch -> times each example was read
  int64_t position = 0;
  std::vector<int64_t> mine;
  for (int step = 0; position < 3 * kSize; ++step) {
    const int64_t members = sizes[static_cast<size_t>(step) % sizes.size()];
    std::set<int64_t> this_step;
    for (int64_t r = 0; r < members; ++r) {
      sampler.Batch(position, members, r, kBatch, &mine);
      REQUIRE(mine.size() == static_cast<size_t>(kBatch));
      for (size_t i = 0; i < mine.size(); ++i) {
        const int64_t q = position + r * kBatch + static_cast<int64_t>(i);
        auto& counts = seen[sampler.EpochOf(q)];
        counts.resize(kSize);
        REQUIRE(mine[i] >= 0);
        REQUIRE(mine[i] < kSize);
        ++counts[static_cast<size_t>(mine[i])];
        this_step.insert(q);
      }
    }
    CHECK(this_step.size() == static_cast<size_t>(members * kBatch));  // disjoint batches
    position += members * kBatch;
  }
  // Epochs 0, 1 and 2 complete: every example exactly once in each.
  for (int64_t e = 0; e < 3; ++e) {
    INFO("epoch " << e);
    const auto& counts = seen.at(e);
    for (int64_t i = 0; i < kSize; ++i) {
      INFO("example " << i);
      REQUIRE(counts[static_cast<size_t>(i)] == 1);
    }
  }
}

TEST_CASE("elastic sampler: the same seed draws the same permutations in every sampler; epochs and seeds differ") {
  ElasticSampler a(500, 7), b(500, 7), other(500, 8);
  std::vector<int64_t> x, y, z;
  // b reads epoch 2 first (out of order, as a joiner synced to a later position would).
  b.Batch(1000, 1, 0, 500, &y);
  a.Batch(0, 1, 0, 500, &x);
  std::vector<int64_t> e0 = x;
  a.Batch(1000, 1, 0, 500, &x);
  CHECK(x == y);
  CHECK(x != e0);
  other.Batch(1000, 1, 0, 500, &z);
  CHECK(z != y);
  // A step read again from its position (a rollback) reads the same examples.
  a.Batch(0, 1, 0, 500, &x);
  CHECK(x == e0);
  // A batch over an epoch's end runs into the next epoch's permutation.
  a.Batch(495, 1, 0, 10, &x);
  b.Batch(500, 1, 0, 5, &y);
  REQUIRE(x.size() == 10);
  CHECK(std::vector<int64_t>(x.begin() + 5, x.end()) == y);
}

TEST_CASE("elastic sampler: arguments out of range give no examples") {
  ElasticSampler s(10, 1);
  std::vector<int64_t> v = {1};
  s.Batch(-1, 2, 0, 3, &v);
  CHECK(v.empty());
  s.Batch(0, 2, 2, 3, &v);
  CHECK(v.empty());
  s.Batch(0, 0, 0, 3, &v);
  CHECK(v.empty());
  s.Batch(0, 1, 0, 0, &v);
  CHECK(v.empty());
}
