// TransposeTensor and the Transpose op.
//
// The permutation is first simplified: dimensions of size 1 are dropped and
// runs of output dimensions that are consecutive input dimensions are merged,
// so NHWC -> NCHW becomes a batch of 2-D transposes and an identity becomes one
// copy. When the innermost dimension stays innermost, it becomes part of the
// unit that is moved (a memcpy of a whole row). What remains is, for every
// index of the other dims, a 2-D transpose between the input's innermost dim
// and the output's innermost dim, copied in cache-sized tiles.
#include "actorflow/ops/array/transpose_op.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

/// pool->For, or fn(0, n) on this thread without a pool.
template <class Fn>
void PoolFor(ComputePool* pool, int64_t n, int64_t cost, Fn&& fn) {
  if (pool != nullptr) pool->For(n, cost, std::forward<Fn>(fn));
  else if (n > 0) fn(int64_t{0}, n);
}

template <class V>
std::string JoinList(const std::vector<V>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(v[i]);
  }
  return s;
}

/// Checks that `perm` is a permutation of 0..rank-1, with TensorFlow's messages.
template <class I>
Status CheckPermutation(const std::vector<I>& perm, int rank) {
  if (static_cast<int64_t>(perm.size()) != rank)
    return errors::InvalidArgument("transpose expects a vector of size ", rank, ". But input(1) is a vector of size ",
                                   perm.size());
  std::vector<bool> bits(rank, false);
  for (const I d : perm) {
    if (d < 0 || d >= rank) return errors::InvalidArgument(d, " is out of range [0 .. ", rank, ")");
    bits[d] = true;
  }
  for (int i = 0; i < rank; ++i)
    if (!bits[i]) return errors::InvalidArgument(i, " is missing from {", JoinList(perm), "}.");
  return Status::OK();
}

// What one element of the simplified transpose is. Row(dst, src, n, stride)
// copies n units: dst[j] = src[j * stride], strides counted in units.
template <size_t N>
struct FixedUnit {
  size_t bytes() const { return N; }
  void Row(char* dst, const char* src, int64_t n, int64_t stride) const {
    const size_t step = static_cast<size_t>(stride) * N;
    for (int64_t j = 0; j < n; ++j, src += step) std::memcpy(dst + j * N, src, N);
  }
};

struct VarUnit {
  size_t n_bytes;
  size_t bytes() const { return n_bytes; }
  void Row(char* dst, const char* src, int64_t n, int64_t stride) const {
    const size_t step = static_cast<size_t>(stride) * n_bytes;
    for (int64_t j = 0; j < n; ++j, src += step) std::memcpy(dst + j * n_bytes, src, n_bytes);
  }
};

struct StringUnit {
  int64_t block;  // strings per unit
  size_t bytes() const { return static_cast<size_t>(block) * sizeof(std::string); }
  void Row(char* dst, const char* src, int64_t n, int64_t stride) const {
    auto* d = reinterpret_cast<std::string*>(dst);
    const auto* s = reinterpret_cast<const std::string*>(src);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < block; ++k) d[j * block + k] = s[j * stride * block + k];
  }
};

/// The simplified transpose (no size-1 dims, innermost input dim not innermost
/// in the output) as a batch of 2-D transposes in square tiles. Let `a` be the
/// output dim that is the input's innermost (contiguous to read) and `b` the
/// output's innermost (contiguous to write): for every index of the other
/// dims, out[.., a, .., b] = in[a + b * IS] is copied tile by tile, so that the
/// lines read and the lines written both stay in cache.
template <class Unit>
void TransposeTiled(const Unit& u, const char* in, char* out, const std::vector<int64_t>& d,
                    const std::vector<int>& p, ComputePool* pool) {
  const int r = static_cast<int>(d.size());
  std::vector<int64_t> in_stride(r, 1), od(r), is(r), os(r, 1);
  for (int i = r - 2; i >= 0; --i) in_stride[i] = in_stride[i + 1] * d[i + 1];
  for (int i = 0; i < r; ++i) {
    od[i] = d[p[i]];
    is[i] = in_stride[p[i]];
  }
  for (int i = r - 2; i >= 0; --i) os[i] = os[i + 1] * od[i + 1];
  int q = 0;
  while (p[q] != r - 1) ++q;  // q < r - 1: the innermost dim moved
  const int64_t A = od[q], OS = os[q];          // a: input stride 1
  const int64_t B = od[r - 1], IS = is[r - 1];  // b: output stride 1
  std::vector<int> rest;                        // the other output dims, outermost first
  for (int i = 0; i < r - 1; ++i)
    if (i != q) rest.push_back(i);
  int64_t outer = 1;
  for (int i : rest) outer *= od[i];
  const size_t bytes = u.bytes();
  // Tiles of 64 (a) by 16 (b) units of up to 8 bytes, measured best for both
  // power-of-two strides (cache set conflicts) and others; fewer big units.
  const int64_t b1 = static_cast<int64_t>(std::max<size_t>(bytes, 1));
  const int64_t tile = std::clamp<int64_t>(512 / b1, 4, 64);
  const int64_t tile_b = std::clamp<int64_t>(128 / b1, 4, 16);
  const int64_t a_tiles = (A + tile - 1) / tile;
  const int64_t cost = std::min(A, tile) * B * static_cast<int64_t>(1 + bytes / 4);
  PoolFor(pool, outer * a_tiles, cost, [&](int64_t t0, int64_t t1) {
    int64_t cur_o = -1, base_o = 0, base_i = 0;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / a_tiles;
      if (o != cur_o) {  // offsets of outer index o in the output and the input
        cur_o = o;
        base_o = base_i = 0;
        int64_t rem = o;
        for (int k = static_cast<int>(rest.size()) - 1; k >= 0; --k) {
          const int i = rest[k];
          const int64_t idx = rem % od[i];
          rem /= od[i];
          base_o += idx * os[i];
          base_i += idx * is[i];
        }
      }
      const int64_t a0 = (t % a_tiles) * tile;
      const int64_t a1 = std::min(A, a0 + tile);
      for (int64_t b0 = 0; b0 < B; b0 += tile_b) {
        const int64_t n = std::min(B, b0 + tile_b) - b0;
        for (int64_t a = a0; a < a1; ++a)
          u.Row(out + static_cast<size_t>(base_o + a * OS + b0) * bytes,
                in + static_cast<size_t>(base_i + a + b0 * IS) * bytes, n, IS);
      }
    }
  });
}

/// Drops size-1 dims and merges output dims that are adjacent input dims.
/// Afterwards no two consecutive entries of *p are consecutive integers.
void SimplifyPermutation(const TensorShape& shape, const std::vector<int>& perm, std::vector<int64_t>* dims,
                         std::vector<int>* p) {
  const int r = shape.dims();
  std::vector<int> new_index(r, -1);
  std::vector<int64_t> d1;
  for (int i = 0; i < r; ++i) {
    if (shape.dim_size(i) != 1) {
      new_index[i] = static_cast<int>(d1.size());
      d1.push_back(shape.dim_size(i));
    }
  }
  std::vector<int> p1;
  for (int i = 0; i < r; ++i)
    if (new_index[perm[i]] >= 0) p1.push_back(new_index[perm[i]]);
  // Runs of output dims reading consecutive input dims: (first input dim, count).
  std::vector<std::pair<int, int>> runs;
  for (int x : p1) {
    if (!runs.empty() && x == runs.back().first + runs.back().second) ++runs.back().second;
    else runs.push_back({x, 1});
  }
  // The runs partition the input dims; in input order they are the new dims.
  std::vector<int> order(runs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return runs[a].first < runs[b].first; });
  std::vector<int> rank_of(runs.size());
  dims->clear();
  for (size_t j = 0; j < order.size(); ++j) {
    rank_of[order[j]] = static_cast<int>(j);
    const auto& run = runs[order[j]];
    int64_t size = 1;
    for (int k = 0; k < run.second; ++k) size *= d1[run.first + k];
    dims->push_back(size);
  }
  p->assign(rank_of.begin(), rank_of.end());
}

/// TransposeTensor once `perm` is known to be a permutation and `out` to be
/// allocated with the permuted shape and `in`'s dtype.
Status TransposeChecked(const Tensor& in, const std::vector<int>& perm, Tensor* out, ComputePool* pool) {
  const DataType dt = BaseType(in.dtype());
  const bool is_string = dt == DT_STRING;
  if (!is_string && !DataTypeIsPod(dt))
    return errors::Unimplemented("Transpose of ", DataTypeString(dt), " tensors is not supported");
  const int64_t n = in.NumElements();
  if (n == 0) return Status::OK();
  if (in.raw_data() == nullptr || out->raw_data() == nullptr)
    return errors::InvalidArgument("TransposeTensor: uninitialized tensor of shape ", in.shape().DebugString());

  std::vector<int64_t> dims;
  std::vector<int> p;
  SimplifyPermutation(in.shape(), perm, &dims, &p);
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  if (dims.size() <= 1) {  // the layout does not change: one copy
    if (dst == src) return Status::OK();
    if (is_string) {
      const auto* s = in.data<std::string>();
      auto* d = out->data<std::string>();
      PoolFor(pool, n, 16, [&](int64_t b, int64_t e) { std::copy(s + b, s + e, d + b); });
    } else {
      const size_t esize = DataTypeSize(dt);
      PoolFor(pool, n, std::max<int64_t>(1, static_cast<int64_t>(esize / 4)), [&](int64_t b, int64_t e) {
        std::memcpy(dst + b * esize, src + b * esize, static_cast<size_t>(e - b) * esize);
      });
    }
    return Status::OK();
  }
  if (in.SharesBufferWith(*out))
    return errors::InvalidArgument("TransposeTensor: the output of shape ", out->shape().DebugString(),
                                   " shares the input's buffer");

  // An innermost dimension that stays innermost moves as a whole.
  int64_t block = 1;
  if (p.back() == static_cast<int>(dims.size()) - 1) {
    block = dims.back();
    dims.pop_back();
    p.pop_back();
  }
  if (is_string) {
    TransposeTiled(StringUnit{block}, src, dst, dims, p, pool);
    return Status::OK();
  }
  const size_t unit = DataTypeSize(dt) * static_cast<size_t>(block);
  switch (unit) {
    case 1: TransposeTiled(FixedUnit<1>{}, src, dst, dims, p, pool); break;
    case 2: TransposeTiled(FixedUnit<2>{}, src, dst, dims, p, pool); break;
    case 4: TransposeTiled(FixedUnit<4>{}, src, dst, dims, p, pool); break;
    case 8: TransposeTiled(FixedUnit<8>{}, src, dst, dims, p, pool); break;
    case 16: TransposeTiled(FixedUnit<16>{}, src, dst, dims, p, pool); break;
    default: TransposeTiled(VarUnit{unit}, src, dst, dims, p, pool); break;
  }
  return Status::OK();
}

}  // namespace

Status TransposeTensor(const Tensor& in, const std::vector<int>& perm, Tensor* out) {
  return TransposeTensor(in, perm, out, nullptr);
}

Status TransposeTensor(const Tensor& in, const std::vector<int>& perm, Tensor* out, ComputePool* pool) {
  const int r = in.dims();
  AF_RETURN_IF_ERROR(CheckPermutation(perm, r));
  if (out == nullptr) return errors::Internal("TransposeTensor: no output tensor");
  if (BaseType(out->dtype()) != BaseType(in.dtype()))
    return errors::InvalidArgument("TransposeTensor: output dtype ", DataTypeString(out->dtype()),
                                   " differs from input dtype ", DataTypeString(in.dtype()));
  bool shape_ok = out->dims() == r;
  for (int i = 0; shape_ok && i < r; ++i) shape_ok = out->dim_size(i) == in.dim_size(perm[i]);
  if (!shape_ok)
    return errors::InvalidArgument("TransposeTensor: output shape ", out->shape().DebugString(), " is not input shape ",
                                   in.shape().DebugString(), " permuted by {", JoinList(perm), "}");
  return TransposeChecked(in, perm, out, pool);
}

namespace {

// ---------------------------------------------------------------------------
// The Transpose op.

Status TransposeShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& perm_shape = c->input(1);
  if (!perm_shape.unknown_rank() && perm_shape.dims() != 1)
    return c->Error("perm must be a vector, not ", perm_shape.DebugString());
  const int64_t perm_len = perm_shape.unknown_rank() ? -1 : perm_shape.dim_size(0);
  int rank = in.unknown_rank() ? -1 : in.dims();
  if (rank >= 0 && perm_len >= 0 && perm_len != rank)
    return c->Error("transpose expects a vector of size ", rank, ". But input(1) is a vector of size ", perm_len);
  if (rank < 0) AF_RETURN_IF_ERROR(RankFromDim(c, perm_len, "perm", &rank));
  const Tensor* t = c->input_tensor(1);
  if (t != nullptr && IsIndexDtype(t->dtype()) && t->dims() == 1) {
    if (rank < 0) AF_RETURN_IF_ERROR(RankFromDim(c, t->NumElements(), "perm", &rank));
    const std::vector<int64_t> v = TensorToInt64s(*t);
    Status s = CheckPermutation(v, rank);
    if (!s.ok()) return c->Error(s.message());
    std::vector<int64_t> dims(rank, -1);
    if (!in.unknown_rank())
      for (int i = 0; i < rank; ++i) dims[i] = in.dim_size(static_cast<int>(v[i]));
    c->set_output(0, PartialTensorShape(dims));
    return Status::OK();
  }
  if (rank >= 0) c->set_output(0, PartialTensorShape(std::vector<int64_t>(rank, -1)));
  else c->set_output(0, PartialTensorShape());
  return Status::OK();
}

AF_REGISTER_OP("Transpose")
    .Input("x: T")
    .Input("perm: Tperm")
    .Output("y: T")
    .Attr("T: type")
    .Attr("Tperm: {int32, int64} = DT_INT32")
    .SetShapeFn(TransposeShape)
    .Doc("Permutes the dimensions of x: y.shape[i] == x.shape[perm[i]].");

/// True when the permutation keeps the order of the dims larger than 1: the
/// bytes are then already in the output's layout.
bool NonSingletonDimensionsAlign(const TensorShape& shape, const std::vector<int>& perm) {
  int last = -1;
  for (int d : perm) {
    if (shape.dim_size(d) == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

class TransposeOp : public OpKernel {
 public:
  explicit TransposeOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& perm_t = ctx->input(1);
    AF_REQUIRES(ctx, perm_t.dims() == 1,
                errors::InvalidArgument("perm must be a vector, not ", perm_t.shape().DebugString()));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(perm_t, "perm"));
    const std::vector<int64_t> v = TensorToInt64s(perm_t);
    const int rank = input.dims();
    AF_REQUIRES_OK(ctx, CheckPermutation(v, rank));
    std::vector<int> perm(v.begin(), v.end());
    TensorShape shape;
    bool is_identity = true;
    for (int i = 0; i < rank; ++i) {
      shape.AddDim(input.dim_size(perm[i]));
      if (perm[i] != i) is_identity = false;
    }
    if (rank <= 1 || is_identity) {
      ctx->set_output(0, input);
      return;
    }
    if (NonSingletonDimensionsAlign(input.shape(), perm)) {
      ctx->set_output(0, input.Reshaped(shape));
      return;
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    AF_REQUIRES_OK(ctx, TransposeChecked(input, perm, out, ctx->device()->compute_pool()));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Transpose").Device(DEVICE_CPU), TransposeOp);

}  // namespace
}  // namespace actorflow
