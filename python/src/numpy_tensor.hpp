// Tensors and numpy arrays, without copies where the dtype allows — what
// TensorFlow's ndarray_tensor does (tensorflow/python/lib/core/ndarray_tensor.h).
//
// To numpy: a numeric tensor whose buffer no one else holds becomes an array
// over that buffer, kept alive by the array (a capsule holds the tensor); one
// whose buffer is shared (a variable's value, a queued element) or is a fed
// array's memory (a fetch of a feed, passed through) is copied, so writing a
// fetched array changes nothing else, and refilling a fed one no fetch. A string
// tensor becomes an object array of bytes. A scalar comes back as numpy's
// scalar (bytes for a string), as TensorFlow's does.
//
// From numpy: a C-contiguous array of a numeric dtype aligned to 16 bytes
// (malloc's alignment, so numpy's arrays are) is used in place (the tensor
// borrows its buffer and holds a reference to the array until its last
// reference goes, from whichever thread); an array a fetch returned gives back the tensor it came from; any
// other array is copied once. Strings and Python objects become string tensors.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace python {

namespace py = pybind11;

/// The numpy dtype of `t` (ValueError for one numpy has not: resource, variant, bfloat16).
py::dtype NumpyDType(DataType t);
/// The actorflow dtype of a numpy dtype; DT_INVALID when none (object arrays map to DT_STRING).
DataType FromNumpyDType(const py::dtype& d);

/// The array for a fetched tensor (see above). Must hold the GIL.
py::object TensorToNumpy(const Tensor& t);
/// The tensor for a fed value: a numpy array or anything np.asarray takes.
/// `want` (DT_INVALID: the value's own) converts the value first, as
/// TensorFlow converts a feed to its placeholder's dtype. Errors are
/// InvalidArgument naming the dtypes. Must hold the GIL.
Status NumpyToTensor(const py::handle& value, DataType want, Tensor* out);

/// How many fed arrays were used in place and how many copied (for tests and benchmarks).
struct FeedCounts {
  uint64_t borrowed = 0, copied = 0, fetched_in_place = 0, fetched_copied = 0;
};
FeedCounts GetFeedCounts();

/// Called at interpreter exit: arrays still lent are then left alone (never
/// released from another thread into a finalizing interpreter).
void StopReleasing();

}  // namespace python
}  // namespace actorflow
