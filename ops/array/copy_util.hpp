// Element copies for the array kernels that move blocks of elements of any
// dtype (Concat, Split, Pack, Unpack, Slice, Select, Tile, Pad): memcpy for POD
// dtypes, assignment for strings, sharded over the compute pool.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

/// Copies elements of one dtype between raw buffers: memcpy for POD dtypes,
/// assignment for strings.
struct ElemCopier {
  bool is_string = false;
  size_t stride = 0;  // bytes per element in a buffer

  static Status For(DataType dt, const std::string& op, ElemCopier* c) {
    dt = BaseType(dt);
    if (DataTypeIsStringLike(dt)) {
      c->is_string = true;
      c->stride = sizeof(std::string);
      return Status::OK();
    }
    if (!DataTypeIsPod(dt)) return errors::Unimplemented(op, " does not support dtype ", DataTypeString(dt));
    c->stride = DataTypeSize(dt);
    return Status::OK();
  }
  char* At(void* base, int64_t i) const { return static_cast<char*>(base) + static_cast<size_t>(i) * stride; }
  const char* At(const void* base, int64_t i) const {
    return static_cast<const char*>(base) + static_cast<size_t>(i) * stride;
  }
  void Copy(char* dst, const char* src, int64_t n) const {
    if (n <= 0 || dst == src) return;
    if (is_string) {
      auto* d = reinterpret_cast<std::string*>(dst);
      const auto* s = reinterpret_cast<const std::string*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    } else {
      std::memcpy(dst, src, static_cast<size_t>(n) * stride);
    }
  }
  /// Rough cycles to copy one element, for sharding.
  int64_t ElemCost() const { return is_string ? 16 : std::max<int64_t>(1, static_cast<int64_t>(stride / 8)); }
};

/// dst[o * dst_stride + k] = src[o * src_stride + k] for o < rows, k < len
/// (in elements), sharded over the rows * len elements.
inline void CopyRows(OpKernelContext* ctx, const ElemCopier& cp, const void* src, int64_t src_stride, void* dst,
              int64_t dst_stride, int64_t rows, int64_t len) {
  if (rows <= 0 || len <= 0) return;
  ctx->device()->compute_pool()->For(rows * len, cp.ElemCost(), [&](int64_t s, int64_t e) {
    int64_t o = s / len;
    int64_t k = s % len;
    while (s < e) {
      const int64_t n = std::min(len - k, e - s);
      cp.Copy(cp.At(dst, o * dst_stride + k), cp.At(src, o * src_stride + k), n);
      s += n;
      ++o;
      k = 0;
    }
  });
}

/// Base of the kernels that copy elements of their dtype T (output 0's): the
/// copier is fixed at construction; a dtype it cannot copy is reported when a
/// copy is needed.
class CopyingKernel : public OpKernel {
 public:
  explicit CopyingKernel(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    copier_status_ = ElemCopier::For(output_type(0), type_string(), &cp_);
  }

 protected:
  ElemCopier cp_;
  Status copier_status_;
};

}  // namespace actorflow
