// The parts of _actorflow (python/src/module.cpp) and what they share.
#pragma once

#include <pybind11/pybind11.h>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace python {

namespace py = pybind11;

/// A Status to raise as TensorFlow's exception of its code
/// (actorflow.errors: InvalidArgumentError, OutOfRangeError, ...).
struct StatusError {
  Status status;
};
[[noreturn]] inline void RaiseStatus(const Status& s) { throw StatusError{s}; }
/// The same, the Python exception made now (the GIL held): for a caller
/// that must not return to C++ frames first (Session.run, counted until it
/// is back in Python).
[[noreturn]] inline void RaisePythonNow(const Status& s) {
  py::object err = py::module_::import("actorflow.errors").attr("_from_status")(static_cast<int>(s.code()), s.message());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
  throw py::error_already_set();
}

void BindGraph(py::module_& m);
void BindSession(py::module_& m);
void BindFiles(py::module_& m);

}  // namespace python
}  // namespace actorflow
