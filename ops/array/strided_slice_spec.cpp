#include "actorflow/ops/array/strided_slice_spec.hpp"

#include <algorithm>

#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {

namespace {

constexpr int kNewAxis = -1, kShrinkAxis = -2;
constexpr int kMaxSparseDims = 32;  // the masks are 32-bit in TensorFlow

bool Bit(int64_t mask, int i) { return ((mask >> i) & 1) != 0; }

}  // namespace

Status ResolveStridedSlice(const std::vector<int64_t>& input_dims, const Tensor* begin,
                           const Tensor* end, const Tensor* strides, const StridedSliceMasks& masks,
                           StridedSliceSpec* spec) {
  // The sparse spec: what the user wrote.
  int sparse_dims = -1;
  for (const Tensor* t : {begin, end, strides}) {
    if (t == nullptr) continue;
    if (t->dims() != 1)
      return errors::InvalidArgument("begin, end and strides must be 1-D, got shape ", t->shape().DebugString());
    AF_RETURN_IF_ERROR(CheckIndexDtype(*t, "begin, end and strides"));
    if (sparse_dims >= 0 && t->NumElements() != sparse_dims)
      return errors::InvalidArgument("Expected begin, end, and strides to be 1D equal size tensors, but got sizes ",
                                     begin ? begin->NumElements() : -1, ", ", end ? end->NumElements() : -1, ", and ",
                                     strides ? strides->NumElements() : -1, " instead.");
    sparse_dims = static_cast<int>(t->NumElements());
  }
  spec->known = begin != nullptr && end != nullptr && strides != nullptr;
  if (sparse_dims < 0) return errors::InvalidArgument("the number of begin/end/strides entries is unknown");
  if (sparse_dims > kMaxSparseDims)
    return errors::InvalidArgument("StridedSlice takes at most ", kMaxSparseDims, " index entries, got ", sparse_dims);
  int ellipses = 0;
  for (int i = 0; i < sparse_dims; ++i) ellipses += Bit(masks.ellipsis, i);
  if (ellipses > 1) return errors::InvalidArgument("Multiple ellipses in slice spec not allowed");
  const std::vector<int64_t> b = begin ? TensorToInt64s(*begin) : std::vector<int64_t>(sparse_dims, 0);
  const std::vector<int64_t> e = end ? TensorToInt64s(*end) : std::vector<int64_t>(sparse_dims, 0);
  const std::vector<int64_t> s = strides ? TensorToInt64s(*strides) : std::vector<int64_t>(sparse_dims, 1);

  // New axes after an ellipsis are not input dims: the ellipsis stops short of them.
  int new_axes_after_ellipsis = 0;
  bool ellipsis_seen = false;
  int64_t ellipsis_mask = masks.ellipsis;
  for (int i = 0; i < sparse_dims; ++i) {
    if (ellipsis_seen && Bit(masks.new_axis, i)) ++new_axes_after_ellipsis;
    if (Bit(ellipsis_mask, i)) ellipsis_seen = true;
  }
  int dims = sparse_dims;
  if (!ellipsis_seen) {  // an implicit ellipsis at the end takes the dims not named
    ellipsis_mask |= int64_t{1} << sparse_dims;
    ++dims;
  }

  // The dense spec: one entry per input dim.
  const int rank = static_cast<int>(input_dims.size());
  std::vector<int64_t> db(rank, 0), de(rank, 0), ds(rank, 1);
  std::vector<bool> dbm(rank, false), dem(rank, false), dshrink(rank, false);
  std::vector<int> final_gather;
  int full = 0;
  for (int i = 0; i < dims; ++i) {
    if (Bit(ellipsis_mask, i)) {
      const int next = std::min(rank - (dims - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full < next; ++full) {
        dbm[full] = dem[full] = true;
        final_gather.push_back(full);
      }
    } else if (Bit(masks.new_axis, i)) {
      final_gather.push_back(kNewAxis);
    } else {
      if (full >= rank)
        return errors::InvalidArgument("Index out of range using input dim ", full, "; input has only ", rank,
                                       " dims");
      db[full] = b[i];
      de[full] = e[i];
      ds[full] = s[i];
      dbm[full] = Bit(masks.begin, i);
      dem[full] = Bit(masks.end, i);
      if (Bit(masks.shrink_axis, i)) {
        dshrink[full] = true;
        final_gather.push_back(kShrinkAxis);
      } else {
        final_gather.push_back(full);
      }
      ++full;
    }
  }

  spec->begin.assign(rank, 0);
  spec->stride.assign(rank, 1);
  spec->processing_shape.assign(rank, -1);
  spec->is_identity = spec->known;
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = input_dims[i];
    const int64_t stride = ds[i];
    if (spec->known && stride == 0) return errors::InvalidArgument("strides[", i, "] must be non-zero");
    if (spec->known && dshrink[i] && stride <= 0)
      return errors::InvalidArgument("only stride 1 allowed on non-range indexing.");
    spec->stride[i] = stride;
    int64_t length = 0;
    bool known_length = false;
    if (spec->known && dim >= 0) {
      int64_t bi = db[i], ei = de[i];
      if (dshrink[i]) {
        // x[-1] is begin -1, end 0: the end is recreated as begin + 1.
        const int64_t fwd = bi < 0 ? dim + bi : bi;
        if (fwd < 0 || fwd >= dim)
          return errors::InvalidArgument("slice index ", bi, " of dimension ", i, " out of bounds.");
        bi = fwd;
        ei = fwd + 1;
      } else {
        // Masked ends take the whole range in the stride's direction; others
        // count from the end when negative and are clamped to the range.
        const int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
        auto canonical = [&](int64_t x, bool masked, bool is_begin) {
          if (masked) return (stride > 0) == is_begin ? lo : hi;
          const int64_t fwd = x < 0 ? dim + x : x;
          return fwd < lo ? lo : fwd > hi ? hi : fwd;
        };
        bi = canonical(bi, dbm[i], true);
        ei = canonical(ei, dem[i], false);
      }
      spec->begin[i] = bi;
      length = ei - bi;
      known_length = true;
      spec->is_identity &= stride == 1 && bi == 0 && ei == dim;
    } else if (spec->known && dshrink[i]) {
      length = 1;
      known_length = true;
      spec->is_identity = false;
    } else {
      spec->is_identity = false;
      if (dbm[i] && dem[i] && dim >= 0 && strides != nullptr) {
        length = stride < 0 ? -dim : dim;
        known_length = true;
      }
    }
    if (known_length) {
      spec->processing_shape[i] =
          (length == 0 || (length < 0) != (stride < 0)) ? 0 : length / stride + (length % stride != 0 ? 1 : 0);
    }
  }
  spec->final_shape.clear();
  for (int g : final_gather) {
    if (g >= 0) spec->final_shape.push_back(spec->processing_shape[g]);
    else if (g == kNewAxis) spec->final_shape.push_back(1);
  }
  return Status::OK();
}

}  // namespace actorflow
