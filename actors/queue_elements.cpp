#include "actorflow/actors/queue_elements.hpp"

#include <algorithm>

#include "actorflow/core/status.hpp"
#include "actorflow/ops/array/copy_util.hpp"

namespace actorflow {
namespace queue_detail {

std::shared_ptr<const std::string> IndexRefused(Allocator* a, size_t n, size_t size) noexcept {
  try {
    const std::string bytes = n <= SIZE_MAX / size ? std::to_string(n * size) : "more than 2^64";
    return std::make_shared<const std::string>(
        strings::StrCat("out of memory allocating ", bytes, " bytes for the index of ", n, " queue elements (",
                        a->Name(), ": budget ", HumanBytes(a->limit()), ", ", HumanBytes(a->bytes_in_use()),
                        " in use)"));
  } catch (...) {
    return nullptr;
  }
}

// Copies `count` elements of `src` from `src_first` into `dst` from `dst_first`.
void CopyElements(const Tensor& src, int64_t src_first, Tensor* dst, int64_t dst_first, int64_t count) {
  ElemCopier cp;
  if (!ElemCopier::For(src.dtype(), "queue", &cp).ok()) return;  // CheckQueueSpec admits only copyable dtypes
  cp.Copy(cp.At(dst->raw_data(), dst_first), cp.At(src.raw_data(), src_first), count);
}

Tensor Part::Materialize() const {
  if (row < 0) return source;
  Tensor t(source.dtype(), shape());
  CopyElements(source, First(), &t, 0, NumElements());
  return t;
}

// The batch's elements, one by one (rows of the batch, not copies). Throws
// std::bad_alloc when the index of n elements does not fit the budget.
Elements Split(std::vector<Tensor> batch, int64_t n) {
  Elements out;
  out.reserve(static_cast<size_t>(n));  // first: nothing else is taken when this is refused
  auto chunk = std::make_shared<const Chunk>(Chunk{std::move(batch)});
  for (int64_t i = 0; i < n; ++i) out.emplace_back(chunk, i);
  return out;
}

// Copies `src` into row `row` of `dst` ([n, d0', d1', ...] with every di' >= src's di), zero-padded.
void CopyPadded(const Tensor& src, Tensor* dst, int64_t row) {
  const int rank = src.dims();
  std::vector<int64_t> dst_dims(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) dst_dims[static_cast<size_t>(d)] = dst->dim_size(d + 1);
  const int64_t dst_row = dst->NumElements() / std::max<int64_t>(1, dst->dim_size(0));
  if (rank == 0 || src.NumElements() == 0) {
    CopyElements(src, 0, dst, row * dst_row, src.NumElements());
    return;
  }
  const int64_t last = src.dim_size(rank - 1);
  const int64_t runs = src.NumElements() / std::max<int64_t>(1, last);
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);  // of the run's first element in src
  for (int64_t r = 0; r < runs; ++r) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset = offset * dst_dims[static_cast<size_t>(d)] + index[static_cast<size_t>(d)];
    CopyElements(src, r * last, dst, row * dst_row + offset, last);
    for (int d = rank - 2; d >= 0; --d) {  // next run
      if (++index[static_cast<size_t>(d)] < src.dim_size(d)) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace queue_detail
}  // namespace actorflow
