#include "numpy_tensor.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/core/allocator.hpp"

namespace actorflow {
namespace python {

namespace {

std::atomic<bool> releasing{true};
std::atomic<int> in_flight{0};  // releases past their check of `releasing` (StopReleasing waits for them)
std::atomic<uint64_t> n_borrowed{0}, n_copied{0}, n_fetched_in_place{0}, n_fetched_copied{0};
constexpr const char* kCapsuleName = "actorflow.Tensor";

// The owner of a fed array's memory while a tensor borrows it: one per array,
// deleted with the tensor's last reference (on any thread: it takes the GIL).
class ArrayLender final : public Allocator {
 public:
  explicit ArrayLender(PyObject* array) : array_(array) { Py_INCREF(array_); }
  std::string Name() const override { return "numpy"; }
  void* AllocateRaw(size_t, size_t) override { return nullptr; }
  void DeallocateRaw(void*, size_t) override {
    in_flight.fetch_add(1);  // before the check: StopReleasing, which clears it first, waits for this
    if (releasing.load() && Py_IsInitialized()) {
      PyGILState_STATE g = PyGILState_Ensure();
      Py_DECREF(array_);
      PyGILState_Release(g);
    }  // else the interpreter is ending: the array goes with it
    in_flight.fetch_sub(1);
    delete this;
  }

 private:
  PyObject* array_;
};

void DeleteTensor(PyObject* capsule) {
  delete static_cast<Tensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
}

py::dtype NumpyOf(DataType t) {
  switch (t) {
    case DT_FLOAT: return py::dtype::of<float>();
    case DT_DOUBLE: return py::dtype::of<double>();
    case DT_INT32: return py::dtype::of<int32_t>();
    case DT_INT64: return py::dtype::of<int64_t>();
    case DT_UINT8: return py::dtype::of<uint8_t>();
    case DT_UINT16: return py::dtype::of<uint16_t>();
    case DT_UINT32: return py::dtype::of<uint32_t>();
    case DT_UINT64: return py::dtype::of<uint64_t>();
    case DT_INT16: return py::dtype::of<int16_t>();
    case DT_INT8: return py::dtype::of<int8_t>();
    case DT_BOOL: return py::dtype("bool");
    case DT_HALF: return py::dtype("float16");
    case DT_COMPLEX64: return py::dtype("complex64");
    case DT_COMPLEX128: return py::dtype("complex128");
    case DT_STRING: return py::dtype("O");
    default: throw py::value_error("no numpy dtype for " + DataTypeString(t));
  }
}

}  // namespace

py::dtype NumpyDType(DataType t) { return NumpyOf(BaseType(t)); }

DataType FromNumpyDType(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  switch (kind) {
    case 'f': return size == 4 ? DT_FLOAT : size == 8 ? DT_DOUBLE : size == 2 ? DT_HALF : DT_INVALID;
    case 'i': return size == 4 ? DT_INT32 : size == 8 ? DT_INT64 : size == 2 ? DT_INT16 : size == 1 ? DT_INT8 : DT_INVALID;
    case 'u':
      return size == 1 ? DT_UINT8 : size == 2 ? DT_UINT16 : size == 4 ? DT_UINT32 : size == 8 ? DT_UINT64 : DT_INVALID;
    case 'b': return DT_BOOL;
    case 'c': return size == 8 ? DT_COMPLEX64 : size == 16 ? DT_COMPLEX128 : DT_INVALID;
    case 'O': case 'S': case 'U': return DT_STRING;
    default: return DT_INVALID;
  }
}

py::object TensorToNumpy(const Tensor& t) {
  const DataType dtype = BaseType(t.dtype());
  if (t.dims() == 0 && t.IsInitialized()) {  // a scalar: numpy's scalar (bytes for a string), as TensorFlow's
    if (dtype == DT_STRING) return py::bytes(t.scalar<std::string>());
    py::array one(NumpyOf(dtype), std::vector<py::ssize_t>{}, std::vector<py::ssize_t>{}, t.raw_data());  // a copy
    n_fetched_copied.fetch_add(1, std::memory_order_relaxed);
    return one[py::tuple()];
  }
  std::vector<py::ssize_t> shape(t.dims());
  for (int i = 0; i < t.dims(); ++i) shape[i] = t.dim_size(i);
  if (dtype == DT_STRING) {
    py::array out(py::dtype("O"), shape);
    auto** objs = static_cast<PyObject**>(out.mutable_data());
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      PyObject* b = PyBytes_FromStringAndSize(s[i].data(), static_cast<Py_ssize_t>(s[i].size()));
      if (!b) throw py::error_already_set();
      Py_XDECREF(objs[i]);
      objs[i] = b;
    }
    return std::move(out);
  }
  const py::dtype dt = NumpyOf(dtype);
  if (!t.InHostMemory()) throw py::value_error("a fetched tensor in device memory (copy it to the host first)");
  // Shared (a variable's value), or a fed array's memory (TensorFlow copies it too: the caller may refill
  // or free its array, or it may be read-only): a copy, so writing it changes nothing elsewhere.
  const bool lent = dynamic_cast<const ArrayLender*>(t.buffer() ? t.buffer()->allocator() : nullptr) != nullptr;
  if (t.NumElements() == 0 || !t.RefCountIsOne() || lent) {
    py::array out(dt, shape);
    if (t.TotalBytes() > 0) std::memcpy(out.mutable_data(), t.raw_data(), t.TotalBytes());
    n_fetched_copied.fetch_add(1, std::memory_order_relaxed);
    return std::move(out);
  }
  auto* held = new Tensor(t);
  py::capsule base(held, kCapsuleName, &DeleteTensor);
  n_fetched_in_place.fetch_add(1, std::memory_order_relaxed);
  return py::array(dt, shape, {}, held->raw_data(), base);
}

namespace {

Status StringTensor(const py::array& arr, Tensor* out) {
  TensorShape shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.AddDim(arr.shape(i));
  Tensor t;
  AF_RETURN_IF_ERROR(Tensor::Create(nullptr, DT_STRING, shape, &t));
  std::string* s = t.data<std::string>();
  py::object flat = arr.attr("ravel")();
  int64_t i = 0;
  int64_t heap = 0;
  for (const py::handle& item : flat) {
    if (PyBytes_Check(item.ptr())) {
      char* data = nullptr;
      Py_ssize_t len = 0;
      PyBytes_AsStringAndSize(item.ptr(), &data, &len);
      s[i].assign(data, static_cast<size_t>(len));
    } else if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t len = 0;
      const char* data = PyUnicode_AsUTF8AndSize(item.ptr(), &len);
      if (!data) throw py::error_already_set();
      s[i].assign(data, static_cast<size_t>(len));
    } else {
      return errors::InvalidArgument("a string tensor's element ", i, " is a ",
                                     py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>(),
                                     ", not bytes or str");
    }
    heap += static_cast<int64_t>(s[i].capacity() > 15 ? s[i].capacity() : 0);
    ++i;
  }
  AF_RETURN_IF_ERROR(t.ChargeStringBytes(heap));
  *out = std::move(t);
  return Status::OK();
}

}  // namespace

Status NumpyToTensor(const py::handle& value, DataType want, Tensor* out) {
  want = BaseType(want);
  // An array a fetch returned: the tensor it came from.
  if (py::isinstance<py::array>(value)) {
    py::array a = py::reinterpret_borrow<py::array>(value);
    PyObject* base = py::detail::array_proxy(a.ptr())->base;
    if (base && PyCapsule_CheckExact(base) && std::strcmp(PyCapsule_GetName(base), kCapsuleName) == 0) {
      const Tensor* t = static_cast<const Tensor*>(PyCapsule_GetPointer(base, kCapsuleName));
      if (t->raw_data() == a.data() && (want == DT_INVALID || want == t->dtype()) &&
          (a.flags() & py::array::c_style) && a.ndim() == t->dims()) {
        bool same = true;
        for (int i = 0; i < t->dims(); ++i) same = same && a.shape(i) == t->dim_size(i);
        if (same) {
          *out = *t;
          n_borrowed.fetch_add(1, std::memory_order_relaxed);
          return Status::OK();
        }
      }
    }
  }
  py::array arr;
  if (want == DT_STRING) {
    arr = py::array(py::module_::import("numpy").attr("asarray")(value, py::dtype("O")));
    return StringTensor(arr, out);
  }
  if (want != DT_INVALID) {
    py::dtype dt = NumpyOf(want);
    py::object a = py::reinterpret_borrow<py::object>(value);
    if (!py::isinstance<py::array>(a) || !py::reinterpret_borrow<py::array>(a).dtype().is(dt)) {
      py::array given = py::array(py::module_::import("numpy").attr("asarray")(value));
      const DataType got = FromNumpyDType(given.dtype());
      if (got == DT_STRING && want != DT_STRING)
        return errors::InvalidArgument("cannot feed strings to a ", DataTypeString(want), " tensor");
      // TensorFlow converts with np.asarray(value, dtype): Python ints to
      // floats, float64 to float32; a float to an integer is refused.
      const char from = given.dtype().kind(), to = dt.kind();
      if ((from == 'f' && (to == 'i' || to == 'u' || to == 'b')) || (from == 'c' && to != 'c'))
        return errors::InvalidArgument("cannot feed a value of dtype ", py::str(given.dtype()).cast<std::string>(),
                                       " to a ", DataTypeString(want), " tensor");
      arr = py::array(given.attr("astype")(dt));
      n_copied.fetch_add(1, std::memory_order_relaxed);
    } else {
      arr = py::reinterpret_borrow<py::array>(a);
    }
  } else {
    arr = py::array(py::module_::import("numpy").attr("asarray")(value));
  }
  const DataType dtype = FromNumpyDType(arr.dtype());
  if (dtype == DT_INVALID)
    return errors::InvalidArgument("no tensor dtype for numpy dtype ", py::str(arr.dtype()).cast<std::string>());
  if (dtype == DT_STRING) return StringTensor(arr, out);
  TensorShape shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.AddDim(arr.shape(i));
  const bool contiguous = (arr.flags() & py::array::c_style) != 0;
  const bool aligned = reinterpret_cast<uintptr_t>(arr.data()) % 16 == 0;  // Tensor::Borrow's (Eigen's) alignment
  if (contiguous && aligned && shape.num_elements() > 0) {
    auto* lender = new ArrayLender(arr.ptr());
    Status s = Tensor::Borrow(dtype, shape, const_cast<void*>(arr.data()), lender, out);
    if (s.ok()) {
      n_borrowed.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    lender->DeallocateRaw(nullptr, 0);  // not kept: give the reference back (holding the GIL)
  }
  Tensor t;
  AF_RETURN_IF_ERROR(Tensor::Create(nullptr, dtype, shape, &t));
  if (t.TotalBytes() > 0) {
    py::array dense = py::module_::import("numpy").attr("ascontiguousarray")(arr);
    std::memcpy(t.raw_data(), dense.data(), t.TotalBytes());
  }
  n_copied.fetch_add(1, std::memory_order_relaxed);
  *out = std::move(t);
  return Status::OK();
}

FeedCounts GetFeedCounts() {
  return FeedCounts{n_borrowed.load(), n_copied.load(), n_fetched_in_place.load(), n_fetched_copied.load()};
}

void StopReleasing() {
  releasing.store(false);
  // Releases already past the check finish before the interpreter ends (they need the GIL: let it go).
  py::gil_scoped_release nogil;
  for (int i = 0; i < 5000 && in_flight.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace python
}  // namespace actorflow
