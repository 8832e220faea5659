// Sum, Mean, Prod, Max, Min over axes (keep_dims), and ArgMax, ArgMin.
//
// The input's dims are collapsed into alternating kept/reduced groups; the
// common layouts ([K,R], [R,K], [K,R,K]) reduce in place with Eigen, others are
// transposed to [K,R] first.
//
// Integer Sum, Mean and Prod wrap in two's complement (they accumulate in the
// unsigned type, ops/math/integer_wrap.hpp); an integer Mean is the wrapped sum
// divided by the count, truncated toward zero.
#include <limits>
#include <type_traits>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/transpose_op.hpp"
#include "actorflow/ops/math/integer_wrap.hpp"
#include "actorflow/ops/math/math_shapes.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_REDUCTION_OP_DEF(NAME, DOC)                 \
  AF_REGISTER_OP(NAME)                                 \
      .Input("input: T")                               \
      .Input("reduction_indices: Tidx")                \
      .Output("output: T")                             \
      .Attr("keep_dims: bool = false")                 \
      .Attr("T: {float, double, int32, int64}")        \
      .Attr("Tidx: {int32, int64} = DT_INT32")         \
      .SetShapeFn(shape_fns::Reduction)                \
      .Doc(DOC)

AF_REDUCTION_OP_DEF("Sum", "Sum over the given axes.");
AF_REDUCTION_OP_DEF("Mean", "Mean over the given axes.");
AF_REDUCTION_OP_DEF("Prod", "Product over the given axes.");
AF_REDUCTION_OP_DEF("Max", "Maximum over the given axes.");
AF_REDUCTION_OP_DEF("Min", "Minimum over the given axes.");

enum class Reducer { kSum, kMean, kProd, kMax, kMin };

template <class T>
T Identity(Reducer r) {
  switch (r) {
    case Reducer::kProd: return T(1);
    case Reducer::kMax: return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                                   : std::numeric_limits<T>::lowest();
    case Reducer::kMin: return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                                   : std::numeric_limits<T>::max();
    default: return T(0);
  }
}

// Reduces each row of a row-major [rows, cols] matrix (cols >= 1) into out.
template <class T, class M, class O>
void ReduceRows(Reducer r, const M& m, O&& out) {
  switch (r) {
    case Reducer::kSum: case Reducer::kMean: out = m.rowwise().sum(); break;
    case Reducer::kProd: out = m.rowwise().prod(); break;
    case Reducer::kMax: out = m.rowwise().maxCoeff(); break;
    case Reducer::kMin: out = m.rowwise().minCoeff(); break;
  }
}
template <class T, class M, class O>
void ReduceCols(Reducer r, const M& m, O&& out) {
  switch (r) {
    case Reducer::kSum: case Reducer::kMean: out = m.colwise().sum(); break;
    case Reducer::kProd: out = m.colwise().prod(); break;
    case Reducer::kMax: out = m.colwise().maxCoeff(); break;
    case Reducer::kMin: out = m.colwise().minCoeff(); break;
  }
}

template <Reducer R>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& axes = ctx->input(1);
    std::vector<bool> reduced;
    TensorShape out_shape;
    AF_REQUIRES_OK(ctx, ReductionDims(x, axes, keep_dims_, &reduced, &out_shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    AF_SWITCH_REAL(x.dtype(), ctx->SetStatus(errors::Unimplemented("reduction of ", DataTypeString(x.dtype()))),
                   Reduce<T>(ctx, x, reduced, out));
  }

 private:
  template <class T>
  void Reduce(OpKernelContext* ctx, const Tensor& x, const std::vector<bool>& reduced, Tensor* out) const {
    // Collapse dims into alternating groups; size-1 dims change nothing.
    std::vector<int64_t> groups;
    std::vector<bool> is_reduced;
    for (int i = 0; i < x.dims(); ++i) {
      if (x.dim_size(i) == 1) continue;
      if (!groups.empty() && is_reduced.back() == reduced[i]) {
        groups.back() *= x.dim_size(i);
      } else {
        groups.push_back(x.dim_size(i));
        is_reduced.push_back(reduced[i]);
      }
    }
    int64_t reduce_count = 1;
    for (int i = 0; i < x.dims(); ++i)
      if (reduced[i]) reduce_count *= x.dim_size(i);
    const int64_t n_out = out->NumElements();
    if (reduce_count == 0 || n_out == 0) {  // nothing to reduce: the identity (NaN for a mean)
      const T fill = R == Reducer::kMean && std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN()
                                                                                   : Identity<T>(R);
      std::fill(out->data<T>(), out->data<T>() + n_out, fill);
      return;
    }
    // Sums and products of signed integers accumulate in the unsigned type
    // (wrapping); max and min compare, so they stay signed. E is T for floats.
    using E = std::conditional_t<R == Reducer::kMax || R == Reducer::kMin, T, WrapT<T>>;
    E* po = reinterpret_cast<E*>(out->data<T>());
    const E* px = reinterpret_cast<const E*>(x.data<T>());
    using Mat = Eigen::Map<const RowMajorMatrix<E>>;
    using Vec = Eigen::Map<Eigen::Matrix<E, Eigen::Dynamic, 1>>;
    using RowVec = Eigen::Map<Eigen::Matrix<E, 1, Eigen::Dynamic>>;
    const size_t g = groups.size();
    ComputePool* pool = ctx->device()->compute_pool();
    bool done = true;
    if (g == 0 || (g == 1 && !is_reduced[0])) {
      std::copy(px, px + n_out, po);
    } else if (g == 1) {
      ReduceRows<E>(R, Mat(px, 1, groups[0]), Vec(po, 1));
    } else if (g == 2 && !is_reduced[0]) {  // [K, R]: shard the rows
      const int64_t r = groups[1];
      pool->For(groups[0], r, [&](int64_t k0, int64_t k1) {
        ReduceRows<E>(R, Mat(px + k0 * r, k1 - k0, r), Vec(po + k0, k1 - k0));
      });
    } else if (g == 2) {  // [R, K]: shard the columns
      const int64_t rows = groups[0], cols = groups[1];
      pool->For(cols, rows, [&](int64_t c0, int64_t c1) {
        ReduceCols<E>(R, Mat(px, rows, cols).middleCols(c0, c1 - c0), RowVec(po + c0, c1 - c0));
      });
    } else if (g == 3 && !is_reduced[0]) {  // [K, R, K2]: shard the outer K
      const int64_t rows = groups[1], cols = groups[2];
      pool->For(groups[0], rows * cols, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k)
          ReduceCols<E>(R, Mat(px + k * rows * cols, rows, cols), RowVec(po + k * cols, cols));
      });
    } else {
      done = false;
    }
    if (!done) {  // general layout: move reduced dims last, then reduce rows
      std::vector<int> perm;
      TensorShape tshape;
      for (int i = 0; i < x.dims(); ++i)
        if (!reduced[i]) perm.push_back(i);
      for (int i = 0; i < x.dims(); ++i)
        if (reduced[i]) perm.push_back(i);
      for (int p : perm) tshape.AddDim(x.dim_size(p));
      Tensor t;
      AF_REQUIRES_OK(ctx, ctx->allocate_temp(x.dtype(), tshape, &t));
      AF_REQUIRES_OK(ctx, TransposeTensor(x, perm, &t, pool));
      const E* pt = reinterpret_cast<const E*>(t.data<T>());
      pool->For(n_out, reduce_count, [&](int64_t k0, int64_t k1) {
        ReduceRows<E>(R, Mat(pt + k0 * reduce_count, k1 - k0, reduce_count), Vec(po + k0, k1 - k0));
      });
    }
    if constexpr (R == Reducer::kMean) {
      T* pm = out->data<T>();
      if constexpr (std::is_integral_v<T>) {  // the count may not fit T; the quotient does
        for (int64_t i = 0; i < n_out; ++i) pm[i] = static_cast<T>(static_cast<int64_t>(pm[i]) / reduce_count);
      } else {
        for (int64_t i = 0; i < n_out; ++i) pm[i] /= static_cast<T>(reduce_count);
      }
    }
  }

  bool keep_dims_ = false;
};

const std::vector<DataType> kReduceTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};
AF_REGISTER_KERNEL(KernelDefBuilder("Sum").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ReductionOp<Reducer::kSum>);
AF_REGISTER_KERNEL(KernelDefBuilder("Mean").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ReductionOp<Reducer::kMean>);
AF_REGISTER_KERNEL(KernelDefBuilder("Prod").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ReductionOp<Reducer::kProd>);
AF_REGISTER_KERNEL(KernelDefBuilder("Max").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ReductionOp<Reducer::kMax>);
AF_REGISTER_KERNEL(KernelDefBuilder("Min").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ReductionOp<Reducer::kMin>);

// ---------------------------------------------------------------------------

#define AF_ARG_OP_DEF(NAME, DOC)                         \
  AF_REGISTER_OP(NAME)                                   \
      .Input("input: T")                                 \
      .Input("dimension: Tidx")                          \
      .Output("output: output_type")                     \
      .Attr("T: {float, double, int32, int64}")          \
      .Attr("Tidx: {int32, int64} = DT_INT32")           \
      .Attr("output_type: {int32, int64} = DT_INT64")    \
      .SetShapeFn(shape_fns::Unknown)                    \
      .Doc(DOC)

AF_ARG_OP_DEF("ArgMax", "Index of the largest value along a dimension.");
AF_ARG_OP_DEF("ArgMin", "Index of the smallest value along a dimension.");

template <bool kMax>
class ArgOp : public OpKernel {
 public:
  explicit ArgOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    TensorShape out_shape;
    int64_t outer, len, inner;
    AF_REQUIRES_OK(ctx, ArgReductionDims(x, ctx->input(1), &out_shape, &outer, &len, &inner));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    AF_SWITCH_REAL(x.dtype(), ctx->SetStatus(errors::Unimplemented("no ", type_string(), " for ", DataTypeString(x.dtype()))),
                   Run<T>(x.data<T>(), outer, len, inner, out));
  }

 private:
  template <class T>
  static void Run(const T* px, int64_t outer, int64_t len, int64_t inner, Tensor* out) {
    if (out->dtype() == DT_INT64) Run<T, int64_t>(px, outer, len, inner, out->data<int64_t>());
    else Run<T, int32_t>(px, outer, len, inner, out->data<int32_t>());
  }
  // Best index per (o, i); the scan walks j outermost so memory is read in order.
  template <class T, class Index>
  static void Run(const T* px, int64_t outer, int64_t len, int64_t inner, Index* po) {
    std::vector<T> best(inner);
    for (int64_t o = 0; o < outer; ++o) {
      const T* base = px + o * len * inner;
      Index* idx = po + o * inner;
      std::copy(base, base + inner, best.begin());
      std::fill(idx, idx + inner, Index(0));
      for (int64_t j = 1; j < len; ++j) {
        const T* row = base + j * inner;
        for (int64_t i = 0; i < inner; ++i) {
          if (kMax ? row[i] > best[i] : row[i] < best[i]) {
            best[i] = row[i];
            idx[i] = static_cast<Index>(j);
          }
        }
      }
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ArgMax").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ArgOp<true>);
AF_REGISTER_KERNEL(KernelDefBuilder("ArgMin").Device(DEVICE_CPU).TypeConstraint("T", kReduceTypes), ArgOp<false>);

}  // namespace
}  // namespace actorflow
