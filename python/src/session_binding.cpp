// The session half of _actorflow: a Session (client/session.hpp) over a
// graph built in Python, kept in step with it (the nodes added since the last
// run go to the session with Extend, as TensorFlow 1.x's session extends its
// graph), run with the GIL released so that Python threads (queue runners)
// run while a step does; and the in-process Server (master/server.hpp).
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/server.hpp"
#include "bindings.hpp"
#include "numpy_tensor.hpp"

namespace actorflow {
namespace python {

namespace {

class PySession {
 public:
  PySession(const Scope& graph, const std::string& target) : graph_(graph) {
    SessionOptions options;
    options.target = target;
    session_ = std::make_unique<Session>(options);
  }
  ~PySession() {
    py::gil_scoped_release nogil;
    session_.reset();  // cancels what runs
  }

  // feeds: (tensor name, value, dtype); returns one array per fetch.
  py::list Run(const std::vector<std::tuple<std::string, py::object, int>>& feeds,
               const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
               int64_t timeout_ms) {
    if (closed_) RaiseStatus(errors::Cancelled("Session has been closed."));
    Sync();
    std::vector<std::pair<std::string, Tensor>> in;
    in.reserve(feeds.size());
    for (const auto& [name, value, dtype] : feeds) {
      Tensor t;
      Status s = NumpyToTensor(value, static_cast<DataType>(dtype), &t);
      if (!s.ok()) RaiseStatus(errors::InvalidArgument("feed of '", name, "': ", s.message()));
      in.emplace_back(name, std::move(t));
    }
    std::vector<Tensor> out;
    Status s;
    {
      py::gil_scoped_release nogil;
      RunOptions options;
      if (timeout_ms > 0) options.timeout_in_ms = timeout_ms;
      s = session_->Run(options, in, fetches, targets, &out);
      in.clear();  // the fed arrays' tensors go first: a fetch that is a feed may then be returned in place
    }
    if (!s.ok()) RaiseStatus(s);
    py::list result(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      Tensor t = std::move(out[i]);
      result[i] = TensorToNumpy(t);
    }
    return result;
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    py::gil_scoped_release nogil;
    (void)session_->Close();
  }
  bool closed() const { return closed_; }

  void Reset(const std::vector<std::string>& containers) {
    py::gil_scoped_release nogil;
    Status s = session_->ResetContainers(containers);
    py::gil_scoped_acquire gil;
    if (!s.ok()) RaiseStatus(s);
  }

 private:
  // Sends the nodes added to the graph since the last run (all of them the first time).
  void Sync() {
    const int ids = graph_.graph()->num_node_ids();
    if (ids == synced_ids_) return;
    proto::GraphDef def;
    Status s = graph_.ToGraphDef(&def);
    if (!s.ok()) RaiseStatus(s);
    if (synced_ids_ > 0) {
      proto::GraphDef fresh;
      *fresh.mutable_versions() = def.versions();
      for (const auto& n : def.node()) {
        Node* node = graph_.graph()->FindNode(n.name());
        if (node && node->id() >= synced_ids_) *fresh.add_node() = n;
      }
      if (def.library().function_size() > library_functions_) *fresh.mutable_library() = def.library();
      library_functions_ = def.library().function_size();
      py::gil_scoped_release nogil;
      s = session_->Extend(fresh);
    } else {
      library_functions_ = def.library().function_size();
      py::gil_scoped_release nogil;
      s = session_->Create(def);
    }
    if (!s.ok()) RaiseStatus(s);
    synced_ids_ = ids;
  }

  Scope graph_;
  std::unique_ptr<Session> session_;
  int synced_ids_ = 0;
  int library_functions_ = 0;
  bool closed_ = false;
};

class PyServer {
 public:
  PyServer(const std::string& cluster_json, const std::string& job, int task, const std::string& bind, int port,
           int num_cpu_devices, int num_threads) {
    ServerOptions o;
    if (!cluster_json.empty()) {
      Status s = ClusterSpec::Parse(cluster_json, &o.cluster);
      if (!s.ok()) RaiseStatus(s);
      o.has_cluster = true;
    }
    o.task.job = job;
    o.task.index = task;
    o.bind = bind;
    o.port = port;
    o.num_cpu_devices = num_cpu_devices;
    o.num_threads = num_threads;
    Status s;
    {
      py::gil_scoped_release nogil;
      s = Server::Create(o, &server_);
    }
    if (!s.ok()) RaiseStatus(s);
  }
  std::string target() const { return server_->target(); }
  int port() const { return server_->port(); }
  std::string Join() {
    py::gil_scoped_release nogil;
    return server_->Join();
  }
  void Stop(const std::string& reason) {
    py::gil_scoped_release nogil;
    server_->RequestStop(reason);
  }
  void Destroy() {
    py::gil_scoped_release nogil;
    server_.reset();
  }

 private:
  std::unique_ptr<Server> server_;
};

}  // namespace

void BindSession(py::module_& m) {
  py::class_<PySession>(m, "Session")
      .def(py::init<const Scope&, const std::string&>(), py::arg("graph"), py::arg("target") = "")
      .def("run", &PySession::Run, py::arg("feeds"), py::arg("fetches"), py::arg("targets"),
           py::arg("timeout_ms") = 0)
      .def("close", &PySession::Close)
      .def_property_readonly("closed", &PySession::closed)
      .def("reset", &PySession::Reset);
  py::class_<PyServer>(m, "Server")
      .def(py::init<const std::string&, const std::string&, int, const std::string&, int, int, int>(),
           py::arg("cluster_json"), py::arg("job"), py::arg("task"), py::arg("bind") = "127.0.0.1",
           py::arg("port") = -1, py::arg("num_cpu_devices") = 1, py::arg("num_threads") = 0)
      .def_property_readonly("target", &PyServer::target)
      .def_property_readonly("port", &PyServer::port)
      .def("join", &PyServer::Join)
      .def("stop", &PyServer::Stop, py::arg("reason") = "stopped")
      .def("destroy", &PyServer::Destroy);
}

}  // namespace python
}  // namespace actorflow
