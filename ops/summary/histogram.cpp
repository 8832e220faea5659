#include "actorflow/ops/summary/histogram.hpp"

#include <algorithm>
#include <cfloat>

namespace actorflow {

namespace {

const std::vector<double>& DefaultLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> pos, neg;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) {  // exactly TensorFlow's products, not pow
      pos.push_back(v);
      neg.push_back(-v);
    }
    pos.push_back(DBL_MAX);
    neg.push_back(-DBL_MAX);
    std::reverse(neg.begin(), neg.end());
    std::vector<double> all = neg;
    all.push_back(0.0);
    all.insert(all.end(), pos.begin(), pos.end());
    return all;
  }();
  return limits;
}

}  // namespace

Histogram::Histogram() : limits_(DefaultLimits()), buckets_(limits_.size(), 0.0), min_(DBL_MAX), max_(-DBL_MAX) {}

void Histogram::Add(double value) {
  size_t b = static_cast<size_t>(std::upper_bound(limits_.begin(), limits_.end(), value) - limits_.begin());
  if (b >= buckets_.size()) b = buckets_.size() - 1;  // DBL_MAX itself: the last bucket (TensorFlow overruns)
  buckets_[b] += 1.0;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  num_ += 1;
  sum_ += value;
  sum_squares_ += value * value;
}

void Histogram::EncodeToProto(proto::HistogramProto* out) const {
  out->Clear();
  out->set_min(min_);
  out->set_max(max_);
  out->set_num(num_);
  out->set_sum(sum_);
  out->set_sum_squares(sum_squares_);
  for (size_t i = 0; i < buckets_.size();) {
    double end = limits_[i], count = buckets_[i];
    ++i;
    if (count <= 0) {
      while (i < buckets_.size() && buckets_[i] <= 0) {
        end = limits_[i];
        count = buckets_[i];
        ++i;
      }
    }
    out->add_bucket_limit(end);
    out->add_bucket(count);
  }
  if (out->bucket_size() == 0) {
    out->add_bucket_limit(DBL_MAX);
    out->add_bucket(0.0);
  }
}

}  // namespace actorflow
