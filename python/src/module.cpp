// _actorflow: the C++ half of the Python module `actorflow` (python/actorflow/
// is the other): the graph builder (graph_binding.cpp), sessions
// (session_binding.cpp), the training supervisor (supervisor_binding.cpp),
// all-reduce (collective_binding.cpp),
// events, TFRecord files and SavedModels (files_binding.cpp), tensors as
// numpy arrays (numpy_tensor.hpp). A Status becomes TensorFlow's exception
// class of its code, made by actorflow.errors.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "numpy_tensor.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_actorflow, m) {
  using namespace actorflow::python;
  m.doc() = "actorflow's C++ runtime (use the package `actorflow`)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object make = py::module_::import("actorflow.errors").attr("_from_status");
      py::object err = make(static_cast<int>(e.status.code()), e.status.message());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    }
  });
  BindGraph(m);
  BindSession(m);
  BindFiles(m);
  BindSupervisor(m);
  BindCollectives(m);
  m.def("feed_counts", [] {
    const FeedCounts c = GetFeedCounts();
    py::dict d;
    d["borrowed"] = c.borrowed;
    d["copied"] = c.copied;
    d["fetched_in_place"] = c.fetched_in_place;
    d["fetched_copied"] = c.fetched_copied;
    return d;
  });
  m.def("_stop_releasing", &StopReleasing);
}
