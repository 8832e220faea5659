// Eigen views of tensors for kernels: TensorMap (unsupported/Eigen/CXX11) and
// array maps (Eigen/Core) over the tensor's buffer, row-major, never copying.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include "actorflow/core/tensor.hpp"

namespace actorflow {

template <class T, int N>
using EigenTensorMap = Eigen::TensorMap<Eigen::Tensor<T, N, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Aligned>;
template <class T, int N>
using ConstEigenTensorMap =
    Eigen::TensorMap<Eigen::Tensor<const T, N, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Aligned>;

template <class T>
using FlatArray = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstFlatArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Rank-N TensorMap with the tensor's own dimensions (dims() must equal N).
template <class T, int N>
EigenTensorMap<T, N> TensorView(Tensor& t) {
  Eigen::array<Eigen::DenseIndex, N> d;
  for (int i = 0; i < N; ++i) d[i] = t.dim_size(i);
  return EigenTensorMap<T, N>(t.data<T>(), d);
}
template <class T, int N>
ConstEigenTensorMap<T, N> TensorView(const Tensor& t) {
  Eigen::array<Eigen::DenseIndex, N> d;
  for (int i = 0; i < N; ++i) d[i] = t.dim_size(i);
  return ConstEigenTensorMap<T, N>(t.data<T>(), d);
}
/// All elements as a rank-1 TensorMap.
template <class T>
EigenTensorMap<T, 1> FlatView(Tensor& t) {
  return EigenTensorMap<T, 1>(t.data<T>(), t.NumElements());
}
template <class T>
ConstEigenTensorMap<T, 1> FlatView(const Tensor& t) {
  return ConstEigenTensorMap<T, 1>(t.data<T>(), t.NumElements());
}
/// All elements as an Eigen array (vectorized element-wise math).
template <class T>
FlatArray<T> FlatArrayView(Tensor& t) {
  return FlatArray<T>(t.data<T>(), t.NumElements());
}
template <class T>
ConstFlatArray<T> FlatArrayView(const Tensor& t) {
  return ConstFlatArray<T>(t.data<T>(), t.NumElements());
}
/// A tensor as a row-major [rows, cols] matrix map, cols = last dimension.
template <class T>
Eigen::Map<const RowMajorMatrix<T>> MatrixView(const Tensor& t, int64_t rows, int64_t cols) {
  return Eigen::Map<const RowMajorMatrix<T>>(t.data<T>(), rows, cols);
}
template <class T>
Eigen::Map<RowMajorMatrix<T>> MatrixView(Tensor& t, int64_t rows, int64_t cols) {
  return Eigen::Map<RowMajorMatrix<T>>(t.data<T>(), rows, cols);
}

}  // namespace actorflow
