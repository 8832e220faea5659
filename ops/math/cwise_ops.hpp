// Element-wise kernels: one template per arity, one small functor per op.
//
// A functor names the dtypes it supports (kTypes), its output element type
// (Out<T>), and an Eigen array expression (Run). A functor that sets
// kWrapsIntegers (AF_WRAPPING_*_FUNCTOR: +, -, *, negation) runs on signed
// integers in their unsigned type, so overflow wraps in two's complement
// instead of being undefined (ops/math/integer_wrap.hpp); floating-point types
// run as they are. The kernels handle shapes:
// numpy broadcasting (BCast), scalar fast paths, reuse of a dying input's
// buffer for the output, and sharding of large tensors over the compute pool.
#pragma once

#include <optional>
#include <type_traits>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/math/bcast.hpp"
#include "actorflow/ops/math/integer_wrap.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

enum class TypeSet { kFloat, kReal, kBool, kAll };

template <class T>
using ArrayX = Eigen::Array<T, Eigen::Dynamic, 1>;

namespace detail {
// Cycles per element assumed when deciding to shard element-wise work.
constexpr int64_t kCwiseCost = 4;

inline Status Unsupported(const OpKernel& k, DataType dt) {
  return errors::Unimplemented("no ", k.type_string(), " kernel for ", DataTypeString(dt));
}

// Whether functor F computes in WrapT<T> (it sets kWrapsIntegers = true).
template <class F, class = void>
struct WrapsIntegers : std::false_type {};
template <class F>
struct WrapsIntegers<F, std::void_t<decltype(F::kWrapsIntegers)>> : std::bool_constant<F::kWrapsIntegers> {};
// The element type F's expression runs on for tensors of T.
template <class F, class T>
using ComputeType = std::conditional_t<WrapsIntegers<F>::value, WrapT<T>, T>;

template <class Fn>
void ParallelRows(OpKernelContext* ctx, int64_t n, Fn&& fn) {
  ctx->device()->compute_pool()->For(n, detail::kCwiseCost, std::forward<Fn>(fn));
}
}  // namespace detail

/// out[i] = F(a[i], b[i]) for i < n (ApplyBinary), or F(a[i], b)
/// (ApplyBinaryScalar), computed exactly as F's kernel computes it: signed
/// integers wrap where F says so. `out` may be `a` or `b`. For code that needs
/// an op's arithmetic outside its kernel (CollectiveReduce's merge and final
/// ops), so that there is one copy of it.
template <class F, class T, class O>
void ApplyBinary(const T* a, const T* b, O* out, int64_t n) {
  using E = detail::ComputeType<F, T>;
  using Out = typename F::template Out<E>;
  static_assert(sizeof(Out) == sizeof(O), "the output element type is F's");
  F::Run(Eigen::Map<ArrayX<Out>>(reinterpret_cast<Out*>(out), n),
         Eigen::Map<const ArrayX<E>>(reinterpret_cast<const E*>(a), n),
         Eigen::Map<const ArrayX<E>>(reinterpret_cast<const E*>(b), n));
}
template <class F, class T, class O>
void ApplyBinaryScalar(const T* a, T b, O* out, int64_t n) {
  using E = detail::ComputeType<F, T>;
  using Out = typename F::template Out<E>;
  static_assert(sizeof(Out) == sizeof(O), "the output element type is F's");
  F::Run(Eigen::Map<ArrayX<Out>>(reinterpret_cast<Out*>(out), n),
         Eigen::Map<const ArrayX<E>>(reinterpret_cast<const E*>(a), n),
         ArrayX<E>::Constant(n, static_cast<E>(b)));
}

template <class F>
class BinaryOp : public OpKernel {
 public:
  explicit BinaryOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    // Same shapes and scalar operands need no broadcast plan.
    Mode mode;
    const TensorShape* out_shape;
    std::optional<BCast> bc;
    if (a.shape() == b.shape()) {
      mode = Mode::kSame;
      out_shape = &a.shape();
    } else if (a.NumElements() == 1 && a.dims() <= b.dims()) {
      mode = Mode::kScalarA;
      out_shape = &b.shape();
    } else if (b.NumElements() == 1 && b.dims() <= a.dims()) {
      mode = Mode::kScalarB;
      out_shape = &a.shape();
    } else {
      bc.emplace(a.shape(), b.shape());
      AF_REQUIRES(ctx, bc->valid(), bc->IncompatibleError(a.shape(), b.shape()));
      mode = Mode::kBroadcast;
      out_shape = &bc->output_shape();
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0, 1}, 0, *out_shape, &out));
    const DataType dt = a.dtype();
    if constexpr (F::kTypes == TypeSet::kFloat) {
      AF_SWITCH_FLOAT(dt, ctx->SetStatus(detail::Unsupported(*this, dt)), Run<T>(ctx, a, b, mode, bc, out));
    } else if constexpr (F::kTypes == TypeSet::kReal) {
      AF_SWITCH_REAL(dt, ctx->SetStatus(detail::Unsupported(*this, dt)), Run<T>(ctx, a, b, mode, bc, out));
    } else {
      AF_REQUIRES(ctx, dt == DT_BOOL, detail::Unsupported(*this, dt));
      Run<bool>(ctx, a, b, mode, bc, out);
    }
  }

 private:
  enum class Mode { kSame, kScalarA, kScalarB, kBroadcast };

  template <class T>
  static void Run(OpKernelContext* ctx, const Tensor& a, const Tensor& b, Mode mode, const std::optional<BCast>& bc,
                  Tensor* out) {
    // E is T, or its unsigned type for wrapping integer arithmetic.
    using E = detail::ComputeType<F, T>;
    using Out = typename F::template Out<E>;
    const E* pa = reinterpret_cast<const E*>(a.data<T>());
    const E* pb = reinterpret_cast<const E*>(b.data<T>());
    Out* po = out->data<Out>();
    using In = Eigen::Map<const ArrayX<E>>;
    using OutMap = Eigen::Map<ArrayX<Out>>;
    const int64_t n = out->NumElements();
    if (n == 0) return;
    switch (mode) {
      case Mode::kSame:
        detail::ParallelRows(ctx, n, [&](int64_t s, int64_t e) { ApplyBinary<F>(pa + s, pb + s, po + s, e - s); });
        break;
      case Mode::kScalarA: {
        const E av = pa[0];
        detail::ParallelRows(ctx, n, [&](int64_t s, int64_t e) {
          F::Run(OutMap(po + s, e - s), ArrayX<E>::Constant(e - s, av), In(pb + s, e - s));
        });
        break;
      }
      case Mode::kScalarB: {
        const E bv = pb[0];
        detail::ParallelRows(ctx, n, [&](int64_t s, int64_t e) { ApplyBinaryScalar<F>(pa + s, bv, po + s, e - s); });
        break;
      }
      case Mode::kBroadcast: {
        const int64_t rows = BroadcastRows(*bc);
        ctx->device()->compute_pool()->For(rows, detail::kCwiseCost * (n / rows), [&](int64_t r0, int64_t r1) {
          ForEachBroadcastRow(*bc, r0, r1, [&](int64_t o, int64_t ao, int64_t as, int64_t bo, int64_t bs, int64_t len) {
            if (as != 0 && bs != 0) F::Run(OutMap(po + o, len), In(pa + ao, len), In(pb + bo, len));
            else if (as == 0) F::Run(OutMap(po + o, len), ArrayX<E>::Constant(len, pa[ao]), In(pb + bo, len));
            else F::Run(OutMap(po + o, len), In(pa + ao, len), ArrayX<E>::Constant(len, pb[bo]));
          });
        });
        break;
      }
    }
  }
};

template <class F>
class UnaryOp : public OpKernel {
 public:
  explicit UnaryOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    if constexpr (F::kTypes == TypeSet::kFloat) {
      AF_SWITCH_FLOAT(x.dtype(), ctx->SetStatus(detail::Unsupported(*this, x.dtype())), Run<T>(ctx, x, out));
    } else if constexpr (F::kTypes == TypeSet::kReal) {
      AF_SWITCH_REAL(x.dtype(), ctx->SetStatus(detail::Unsupported(*this, x.dtype())), Run<T>(ctx, x, out));
    } else {
      AF_REQUIRES(ctx, x.dtype() == DT_BOOL, detail::Unsupported(*this, x.dtype()));
      Run<bool>(ctx, x, out);
    }
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx, const Tensor& x, Tensor* out) {
    using E = detail::ComputeType<F, T>;  // T, or its unsigned type for wrapping integer arithmetic
    const E* px = reinterpret_cast<const E*>(x.data<T>());
    E* po = reinterpret_cast<E*>(out->data<T>());
    detail::ParallelRows(ctx, x.NumElements(), [&](int64_t s, int64_t e) {
      F::Run(Eigen::Map<ArrayX<E>>(po + s, e - s), Eigen::Map<const ArrayX<E>>(px + s, e - s));
    });
  }
};

/// Op definitions of element-wise ops, TensorFlow's argument names: a unary
/// op y = f(x) keeps its input's shape; a binary op z = f(x, y) broadcasts.
#define AF_UNARY_OP_DEF(NAME, TYPES, DOC) \
  AF_REGISTER_OP(NAME).Input("x: T").Output("y: T").Attr("T: " TYPES).SetShapeFn(shape_fns::Unchanged).Doc(DOC)
#define AF_BINARY_OP_DEF(NAME, TYPES) \
  AF_REGISTER_OP(NAME).Input("x: T").Input("y: T").Output("z: T").Attr("T: " TYPES).SetShapeFn(shape_fns::Broadcasting)

/// Dtype lists for kernel registrations.
inline std::vector<DataType> FloatTypes() { return {DT_FLOAT, DT_DOUBLE}; }
inline std::vector<DataType> RealTypes() { return {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}; }

}  // namespace actorflow

#define AF_BINARY_FUNCTOR(NAME, TYPES, OUT, EXPR)                   \
  struct NAME {                                                     \
    static constexpr TypeSet kTypes = TYPES;                        \
    template <class T>                                              \
    using Out = OUT;                                                \
    template <class O, class X, class Y>                            \
    static void Run(O&& o, const X& x, const Y& y) {                \
      o = EXPR;                                                     \
    }                                                               \
  }
// A binary functor whose operands are named A and B and whose expression
// may name T, the element type: (B < T(0)).select(...), T(0.5) * A.
#define AF_TYPED_BINARY_FUNCTOR(NAME, TYPES, A, B, EXPR)            \
  struct NAME {                                                     \
    static constexpr TypeSet kTypes = TYPES;                        \
    template <class T>                                              \
    using Out = T;                                                  \
    template <class O, class X, class Y>                            \
    static void Run(O&& o, const X& A, const Y& B) {                \
      using T = typename std::decay_t<X>::Scalar;                   \
      (void)sizeof(T);                                              \
      o = EXPR;                                                     \
    }                                                               \
  }
#define AF_UNARY_FUNCTOR(NAME, TYPES, EXPR)                         \
  struct NAME {                                                     \
    static constexpr TypeSet kTypes = TYPES;                        \
    template <class O, class X>                                     \
    static void Run(O&& o, const X& x) {                            \
      using T = typename std::decay_t<X>::Scalar;                   \
      (void)sizeof(T);                                              \
      o = EXPR;                                                     \
    }                                                               \
  }
// Ring arithmetic (+, -, *, negation, squaring) whose signed integer overflow
// wraps: the expression runs on the unsigned type of the same width.
#define AF_WRAPPING_BINARY_FUNCTOR(NAME, TYPES, EXPR)          \
  struct NAME {                                                \
    static constexpr TypeSet kTypes = TYPES;                   \
    static constexpr bool kWrapsIntegers = true;               \
    template <class T>                                         \
    using Out = T;                                             \
    template <class O, class X, class Y>                       \
    static void Run(O&& o, const X& x, const Y& y) {           \
      o = EXPR;                                                \
    }                                                          \
  }
#define AF_WRAPPING_UNARY_FUNCTOR(NAME, TYPES, EXPR)           \
  struct NAME {                                                \
    static constexpr TypeSet kTypes = TYPES;                   \
    static constexpr bool kWrapsIntegers = true;               \
    template <class O, class X>                                \
    static void Run(O&& o, const X& x) {                       \
      o = EXPR;                                                \
    }                                                          \
  }
