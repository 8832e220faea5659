// The graph half of _actorflow: the C++ builder's Scope, Output and
// Operation (client/builder.hpp) as Python handles, ops added by type with
// attrs converted from Python values by their OpDef kinds, the registry's op
// signatures (for the generated wrappers and the conversion of Python values
// to inputs), symbolic gradients, while loops and conds whose bodies are
// Python callables, and GraphDef bytes in and out.
//
// Python's framework (python/actorflow/framework.py) owns what TensorFlow's
// Python owns: the default graph, name-scope, device and control-dependency
// stacks, collections. A construction error raises ValueError (TypeError for
// a dtype mismatch), as TensorFlow's graph construction does, and leaves the
// graph usable.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "bindings.hpp"
#include "numpy_tensor.hpp"

namespace actorflow {
namespace python {

namespace {

[[noreturn]] void RaiseConstruction(const Status& s) {
  const std::string& m = s.message();
  if (m.find("incompatible with expected") != std::string::npos || m.find("must be one of") != std::string::npos ||
      m.find("not in the list of allowed values") != std::string::npos)
    throw py::type_error(m);
  throw py::value_error(m);
}

int64_t DTypeOf(const py::handle& v) {
  if (py::hasattr(v, "as_datatype_enum")) return v.attr("as_datatype_enum").cast<int64_t>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::str>(v)) {
    DataType t;
    if (DataTypeFromString(v.cast<std::string>(), &t)) return t;
  }
  if (py::hasattr(v, "kind") && py::hasattr(v, "itemsize")) {  // a numpy dtype or type
    const DataType t = FromNumpyDType(py::dtype::from_args(py::reinterpret_borrow<py::object>(v)));
    if (t != DT_INVALID) return t;
  }
  throw py::type_error("not a dtype: " + py::repr(v).cast<std::string>());
}

PartialTensorShape ShapeOf(const py::handle& v) {
  if (v.is_none()) return PartialTensorShape();
  py::object dims = py::reinterpret_borrow<py::object>(v);
  if (py::hasattr(v, "as_list")) {
    if (py::hasattr(v, "ndims") && v.attr("ndims").is_none()) return PartialTensorShape();
    dims = v.attr("as_list")();
  }
  std::vector<int64_t> out;
  for (const py::handle& d : dims) {
    if (d.is_none()) out.push_back(-1);
    else if (py::hasattr(d, "value")) out.push_back(d.attr("value").is_none() ? -1 : d.attr("value").cast<int64_t>());
    else out.push_back(d.cast<int64_t>());
  }
  return PartialTensorShape(out);
}

proto::AttrValue ToAttr(const std::string& kind, const std::string& name, const py::handle& v) {
  proto::AttrValue a;
  try {
    if (kind == "type") {
      a.set_type(static_cast<proto::DataType>(DTypeOf(v)));
    } else if (kind == "int") {
      a.set_i(v.cast<int64_t>());
    } else if (kind == "float") {
      a.set_f(v.cast<float>());
    } else if (kind == "bool") {
      a.set_b(v.cast<bool>());
    } else if (kind == "string") {
      a.set_s(py::isinstance<py::bytes>(v) ? v.cast<std::string>() : py::str(v).cast<std::string>());
    } else if (kind == "shape") {
      ShapeToProto(ShapeOf(v), a.mutable_shape());
    } else if (kind == "tensor") {
      Tensor t;
      Status s = NumpyToTensor(v, DT_INVALID, &t);
      if (!s.ok()) throw py::value_error(s.message());
      TensorToProto(t, a.mutable_tensor());
    } else if (kind == "func") {
      a.mutable_func()->set_name(py::hasattr(v, "name") ? v.attr("name").cast<std::string>() : v.cast<std::string>());
    } else if (kind.rfind("list(", 0) == 0) {
      const std::string inner = kind.substr(5, kind.size() - 6);
      auto* list = a.mutable_list();
      for (const py::handle& e : v) {
        proto::AttrValue one = ToAttr(inner, name, e);
        if (inner == "type") list->add_type(one.type());
        else if (inner == "int") list->add_i(one.i());
        else if (inner == "float") list->add_f(one.f());
        else if (inner == "bool") list->add_b(one.b());
        else if (inner == "string") list->add_s(one.s());
        else if (inner == "shape") *list->add_shape() = one.shape();
        else if (inner == "tensor") *list->add_tensor() = one.tensor();
        else if (inner == "func") *list->add_func() = one.func();
      }
    } else {
      throw py::type_error("attr '" + name + "' of kind " + kind + " cannot be set from Python");
    }
  } catch (const py::cast_error&) {
    throw py::type_error("attr '" + name + "' expects a " + kind + ", got " + py::repr(v).cast<std::string>());
  }
  return a;
}

py::object FromAttr(const proto::AttrValue& a) {
  switch (a.value_case()) {
    case proto::AttrValue::kS: return py::bytes(a.s());
    case proto::AttrValue::kI: return py::int_(a.i());
    case proto::AttrValue::kF: return py::float_(a.f());
    case proto::AttrValue::kB: return py::bool_(a.b());
    case proto::AttrValue::kType: return py::int_(static_cast<int>(a.type()));
    case proto::AttrValue::kShape: {
      const PartialTensorShape s = PartialShapeFromProto(a.shape());
      if (s.unknown_rank()) return py::none();
      py::list dims;
      for (int64_t d : s.dim_sizes()) dims.append(d < 0 ? py::object(py::none()) : py::object(py::int_(d)));
      return std::move(dims);
    }
    case proto::AttrValue::kTensor: {
      Tensor t;
      Status s = TensorFromProto(a.tensor(), &t);
      if (!s.ok()) throw py::value_error(s.message());
      return TensorToNumpy(t);
    }
    case proto::AttrValue::kFunc: return py::str(a.func().name());
    case proto::AttrValue::kList: {
      py::list out;
      const auto& l = a.list();
      for (const auto& v : l.s()) out.append(py::bytes(v));
      for (int64_t v : l.i()) out.append(v);
      for (float v : l.f()) out.append(v);
      for (bool v : l.b()) out.append(v);
      for (int v : l.type()) out.append(v);
      for (const auto& v : l.shape()) {
        proto::AttrValue one;
        *one.mutable_shape() = v;
        out.append(FromAttr(one));
      }
      for (const auto& v : l.func()) out.append(py::str(v.name()));
      return std::move(out);
    }
    default: return py::none();
  }
}

// What the Python wrappers need of an op: its inputs (name, the type attr
// or fixed dtype, list-ness, ref), outputs, attrs (name, kind, default,
// allowed values) and the attrs its inputs decide.
py::dict Signature(const std::string& op_type) {
  const OpRegistration* reg = OpRegistry::Global()->Find(op_type);
  if (!reg) throw py::value_error("op type not registered '" + op_type + "'");
  const proto::OpDef& d = reg->op_def;
  auto args = [](const auto& list) {
    py::list out;
    for (const auto& arg : list) {
      py::dict a;
      a["name"] = arg.name();
      a["type"] = static_cast<int>(arg.type());
      a["type_attr"] = arg.type_attr();
      a["number_attr"] = arg.number_attr();
      a["type_list_attr"] = arg.type_list_attr();
      a["is_ref"] = arg.is_ref();
      out.append(a);
    }
    return out;
  };
  py::list attrs;
  for (const auto& at : d.attr()) {
    py::dict a;
    a["name"] = at.name();
    a["kind"] = at.type();
    a["has_default"] = at.has_default_value();
    a["default"] = at.has_default_value() ? FromAttr(at.default_value()) : py::none();
    py::list allowed;
    if (at.has_allowed_values())
      for (int t : at.allowed_values().list().type()) allowed.append(t);
    a["allowed_types"] = allowed;
    attrs.append(a);
  }
  py::dict sig;
  sig["name"] = d.name();
  sig["inputs"] = args(d.input_arg());
  sig["outputs"] = args(d.output_arg());
  sig["attrs"] = attrs;
  sig["is_stateful"] = d.is_stateful();
  sig["summary"] = d.summary();
  return sig;
}

Operation AddOp(const Scope& scope, const std::string& op_type, const py::object& name,
                const std::vector<OutputList>& args, const py::dict& attrs, const std::string& device,
                const std::vector<Operation>& control_inputs) {
  const OpRegistration* reg = OpRegistry::Global()->Find(op_type);
  if (!reg) throw py::value_error("op type not registered '" + op_type + "'");
  AttrMap map;
  for (const auto& [k, v] : attrs) {
    if (v.is_none()) continue;
    const std::string key = k.cast<std::string>();
    const proto::OpDef::AttrDef* def = nullptr;
    for (const auto& at : reg->op_def.attr())
      if (at.name() == key) def = &at;
    if (!def) throw py::type_error("op '" + op_type + "' has no attr '" + key + "'");
    map[key] = ToAttr(def->type(), key, v);
  }
  Scope s = scope.WithDevice(device);
  if (!control_inputs.empty()) s = s.WithControlDependencies(control_inputs);
  if (!name.is_none()) s = s.WithOpName(name.cast<std::string>());
  Operation op = s.AddOp(op_type, args, map);
  Status st = scope.TakeStatus();
  if (!st.ok()) RaiseConstruction(st);
  return op;
}

py::object ShapeList(const PartialTensorShape& s) {
  if (s.unknown_rank()) return py::none();
  py::list dims;
  for (int64_t d : s.dim_sizes()) dims.append(d < 0 ? py::object(py::none()) : py::object(py::int_(d)));
  return std::move(dims);
}

// Runs a Python builder inside a C++ builder callback: its exception becomes
// the callback's error and is raised again once the C++ builder returns.
struct PyErrorSlot {
  std::unique_ptr<py::error_already_set> error;
  Status Catch(const std::function<void()>& fn) {
    try {
      fn();
      return Status::OK();
    } catch (py::error_already_set& e) {
      error = std::make_unique<py::error_already_set>(std::move(e));
      return errors::Aborted("the Python builder raised");
    }
  }
  void Rethrow() {
    if (error) {
      auto e = std::move(error);
      throw std::move(*e);
    }
  }
};

}  // namespace

void BindGraph(py::module_& m) {
  py::class_<Operation>(m, "Operation")
      .def_property_readonly("name", [](const Operation& o) { return o.name(); })
      .def_property_readonly("type", [](const Operation& o) { return o.node()->type_string(); })
      .def_property_readonly("device", [](const Operation& o) { return o.node()->requested_device(); })
      .def_property_readonly("num_outputs", &Operation::num_outputs)
      .def_property_readonly("num_inputs", &Operation::num_inputs)
      .def("output", &Operation::output)
      .def("input", &Operation::input)
      .def_property_readonly("control_inputs",
                             [](const Operation& o) {
                               std::vector<Operation> out;
                               for (const Edge* e : o.node()->in_edges())
                                 if (e->IsControlEdge()) out.emplace_back(e->src);
                               return out;
                             })
      .def_property_readonly("consumers",
                             [](const Operation& o) {
                               std::vector<Operation> out;
                               for (const Edge* e : o.node()->out_edges()) out.emplace_back(e->dst);
                               return out;
                             })
      .def("get_attr",
           [](const Operation& o, const std::string& name) {
             auto it = o.node()->def().attr().find(name);
             if (it == o.node()->def().attr().end())
               throw py::value_error("Operation '" + o.name() + "' has no attr named '" + name + "'.");
             return FromAttr(it->second);
           })
      .def("node_def", [](const Operation& o) { return py::bytes(o.node()->def().SerializeAsString()); })
      .def("__eq__", [](const Operation& a, const Operation& b) { return a.node() == b.node(); })
      .def("__hash__", [](const Operation& o) { return std::hash<const void*>()(o.node()); });

  py::class_<Output>(m, "Output")
      .def_property_readonly("op", &Output::op)
      .def_property_readonly("index", &Output::index)
      .def_property_readonly("name", &Output::name)
      .def_property_readonly("dtype", [](const Output& o) { return static_cast<int>(o.type()); })
      .def_property_readonly("is_ref",
                             [](const Output& o) { return IsRefType(o.node()->output_type(o.index())); })
      .def("__eq__", [](const Output& a, const Output& b) { return a.node() == b.node() && a.index() == b.index(); })
      .def("__hash__", [](const Output& o) { return std::hash<const void*>()(o.node()) ^ o.index(); });

  py::class_<Scope>(m, "Scope")
      .def_static("new_root", &Scope::NewRootScope)
      .def("new_sub_scope", &Scope::NewSubScope)
      .def("graph_root", &Scope::GraphRoot)
      .def("with_device", &Scope::WithDevice)
      .def("unique_name", &Scope::GetUniqueNameForOp)
      .def("add_op", &AddOp, py::arg("op_type"), py::arg("name"), py::arg("args"), py::arg("attrs"),
           py::arg("device") = "", py::arg("control_inputs") = std::vector<Operation>())
      .def("shape", [](const Scope& s, const Output& o) { return ShapeList(s.InferredShape(o)); })
      .def("set_shape",
           [](const Scope& s, const Output& o, const py::object& shape) {
             Status st = s.SetShape(o, ShapeOf(shape));
             if (!st.ok()) throw py::value_error(st.message());
           })
      .def("find_node",
           [](const Scope& s, const std::string& name) -> py::object {
             Node* n = s.graph()->FindNode(name);
             if (!n) return py::none();
             return py::cast(Operation(n));
           })
      .def("operations",
           [](const Scope& s) {
             std::vector<Operation> out;
             for (Node* n : s.graph()->nodes()) out.emplace_back(n);
             return out;
           })
      .def("num_node_ids", [](const Scope& s) { return s.graph()->num_node_ids(); })
      .def("mark_outside_control_flow",
           [](const Scope& s, int begin, int end) {
             // Nodes built while a loop's or cond's body was being built that belong outside it (a
             // variable and its initializer, as TensorFlow's init_scope lifts them): the builder's capture
             // leaves them out (graph/control_flow_info.hpp: MarkForwardSide).
             Graph* g = s.graph();
             for (int id = std::max(begin, 0); id < end && id < g->num_node_ids(); ++id)
               if (Node* n = g->node(id)) MarkForwardSide(n);
           })
      .def("graph_def",
           [](const Scope& s) {
             proto::GraphDef def;
             Status st = s.ToGraphDef(&def);
             if (!st.ok()) RaiseConstruction(st);
             return py::bytes(def.SerializeAsString());
           })
      .def("import_graph_def",
           [](const Scope& s, const py::bytes& bytes) {
             proto::GraphDef def;
             if (!def.ParseFromString(bytes.cast<std::string>())) throw py::value_error("not a GraphDef");
             Status st = s.ImportGraphDef(def);
             if (!st.ok()) RaiseStatus(st);
           })
      .def("set_graph_seed", &Scope::SetGraphSeed)
      .def("get_seeds",
           [](const Scope& s, int64_t op_seed) {
             int64_t a = 0, b = 0;
             s.GetSeeds(op_seed, &a, &b);
             return std::make_pair(a, b);
           })
      .def("gradients",
           [](const Scope& s, const OutputList& ys, const OutputList& xs, const OutputList& grad_ys) {
             OutputList out;
             Status st = AddSymbolicGradients(s, ys, xs, grad_ys, &out);
             (void)s.TakeStatus();
             if (!st.ok()) RaiseConstruction(st);
             return out;
           })
      .def("while_loop",
           [](const Scope& s, const OutputList& vars, const py::function& cond, const py::function& body,
              int64_t parallel_iterations, int64_t maximum_iterations, const std::vector<py::object>& invariants,
              const std::string& name) {
             ops::WhileOptions options;
             options.parallel_iterations = parallel_iterations;
             options.maximum_iterations = maximum_iterations;
             for (const auto& inv : invariants) options.shape_invariants.push_back(ShapeOf(inv));
             options.name = name;
             PyErrorSlot slot;
             OutputList out;
             Status st = ops::WhileLoop(
                 s, vars,
                 [&](const Scope& in, const OutputList& v, Output* pred) {
                   return slot.Catch([&] { *pred = cond(in, v).cast<Output>(); });
                 },
                 [&](const Scope& in, const OutputList& v, OutputList* next) {
                   return slot.Catch([&] { *next = body(in, v).cast<OutputList>(); });
                 },
                 &out, options);
             (void)s.TakeStatus();
             slot.Rethrow();
             if (!st.ok()) RaiseConstruction(st);
             return out;
           })
      .def("cond", [](const Scope& s, const Output& pred, const py::function& true_fn, const py::function& false_fn,
                      const std::string& name) {
        PyErrorSlot slot;
        OutputList out;
        Status st = ops::Cond(
            s, pred,
            [&](const Scope& in, OutputList* o) { return slot.Catch([&] { *o = true_fn(in).cast<OutputList>(); }); },
            [&](const Scope& in, OutputList* o) { return slot.Catch([&] { *o = false_fn(in).cast<OutputList>(); }); },
            &out, name);
        (void)s.TakeStatus();
        slot.Rethrow();
        if (!st.ok()) RaiseConstruction(st);
        return out;
      });

  m.def("op_signature", &Signature);
  m.def("list_ops", [] { return OpRegistry::Global()->ListOpNames(); });
  m.def("dtype_name", [](int t) { return DataTypeString(static_cast<DataType>(t)); });
  m.def("dtype_size", [](int t) { return DataTypeSize(static_cast<DataType>(t)); });
  m.def("numpy_dtype", [](int t) { return NumpyDType(static_cast<DataType>(t)); });
  m.def("dtype_of_numpy", [](const py::dtype& d) { return static_cast<int>(FromNumpyDType(d)); });
}

}  // namespace python
}  // namespace actorflow
