// The parts of _actorflow (python/src/module.cpp) and what they share.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

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

/// Counts a call that runs steps, from its start to its return to Python
/// (the GIL held at both ends): at interpreter exit the sessions are closed
/// and these waited for (session_binding.cpp).
struct InRun {
  InRun();
  ~InRun();
};

/// A container of its own for a session in this process ("_python_session_N"):
/// its variables, queues and readers are its own, as a TensorFlow
/// DirectSession's are.
std::string NewSessionContainer();
/// Puts the stateful ops of `def` that name no container in `container`.
void ContainStatefulOps(proto::GraphDef* def, const std::string& container);

/// A feed from Python: (tensor name, value, dtype enum).
using PyFeed = std::tuple<std::string, py::object, int>;
/// The feeds as tensors (a numpy array of the dtype lent, not copied); the GIL held.
std::vector<std::pair<std::string, Tensor>> FeedsFromPython(const std::vector<PyFeed>& feeds);
/// One numpy array (or scalar) per fetched tensor, each moved out of `out`; the GIL held.
py::list FetchesToPython(std::vector<Tensor>* out);

void BindGraph(py::module_& m);
void BindSession(py::module_& m);
void BindFiles(py::module_& m);
void BindSupervisor(py::module_& m);
void BindCollectives(py::module_& m);

}  // namespace python
}  // namespace actorflow
