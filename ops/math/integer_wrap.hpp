// Defined integer arithmetic: two's-complement wrapping for integer kernels.
//
// C++ leaves signed overflow undefined (INT32_MAX + 1, -INT32_MIN, a product
// or a sum that does not fit). Integer kernels here define it the way the
// hardware does: the result wraps modulo 2^bits. They compute in the unsigned
// type of the same width, whose arithmetic wraps by definition, reading and
// writing the signed tensor's elements through it (the aliasing rules allow an
// object to be accessed through its unsigned counterpart; the bits of a sum,
// difference or product are the same either way). Floating-point, bool and
// unsigned types map to themselves, so their code paths are unchanged.
//
// Contract: WrapT<T> is the type to compute T's additions, subtractions,
// multiplications and negations in; AsWrapping(p) views a T buffer as WrapT<T>.
// Comparisons, min/max, division and shifts must stay in T (they differ for
// negative values): use the helpers below or T itself for those.
#pragma once

#include <cstdint>
#include <type_traits>

namespace actorflow {

namespace detail {
template <class T, class = void>
struct Wrapping {
  using type = T;
};
template <class T>
struct Wrapping<T, std::enable_if_t<std::is_integral_v<T> && std::is_signed_v<T>>> {
  using type = std::make_unsigned_t<T>;
};
}  // namespace detail

/// The type in which T's ring arithmetic (+, -, *, negation) wraps.
template <class T>
using WrapT = typename detail::Wrapping<T>::type;

/// A T buffer viewed as WrapT<T> (the same pointer for non-signed types).
template <class T>
WrapT<T>* AsWrapping(T* p) {
  return reinterpret_cast<WrapT<T>*>(p);
}
template <class T>
const WrapT<T>* AsWrapping(const T* p) {
  return reinterpret_cast<const WrapT<T>*>(p);
}

/// -x, wrapping: WrappingNeg(INT32_MIN) == INT32_MIN.
template <class T>
T WrappingNeg(T x) {
  using U = WrapT<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
}

/// |x|, wrapping: WrappingAbs(INT32_MIN) == INT32_MIN.
template <class T>
T WrappingAbs(T x) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return x < 0 ? WrappingNeg(x) : x;
  else return x < T(0) ? -x : x;
}

}  // namespace actorflow
