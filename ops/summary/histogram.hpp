// Histogram: TensorFlow's summary histogram (tensorflow/core/lib/histogram):
// exponential buckets from 1e-12 growing by 1.1 up to 1e20, mirrored for
// negatives, with 0 between, and DBL_MAX as the last limit; encoded as a
// HistogramProto with runs of empty buckets collapsed, byte for byte as
// TensorFlow encodes it, so TensorBoard shows the same histogram.
#pragma once

#include <vector>

#include "actorflow/core/proto/summary.pb.h"

namespace actorflow {

class Histogram {
 public:
  Histogram();
  /// Counts `value` in the first bucket whose limit is greater than it.
  void Add(double value);
  /// min, max, num, sum, sum_squares and the buckets: each non-empty one,
  /// each run of empty ones as one (the run's last limit, 0).
  void EncodeToProto(proto::HistogramProto* out) const;

 private:
  const std::vector<double>& limits_;
  std::vector<double> buckets_;
  double min_, max_, num_ = 0, sum_ = 0, sum_squares_ = 0;
};

}  // namespace actorflow
