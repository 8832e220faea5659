// The all-reduce half of _actorflow: the builders of all-reduce data
// parallelism (client/train/all_reduce.hpp: AllReduceGradients in buckets,
// BroadcastVariables) over a graph built in Python, for
// actorflow.train.AllReduceOptimizer (python/actorflow/train/all_reduce.py).
// A Python variable comes as its parts (name, dtype, shape, its VariableV2
// output and its read value), which are what the builders use of it.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/all_reduce.hpp"
#include "bindings.hpp"

namespace actorflow {
namespace python {

namespace {

// (name, dtype enum, shape, ref output, value output)
using PyVariable = std::tuple<std::string, int, std::vector<int64_t>, Output, Output>;

Variable ToVariable(const PyVariable& v) {
  Variable var;
  var.name = std::get<0>(v);
  var.dtype = static_cast<DataType>(std::get<1>(v));
  var.shape = TensorShape(std::get<2>(v));
  var.ref = std::get<3>(v);
  var.value = std::get<4>(v);
  return var;
}

void CheckScope(const Scope& s) {
  Status st = s.TakeStatus();
  if (!st.ok()) throw py::value_error(st.message());
}

}  // namespace

void BindCollectives(py::module_& m) {
  py::class_<AllReduceOptions>(m, "AllReduceOptions")
      .def(py::init<>())
      .def_readwrite("group_size", &AllReduceOptions::group_size)
      .def_readwrite("group_key", &AllReduceOptions::group_key)
      .def_readwrite("first_instance_key", &AllReduceOptions::first_instance_key)
      .def_readwrite("bucket_bytes", &AllReduceOptions::bucket_bytes)
      .def_readwrite("average", &AllReduceOptions::average)
      .def_readwrite("timeout_seconds", &AllReduceOptions::timeout_seconds);
  // grads: one per variable, None where a variable has no gradient; returns the reduced ones (None stays None).
  m.def("all_reduce_gradients",
        [](const Scope& s, const std::vector<std::optional<Output>>& grads, const std::vector<PyVariable>& vars,
           const AllReduceOptions& o) {
          if (grads.size() != vars.size()) throw py::value_error("one gradient per variable");
          std::vector<Optimizer::GradAndVar> gvs;
          for (size_t i = 0; i < grads.size(); ++i) gvs.emplace_back(grads[i].value_or(Output()), ToVariable(vars[i]));
          std::vector<Optimizer::GradAndVar> reduced = AllReduceGradients(s, gvs, o);
          CheckScope(s);
          std::vector<std::optional<Output>> out;
          for (const auto& [g, v] : reduced) out.push_back(g.valid() ? std::optional<Output>(g) : std::nullopt);
          return out;
        },
        py::arg("scope"), py::arg("grads"), py::arg("variables"), py::arg("options"));
  m.def("broadcast_variables",
        [](const Scope& s, const std::vector<PyVariable>& vars, bool is_source, const AllReduceOptions& o) {
          std::vector<Variable> vs;
          for (const auto& v : vars) vs.push_back(ToVariable(v));
          Operation op = BroadcastVariables(s, vs, is_source, o);
          CheckScope(s);
          return op;
        },
        py::arg("scope"), py::arg("variables"), py::arg("is_source"), py::arg("options"));
}

}  // namespace python
}  // namespace actorflow
