// TensorShape: the fully known dimensions of a tensor.
// PartialTensorShape: dimensions possibly unknown (-1), rank possibly unknown;
// used by Placeholder's `shape` attr and by shape inference.
//
// Shapes of rank <= 4 live inline, so copying the shape of a scalar, vector or
// matrix tensor never allocates (tensors are copied on every edge).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

class TensorShape {
 public:
  static constexpr int kInlineRank = 4;

  TensorShape() = default;  // a scalar
  TensorShape(std::initializer_list<int64_t> dims);
  explicit TensorShape(const std::vector<int64_t>& dims);
  TensorShape(const TensorShape& o) { *this = o; }
  // Inline: the executor copies shapes with every tensor it hands on.
  TensorShape& operator=(const TensorShape& o) {
    rank_ = o.rank_;
    num_elements_ = o.num_elements_;
    for (int i = 0; i < kInlineRank; ++i) inline_[i] = o.inline_[i];
    if (o.rank_ > kInlineRank) heap_ = o.heap_;
    else if (!heap_.empty()) heap_.clear();
    return *this;
  }

  /// Validates dims (each >= 0, product fits in int64).
  static Status FromDims(const std::vector<int64_t>& dims, TensorShape* out);

  int dims() const { return rank_; }
  int64_t dim_size(int i) const { return rank_ <= kInlineRank ? inline_[i] : heap_[i]; }
  int64_t num_elements() const { return num_elements_; }
  std::vector<int64_t> dim_sizes() const;

  void AddDim(int64_t size);
  void InsertDim(int d, int64_t size);
  void RemoveDim(int d);
  void set_dim(int d, int64_t size);

  bool IsScalar() const { return rank_ == 0; }
  bool IsVector() const { return rank_ == 1; }
  bool IsMatrix() const { return rank_ == 2; }
  bool IsSameSize(const TensorShape& o) const;
  bool operator==(const TensorShape& o) const { return IsSameSize(o); }
  bool operator!=(const TensorShape& o) const { return !IsSameSize(o); }

  /// "[2,3]"; "[]" for a scalar.
  std::string DebugString() const;

 private:
  void Recompute();
  int rank_ = 0;
  int64_t num_elements_ = 1;
  int64_t inline_[kInlineRank] = {0, 0, 0, 0};
  std::vector<int64_t> heap_;  // used only when rank_ > kInlineRank
};

class PartialTensorShape {
 public:
  PartialTensorShape() = default;  // unknown rank
  explicit PartialTensorShape(std::vector<int64_t> dims) : known_rank_(true), dims_(std::move(dims)) {}
  explicit PartialTensorShape(const TensorShape& s) : known_rank_(true), dims_(s.dim_sizes()) {}
  static PartialTensorShape Unknown() { return PartialTensorShape(); }
  static PartialTensorShape Scalar() { return PartialTensorShape(std::vector<int64_t>{}); }

  bool unknown_rank() const { return !known_rank_; }
  int dims() const { return known_rank_ ? static_cast<int>(dims_.size()) : -1; }
  int64_t dim_size(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dim_sizes() const { return dims_; }
  bool IsFullyDefined() const;
  bool AsTensorShape(TensorShape* out) const;
  /// True when `s` could be a value of this partial shape.
  bool IsCompatibleWith(const TensorShape& s) const;
  bool IsCompatibleWith(const PartialTensorShape& s) const;
  /// "[?,3]", "<unknown>".
  std::string DebugString() const;

 private:
  bool known_rank_ = false;
  std::vector<int64_t> dims_;
};

}  // namespace actorflow
