// Data for the data-parallel training tests (distributed_training_test,
// all_reduce_test): three well separated classes in 4 dimensions, and the
// rows of a batch that one worker takes.
#pragma once

#include <cstring>
#include <random>

#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace test {

/// n examples (fixed seed): x [n, 4] float, y [n] int32 in {0, 1, 2}.
inline void MakeData(int n, uint32_t seed, Tensor* x, Tensor* y) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> noise(0.f, 0.5f);
  *x = Tensor(DT_FLOAT, TensorShape{n, 4});
  *y = Tensor(DT_INT32, TensorShape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(gen() % 3);
    y->data<int32_t>()[i] = c;
    for (int j = 0; j < 4; ++j) x->data<float>()[i * 4 + j] = (j == c ? 2.f : 0.f) + noise(gen);
  }
}

/// Rows [from, from + n) of a matrix or a vector of 4-byte elements.
inline Tensor Rows(const Tensor& t, int64_t from, int64_t n) {
  const int64_t cols = t.dims() == 2 ? t.dim_size(1) : 1;
  Tensor out(t.dtype(), t.dims() == 2 ? TensorShape{n, cols} : TensorShape{n});
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + from * cols * 4, static_cast<size_t>(n * cols) * 4);
  return out;
}

}  // namespace test
}  // namespace actorflow
