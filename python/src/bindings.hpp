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

void BindGraph(py::module_& m);
void BindSession(py::module_& m);
void BindFiles(py::module_& m);

}  // namespace python
}  // namespace actorflow
