// The epilogue of TensorFlow's fused ops on CPUs (_FusedMatMul,
// _FusedConv2D): the bias added to each row of a block of the product, then
// an activation, while the block the GEMM just wrote is still in cache, on
// the thread that wrote it.
//
// fused_ops is ["BiasAdd"] or ["BiasAdd", A] with A one of Relu, Relu6,
// LeakyRelu (slope: the leakyrelu_alpha attr) or Elu; the bias is args[0]
// (num_args 1). Each element gets BiasAdd's v + bias and then the
// activation's own expression (ops/nn/activation_ops.cpp and
// activation_variant_ops.cpp), so Relu, Relu6 and LeakyRelu give the
// separate nodes' bits; Elu's exp may differ from Elu's in the last bit (a
// row's tail is computed by the scalar exp, not the vectorised one).
// Other fusions (FusedBatchNorm, Add) are Unimplemented, naming the list.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

class OpKernelConstruction;

class FusedEpilogue {
 public:
  enum class Activation { kNone, kRelu, kRelu6, kLeakyRelu, kElu };

  /// Reads the fused op's fused_ops, num_args and leakyrelu_alpha.
  Status Read(const OpKernelConstruction& c);

  /// The bias, args[0]: a vector of the output's `channels` (the product's
  /// columns, the convolution's output depth). InvalidArgument otherwise.
  static Status CheckBias(const Tensor& bias, int64_t channels);

  /// c[r, c0:c1] = act(c[r, c0:c1] + bias[c0:c1]) for rows r0 <= r < r1 of
  /// the row-major matrix `c` with n columns.
  template <class T>
  void Apply(const T* bias, T* c, int64_t n, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    using A = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
    const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> b(bias + c0, c1 - c0);
    const T alpha = static_cast<T>(alpha_);
    for (int64_t r = r0; r < r1; ++r) {
      A row(c + r * n + c0, c1 - c0);
      switch (act_) {
        case Activation::kNone: row = row + b; break;
        case Activation::kRelu: row = (row + b).max(T(0)); break;
        case Activation::kRelu6: row = (row + b).max(T(0)).min(T(6)); break;
        case Activation::kLeakyRelu: row = (row + b > T(0)).select(row + b, (row + b) * alpha); break;
        case Activation::kElu: row = (row + b < T(0)).select((row + b).exp() - T(1), row + b); break;
      }
    }
  }

 private:
  Activation act_ = Activation::kNone;
  float alpha_ = 0.2f;
};

}  // namespace actorflow
