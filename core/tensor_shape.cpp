#include "actorflow/core/tensor_shape.hpp"

#include <limits>

namespace actorflow {

TensorShape::TensorShape(std::initializer_list<int64_t> dims) {
  for (auto d : dims) AddDim(d);
}

TensorShape::TensorShape(const std::vector<int64_t>& dims) {
  for (auto d : dims) AddDim(d);
}

Status TensorShape::FromDims(const std::vector<int64_t>& dims, TensorShape* out) {
  // The product of the non-zero dims must fit too, so that arithmetic on the
  // dims of an empty tensor cannot overflow either.
  int64_t n = 1;
  for (auto d : dims) {
    if (d < 0) return errors::InvalidArgument("dimension ", d, " is negative in shape of rank ", dims.size());
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return errors::InvalidArgument("shape with ", dims.size(), " dimensions has more than 2^63-1 elements");
    if (d != 0) n *= d;
  }
  *out = TensorShape(dims);
  return Status::OK();
}

std::vector<int64_t> TensorShape::dim_sizes() const {
  std::vector<int64_t> out(rank_);
  for (int i = 0; i < rank_; ++i) out[i] = dim_size(i);
  return out;
}

void TensorShape::AddDim(int64_t size) {
  if (rank_ < kInlineRank) {
    inline_[rank_++] = size;
  } else {
    if (rank_ == kInlineRank) heap_.assign(inline_, inline_ + kInlineRank);
    heap_.push_back(size);
    ++rank_;
  }
  num_elements_ *= size;
}

void TensorShape::InsertDim(int d, int64_t size) {
  auto v = dim_sizes();
  v.insert(v.begin() + d, size);
  *this = TensorShape(v);
}

void TensorShape::RemoveDim(int d) {
  auto v = dim_sizes();
  v.erase(v.begin() + d);
  *this = TensorShape(v);
}

void TensorShape::set_dim(int d, int64_t size) {
  if (rank_ <= kInlineRank) inline_[d] = size;
  else heap_[d] = size;
  Recompute();
}

void TensorShape::Recompute() {
  num_elements_ = 1;
  for (int i = 0; i < rank_; ++i) num_elements_ *= dim_size(i);
}

bool TensorShape::IsSameSize(const TensorShape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dim_size(i) != o.dim_size(i)) return false;
  return true;
}

std::string TensorShape::DebugString() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ",";
    s += std::to_string(dim_size(i));
  }
  return s + "]";
}

bool PartialTensorShape::IsFullyDefined() const {
  if (!known_rank_) return false;
  for (auto d : dims_)
    if (d < 0) return false;
  return true;
}

bool PartialTensorShape::AsTensorShape(TensorShape* out) const {
  if (!IsFullyDefined()) return false;
  *out = TensorShape(dims_);
  return true;
}

bool PartialTensorShape::IsCompatibleWith(const TensorShape& s) const {
  if (!known_rank_) return true;
  if (static_cast<int>(dims_.size()) != s.dims()) return false;
  for (int i = 0; i < s.dims(); ++i)
    if (dims_[i] >= 0 && dims_[i] != s.dim_size(i)) return false;
  return true;
}

bool PartialTensorShape::IsCompatibleWith(const PartialTensorShape& s) const {
  if (!known_rank_ || !s.known_rank_) return true;
  if (dims_.size() != s.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] >= 0 && s.dims_[i] >= 0 && dims_[i] != s.dims_[i]) return false;
  return true;
}

std::string PartialTensorShape::DebugString() const {
  if (!known_rank_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace actorflow
