// The functors of the arithmetic kernels (Add, Sub, Mul, RealDiv, Div,
// FloorDiv, FloorMod, Maximum, Minimum, Pow: ops/math/cwise_arithmetic_ops.cpp),
// in a header so that every computation of the same arithmetic is these ops'
// own: CollectiveReduce merges with them (ops/collective/collective_reduction.hpp),
// so an all-reduce of int32 wraps exactly as Add does.
//
// Contract: each functor is an Eigen expression for BinaryOp and ApplyBinary
// (ops/math/cwise_ops.hpp). Integer semantics are defined on every input: Add,
// Sub and Mul wrap in two's complement (they set kWrapsIntegers); Div, FloorDiv
// and FloorMod wrap lowest() / -1 to lowest() (remainder 0), and their kernels
// refuse a zero divisor before anything is divided.
#pragma once

#include <cmath>
#include <type_traits>

#include "actorflow/ops/math/cwise_ops.hpp"

namespace actorflow {
namespace cwise {

// Signed integers wrap in two's complement (INT32_MAX + 1 == INT32_MIN).
AF_WRAPPING_BINARY_FUNCTOR(AddF, TypeSet::kReal, x + y);
AF_WRAPPING_BINARY_FUNCTOR(SubF, TypeSet::kReal, x - y);
AF_WRAPPING_BINARY_FUNCTOR(MulF, TypeSet::kReal, x * y);
AF_BINARY_FUNCTOR(DivF, TypeSet::kFloat, T, x / y);
AF_BINARY_FUNCTOR(MaxF, TypeSet::kReal, T, x.max(y));
AF_BINARY_FUNCTOR(MinF, TypeSet::kReal, T, x.min(y));
AF_BINARY_FUNCTOR(PowF, TypeSet::kFloat, T, Eigen::pow(x, y));

// Integer division: the quotient truncated toward zero (C++) or rounded toward
// -inf (floor), and the floor remainder. A divisor of -1 is special-cased: the
// one quotient that overflows, lowest() / -1, wraps (two's complement: it is
// lowest() again) instead of trapping, and its remainder is 0. A zero divisor
// is refused before anything is divided (IntegerDivisionOp): InvalidArgument
// "Integer division by zero", which the step names with the node.
struct TruncDivScalar {
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) return x / y;
    else return y == T(-1) ? WrappingNeg(x) : x / y;
  }
};
struct FloorDivScalar {
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::floor(x / y);
    } else {
      if (y == T(-1)) return WrappingNeg(x);
      const T q = x / y;
      return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
    }
  }
};
struct FloorModScalar {
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) {
      const T r = std::fmod(x, y);
      return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
    } else {
      const T r = y == T(-1) ? T(0) : x % y;
      return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
    }
  }
};
AF_BINARY_FUNCTOR(IntDivF, TypeSet::kReal, T, x.binaryExpr(y, TruncDivScalar()));
AF_BINARY_FUNCTOR(FloorDivF, TypeSet::kReal, T, x.binaryExpr(y, FloorDivScalar()));
AF_BINARY_FUNCTOR(FloorModF, TypeSet::kReal, T, x.binaryExpr(y, FloorModScalar()));

}  // namespace cwise
}  // namespace actorflow
