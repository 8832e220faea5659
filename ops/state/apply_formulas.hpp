// The optimizers' update of one element, with TensorFlow's formulas
// (tensorflow/core/kernels/training_ops.cc), for the kernels that update a
// variable element by element in place: the GPU's Apply* kernels
// (ops/state/variable_ops_gpu.cu). Host code compiles the same functions, so
// the tests check them against the container actor's vectorized updates
// (ops/state/variable_updates.cpp) on machines without a GPU too.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define AF_HOST_DEVICE __host__ __device__
#else
#define AF_HOST_DEVICE
#endif

namespace actorflow {
namespace apply {

AF_HOST_DEVICE inline float Sqrt(float x) { return sqrtf(x); }

/// var -= alpha * delta
AF_HOST_DEVICE inline void GradientDescent(float& var, float alpha, float delta) { var -= alpha * delta; }

/// accum = accum * momentum + grad; var -= lr * accum
/// (Nesterov: var -= grad * lr + accum * momentum * lr).
AF_HOST_DEVICE inline void Momentum(float& var, float& accum, float lr, float grad, float momentum, bool nesterov) {
  accum = accum * momentum + grad;
  var -= nesterov ? grad * lr + accum * momentum * lr : accum * lr;
}

/// Adam's step size: lr * sqrt(1 - beta2^t) / (1 - beta1^t).
AF_HOST_DEVICE inline float AdamAlpha(float lr, float beta1_power, float beta2_power) {
  return lr * Sqrt(1.f - beta2_power) / (1.f - beta1_power);
}

/// m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2);
/// var -= alpha * m / (sqrt(v) + epsilon) (Nesterov: m replaced by
/// grad * (1 - beta1) + m * beta1).
AF_HOST_DEVICE inline void Adam(float& var, float& m, float& v, float alpha, float beta1, float beta2, float epsilon,
                                float grad, bool nesterov) {
  m += (grad - m) * (1.f - beta1);
  v += (grad * grad - v) * (1.f - beta2);
  const float step = nesterov ? grad * (1.f - beta1) + m * beta1 : m;
  var -= (step * alpha) / (Sqrt(v) + epsilon);
}

/// accum += grad^2; var -= lr * grad / sqrt(accum).
AF_HOST_DEVICE inline void Adagrad(float& var, float& accum, float lr, float grad) {
  accum += grad * grad;
  var -= grad * lr / Sqrt(accum);
}

/// ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon); var -= mom.
AF_HOST_DEVICE inline void RMSProp(float& var, float& ms, float& mom, float lr, float rho, float momentum,
                                   float epsilon, float grad) {
  ms += (grad * grad - ms) * (1.f - rho);
  mom = mom * momentum + (grad * lr) / Sqrt(ms + epsilon);
  var -= mom;
}

}  // namespace apply
}  // namespace actorflow
