#include "actorflow/core/tensor.hpp"

#include <cstring>
#include <memory>
#include <new>
#include <sstream>

#include "actorflow/core/allocator.hpp"
#include "actorflow/core/exception_status.hpp"

namespace actorflow {

namespace {
constexpr size_t kHeaderBytes = (sizeof(TensorBuffer) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}  // namespace

TensorBuffer* TensorBuffer::Allocate(Allocator* a, DataType dtype, int64_t n) {
  const bool is_string = DataTypeIsStringLike(dtype);
  const size_t elem = is_string ? sizeof(std::string) : DataTypeSize(dtype);
  // The allocator rounds up to the alignment: leave room for that too.
  if (n < 0 || (elem > 0 && static_cast<size_t>(n) > (SIZE_MAX - kHeaderBytes - kTensorAlignment) / elem)) return nullptr;
  const size_t bytes = static_cast<size_t>(n) * elem;
  TensorBuffer* b = nullptr;
  if (a->HostAccessible()) {
    // One block: header, then the aligned data.
    void* block = a->AllocateRaw(kTensorAlignment, kHeaderBytes + bytes);
    if (!block) return nullptr;
    b = new (block) TensorBuffer();
    b->header_in_block_ = true;
    b->data_ = static_cast<char*>(block) + kHeaderBytes;
  } else {
    void* data = a->AllocateRaw(kTensorAlignment, bytes);
    if (!data && bytes > 0) return nullptr;
    b = new TensorBuffer();
    b->data_ = data;
  }
  b->dtype_ = dtype;
  b->allocator_ = a;
  b->bytes_ = bytes;
  b->num_elements_ = n;
  if (is_string) {
    auto* s = static_cast<std::string*>(b->data_);
    for (int64_t i = 0; i < n; ++i) new (s + i) std::string();
  }
  return b;
}

TensorBuffer* TensorBuffer::Borrow(Allocator* owner, DataType dtype, int64_t n, void* data, size_t bytes) {
  auto* b = new TensorBuffer();
  b->dtype_ = dtype;
  b->allocator_ = owner;
  b->data_ = data;
  b->bytes_ = bytes;
  b->num_elements_ = n;
  return b;
}

bool TensorBuffer::ChargeHeap(size_t bytes) {
  if (bytes == 0) return true;
  if (!allocator_->Charge(bytes)) return false;
  heap_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

void TensorBuffer::Destroy() {
  if (DataTypeIsStringLike(dtype_)) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) s[i].~basic_string();
  }
  Allocator* a = allocator_;
  if (const size_t heap = heap_bytes()) a->Uncharge(heap);
  if (header_in_block_) {
    size_t total = kHeaderBytes + bytes_;
    this->~TensorBuffer();
    a->DeallocateRaw(this, total);
  } else {
    if (data_) a->DeallocateRaw(data_, bytes_);
    delete this;
  }
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) : Tensor(cpu_allocator(), dtype, shape) {}

namespace {
// "out of memory allocating 400000000 bytes for a float tensor of shape [100000000] (cpu: budget 64.0 MiB, 1.0 KiB
// in use)": what a refused allocation asked for and why it did not fit.
std::string AllocationFailure(Allocator* a, DataType dtype, const TensorShape& shape) {
  const int64_t n = shape.num_elements();
  const size_t elem = DataTypeIsStringLike(dtype) ? sizeof(std::string) : DataTypeSize(dtype);
  std::string bytes = n >= 0 && (elem == 0 || static_cast<uint64_t>(n) <= UINT64_MAX / elem)
                          ? std::to_string(static_cast<uint64_t>(n) * elem)
                          : "more than 2^64";
  std::string msg = "out of memory allocating " + bytes + " bytes for a " + DataTypeString(dtype) +
                    " tensor of shape " + shape.DebugString() + " (" + a->Name();
  if (a->limit() != INT64_MAX) msg += ": budget " + HumanBytes(a->limit());
  msg += ", " + HumanBytes(a->bytes_in_use()) + " in use)";
  return msg;
}
}  // namespace

Tensor::Tensor(Allocator* a, DataType dtype, const TensorShape& shape) : dtype_(dtype), shape_(shape) {
  buf_ = TensorBuffer::Allocate(a, dtype, shape.num_elements());
  if (!buf_) {
    std::shared_ptr<const std::string> message;
    try {
      message = std::make_shared<const std::string>(AllocationFailure(a, dtype, shape));
    } catch (...) {  // no memory for the message either: a plain bad_alloc
    }
    throw TensorAllocationError(std::move(message));
  }
}

Status Tensor::Create(Allocator* a, DataType dtype, const TensorShape& shape, Tensor* out) {
  if (!a) a = cpu_allocator();
  TensorBuffer* buf = TensorBuffer::Allocate(a, dtype, shape.num_elements());
  if (!buf) return errors::ResourceExhausted(AllocationFailure(a, dtype, shape));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.buf_ = buf;
  *out = std::move(t);
  return Status::OK();
}

Status Tensor::Borrow(DataType dtype, const TensorShape& shape, void* data, Allocator* owner, Tensor* out) {
  if (!DataTypeIsPod(dtype))
    return errors::InvalidArgument("a ", DataTypeString(dtype), " tensor cannot use memory it does not own");
  constexpr uintptr_t kBorrowAlignment = 16;  // Eigen::Aligned (= Aligned16), what kernels' maps assume
  if (reinterpret_cast<uintptr_t>(data) % kBorrowAlignment != 0)
    return errors::InvalidArgument("memory at ", data, " is not aligned to ", kBorrowAlignment, " bytes");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.buf_ = TensorBuffer::Borrow(owner, dtype, shape.num_elements(), data, static_cast<size_t>(shape.num_elements()) *
                                                                              DataTypeSize(dtype));
  *out = std::move(t);
  return Status::OK();
}

Status Tensor::ChargeStringBytes(int64_t bytes) {
  if (bytes <= 0 || !buf_) return Status::OK();
  if (buf_->ChargeHeap(static_cast<size_t>(bytes))) return Status::OK();
  Allocator* a = buf_->allocator();
  std::string msg = "out of memory for " + std::to_string(bytes) + " bytes of string data in a " +
                    DataTypeString(dtype_) + " tensor of shape " + shape_.DebugString() + " (" + a->Name();
  if (a->limit() != INT64_MAX) msg += ": budget " + HumanBytes(a->limit());
  msg += ", " + HumanBytes(a->bytes_in_use()) + " in use)";
  return errors::ResourceExhausted(msg);
}

size_t StringHeapBytes(const std::string& s) {
  static const size_t kInline = std::string().capacity();
  return s.capacity() > kInline ? s.capacity() + 1 : 0;
}

int64_t StringHeapBytes(const Tensor& t) {
  if (!DataTypeIsStringLike(t.dtype()) || t.buffer() == nullptr || !t.InHostMemory()) return 0;
  const std::string* s = t.data<std::string>();
  int64_t bytes = 0;
  for (int64_t i = 0, n = t.NumElements(); i < n; ++i) bytes += static_cast<int64_t>(StringHeapBytes(s[i]));
  return bytes;
}

bool Tensor::InHostMemory() const { return !buf_ || buf_->allocator()->HostAccessible(); }

bool Tensor::CopyFrom(const Tensor& other, const TensorShape& shape) {
  if (other.NumElements() != shape.num_elements()) return false;
  Tensor t = other;
  *this = std::move(t);
  shape_ = shape;
  return true;
}

Tensor Tensor::Reshaped(const TensorShape& shape) const {
  Tensor t;
  t.CopyFrom(*this, shape);
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!buf_) return *this;
  Tensor t(buf_->allocator(), dtype_, shape_);
  if (DataTypeIsStringLike(dtype_)) {
    const std::string* from = data<std::string>();
    const Status charged = t.ChargeStringBytes(StringHeapBytes(*this));
    if (!charged.ok()) throw TensorAllocationError(std::make_shared<const std::string>(charged.message()));
    for (int64_t i = 0; i < NumElements(); ++i) t.data<std::string>()[i] = from[i];
  } else if (TotalBytes() > 0) {
    std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

namespace {
template <class T>
void PrintValue(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, bool>) os << (v ? "true" : "false");
  else if constexpr (sizeof(T) == 1 && std::is_integral_v<T>) os << static_cast<int>(v);
  else os << v;
}
}  // namespace

std::string Tensor::SummarizeValue(int64_t max_entries) const {
  std::ostringstream os;
  const int64_t n = NumElements();
  if (!buf_ && n > 0) return "<uninitialized>";
  if (!InHostMemory()) return "<in device memory>";
  const int64_t shown = std::min(n, max_entries);
  AF_SWITCH_ALL(
      BaseType(dtype_), return "<unprintable dtype>", for (int64_t i = 0; i < shown; ++i) {
        if (i) os << " ";
        if constexpr (std::is_same_v<T, std::string>) os << '"' << data<T>()[i] << '"';
        else PrintValue(os, data<T>()[i]);
      });
  if (shown < n) os << "...";
  return os.str();
}

std::string Tensor::DebugString(int64_t max_entries) const {
  return "Tensor<type: " + DataTypeString(dtype_) + " shape: " + shape_.DebugString() +
         " values: " + SummarizeValue(max_entries) + ">";
}

bool TensorEquals(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const int64_t n = a.NumElements();
  bool eq = true;
  AF_SWITCH_ALL(
      BaseType(a.dtype()), return false, for (int64_t i = 0; i < n && eq; ++i) {
        eq = a.data<T>()[i] == b.data<T>()[i];
      });
  return eq;
}

}  // namespace actorflow
