// Tensor: a typed, shaped view of a ref-counted buffer.
//
// Copying a Tensor copies its dtype and shape and adds a reference to the same
// buffer: in one process, tensors are shared between nodes and actors, never
// copied. A kernel may write into a buffer only while it holds the only
// reference (RefCountIsOne), which is how outputs reuse dead inputs' memory.
//
// Element access: data<T>(), flat<T>() as a span, scalar<T>(); Eigen TensorMap
// views live in core/tensor_eigen.hpp so that only kernels pay for Eigen.
// A buffer from an allocator that is not HostAccessible (a GPU's) holds device
// memory: host code must not dereference its data (InHostMemory() says).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor_shape.hpp"

namespace actorflow {

class Allocator;

/// Ref-counted bytes holding `num_elements` values of one dtype.
class TensorBuffer {
 public:
  /// Allocates storage for n elements of `dtype` (strings are constructed
  /// empty, POD bytes are left uninitialized). Returns nullptr when out of memory.
  static TensorBuffer* Allocate(Allocator* a, DataType dtype, int64_t num_elements);
  /// A buffer over `bytes` at `data` that `owner` holds (Tensor::Borrow).
  static TensorBuffer* Borrow(Allocator* owner, DataType dtype, int64_t num_elements, void* data, size_t bytes);

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) Destroy();
  }
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }

  /// Counts `bytes` that the elements hold on the heap (the characters of
  /// long strings) against the allocator's budget (Allocator::Charge) until
  /// the buffer is freed. False, and nothing counted, when they do not fit.
  bool ChargeHeap(size_t bytes);
  /// What ChargeHeap counted so far.
  size_t heap_bytes() const { return heap_bytes_.load(std::memory_order_relaxed); }

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  int64_t num_elements() const { return num_elements_; }
  DataType dtype() const { return dtype_; }
  Allocator* allocator() const { return allocator_; }

 private:
  TensorBuffer() = default;
  void Destroy();
  std::atomic<int32_t> refs_{1};
  bool header_in_block_ = false;
  DataType dtype_ = DT_INVALID;
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int64_t num_elements_ = 0;
  std::atomic<size_t> heap_bytes_{0};  // charged by ChargeHeap, given back by Destroy
};

class Tensor {
 public:
  /// An uninitialized tensor (no buffer); DT_INVALID.
  Tensor() = default;
  /// A tensor with host memory for `shape`; POD contents are uninitialized.
  Tensor(DataType dtype, const TensorShape& shape);
  Tensor(Allocator* a, DataType dtype, const TensorShape& shape);
  ~Tensor() {
    if (buf_) buf_->Unref();
  }
  Tensor(const Tensor& o) : dtype_(o.dtype_), shape_(o.shape_), buf_(o.buf_) {
    if (buf_) buf_->Ref();
  }
  Tensor(Tensor&& o) noexcept : dtype_(o.dtype_), shape_(o.shape_), buf_(o.buf_) { o.buf_ = nullptr; }
  // Inline: the executor moves tensors between slots with every node it runs.
  Tensor& operator=(const Tensor& o) {
    if (o.buf_) o.buf_->Ref();
    if (buf_) buf_->Unref();
    dtype_ = o.dtype_;
    shape_ = o.shape_;
    buf_ = o.buf_;
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    if (this != &o) {
      if (buf_) buf_->Unref();
      dtype_ = o.dtype_;
      shape_ = o.shape_;
      buf_ = o.buf_;
      o.buf_ = nullptr;
    }
    return *this;
  }

  /// Like the allocating constructor, but ResourceExhausted instead of
  /// std::bad_alloc (for sizes that come from input). `a` null: host memory.
  static Status Create(Allocator* a, DataType dtype, const TensorShape& shape, Tensor* out);
  /// A tensor over memory it does not own (a Python client's numpy array,
  /// used in place): `data`, aligned to 16 bytes (what the kernels' Eigen
  /// maps assume, Eigen::Aligned; malloc's alignment, so numpy's arrays
  /// qualify), holds the shape's elements of a POD dtype. When the last reference goes, the buffer calls
  /// owner->DeallocateRaw(data, bytes), which gives the memory back and may
  /// delete the owner. No kernel writes into it in place (the owner is not
  /// its device's allocator). InvalidArgument, and `owner` not kept, when the
  /// dtype is not POD or `data` is not aligned.
  static Status Borrow(DataType dtype, const TensorShape& shape, void* data, Allocator* owner, Tensor* out);

  /// Scalars of any supported element type: Tensor::Scalar<float>(1.f).
  template <class T>
  static Tensor Scalar(T v) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape{});
    *t.data<T>() = std::move(v);
    return t;
  }

  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  /// Bytes of element data (0 for string tensors, whose bytes live elsewhere).
  size_t TotalBytes() const { return static_cast<size_t>(NumElements()) * DataTypeSize(dtype_); }
  /// True once the tensor has a buffer (or is an empty tensor of some dtype).
  bool IsInitialized() const { return buf_ != nullptr || (dtype_ != DT_INVALID && NumElements() == 0); }

  template <class T>
  T* data() const {
    return buf_ ? static_cast<T*>(buf_->data()) : nullptr;
  }
  const void* raw_data() const { return buf_ ? buf_->data() : nullptr; }
  void* raw_data() { return buf_ ? buf_->data() : nullptr; }
  template <class T>
  T& scalar() const {
    return *data<T>();
  }

  /// Reinterprets with a new shape of the same number of elements, sharing the
  /// buffer. False (and unchanged) when the element counts differ.
  bool CopyFrom(const Tensor& other, const TensorShape& shape);
  /// A tensor sharing this buffer under another shape with the same element count.
  Tensor Reshaped(const TensorShape& shape) const;
  /// A new buffer holding a copy of the elements.
  Tensor DeepCopy() const;

  /// False when the buffer is device memory that the host cannot touch.
  bool InHostMemory() const;
  bool SharesBufferWith(const Tensor& o) const { return buf_ != nullptr && buf_ == o.buf_; }
  /// True when this tensor holds the only reference to its buffer.
  bool RefCountIsOne() const { return buf_ != nullptr && buf_->RefCountIsOne(); }
  const TensorBuffer* buffer() const { return buf_; }

  /// For a string tensor whose elements are about to take `bytes` more on
  /// the heap (strings longer than std::string's inline buffer): counts them
  /// against its allocator's budget while the buffer lives (a kernel filling
  /// a large string tensor calls it first). ResourceExhausted, nothing
  /// counted, when they do not fit, naming the bytes, the shape and the budget.
  Status ChargeStringBytes(int64_t bytes);

  /// Up to `max_entries` values, e.g. "1 2 3...".
  std::string SummarizeValue(int64_t max_entries = 10) const;
  /// "Tensor<type: float shape: [2] values: 1 2>"
  std::string DebugString(int64_t max_entries = 10) const;

 private:
  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  TensorBuffer* buf_ = nullptr;
};

/// Element-wise equality (dtype, shape and values), for tests and tools.
bool TensorEquals(const Tensor& a, const Tensor& b);

/// The heap bytes `s` holds beyond the std::string object itself:
/// capacity() + 1 when its characters do not fit the inline buffer, else 0.
size_t StringHeapBytes(const std::string& s);
/// The sum of StringHeapBytes over a host string tensor's elements (0 for
/// any other tensor): what its characters hold beyond the buffer.
int64_t StringHeapBytes(const Tensor& t);

}  // namespace actorflow
