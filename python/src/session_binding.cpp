// The session half of _actorflow: a Session (client/session.hpp) over a
// graph built in Python, kept in step with it (the nodes added since the last
// run go to the session with Extend, as TensorFlow 1.x's session extends its
// graph), run with the GIL released so that Python threads (queue runners)
// run while a step does; and the in-process Server (master/server.hpp).
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <unordered_set>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/master/server_environment.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "bindings.hpp"
#include "numpy_tensor.hpp"

namespace actorflow {
namespace python {

namespace {
// Steps in Session.run (from the call's start to its return to Python, the GIL held at both ends): at
// interpreter exit, the sessions are closed and then these waited for, so that no thread is still in C++
// when Python's finalization ends the threads that want the GIL back.
std::atomic<int> steps_in_run{0};
std::atomic<uint64_t> next_container{1};
}  // namespace

InRun::InRun() { steps_in_run.fetch_add(1); }
InRun::~InRun() { steps_in_run.fetch_sub(1); }

std::string NewSessionContainer() { return "_python_session_" + std::to_string(next_container.fetch_add(1)); }

void ContainStatefulOps(proto::GraphDef* def, const std::string& container) {
  for (auto& n : *def->mutable_node()) {
    const OpRegistration* reg = OpRegistry::Global()->Find(n.op());
    if (!reg) continue;
    for (const auto& a : reg->op_def.attr())
      if (a.name() == "container") {
        auto& attr = (*n.mutable_attr())["container"];
        if (attr.s().empty()) attr.set_s(container);
      }
  }
}

std::vector<std::pair<std::string, Tensor>> FeedsFromPython(const std::vector<PyFeed>& feeds) {
  std::vector<std::pair<std::string, Tensor>> in;
  in.reserve(feeds.size());
  for (const auto& [name, value, dtype] : feeds) {
    Tensor t;
    Status s = NumpyToTensor(value, static_cast<DataType>(dtype), &t);
    if (!s.ok()) RaiseStatus(errors::InvalidArgument("feed of '", name, "': ", s.message()));
    in.emplace_back(name, std::move(t));
  }
  return in;
}

py::list FetchesToPython(std::vector<Tensor>* out) {
  py::list result(out->size());
  for (size_t i = 0; i < out->size(); ++i) {
    Tensor t = std::move((*out)[i]);
    result[i] = TensorToNumpy(t);
  }
  return result;
}

namespace {

class PySession {
 public:
  PySession(const Scope& graph, const std::string& target, const std::vector<std::string>& device_filters)
      : graph_(graph) {
    SessionOptions options;
    options.target = target;
    options.device_filters = device_filters;  // ConfigProto.device_filters (default: the ps tasks and this one)
    options_ = options;
    session_ = std::make_unique<Session>(options);
    // In this process, a session's variables, queues and readers are its own, as a TensorFlow
    // DirectSession's are: the stateful ops without a container get the session's.
    if (target.empty()) container_ = NewSessionContainer();
  }
  ~PySession() {
    py::gil_scoped_release nogil;
    if (!closed_ && !container_.empty()) (void)session_->ResetContainers({container_});
    session_.reset();  // cancels what runs
  }

  // feeds: (tensor name, value, dtype); returns one array per fetch.
  py::list Run(const std::vector<PyFeed>& feeds, const std::vector<std::string>& fetches,
               const std::vector<std::string>& targets, int64_t timeout_ms) {
    InRun in_run;
    if (closed_) RaiseStatus(errors::Cancelled("Session has been closed."));
    Sync();
    std::vector<std::pair<std::string, Tensor>> in = FeedsFromPython(feeds);
    std::vector<Tensor> out;
    Status s;
    {
      py::gil_scoped_release nogil;
      RunOptions options;
      if (timeout_ms > 0) options.timeout_in_ms = timeout_ms;
      s = session_->Run(options, in, fetches, targets, &out);
      in.clear();  // the fed arrays' tensors go first: a fetch that is a feed may then be returned in place
    }
    if (!s.ok()) RaisePythonNow(s);
    return FetchesToPython(&out);
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    py::gil_scoped_release nogil;
    (void)session_->Close();  // what runs ends (Cancelled)
    // Its variables and queues go: a closed session resets nothing, a fresh one (no graph needed) does.
    if (!container_.empty()) (void)Session(options_).ResetContainers({container_});
  }
  bool closed() const { return closed_; }

  void Reset(const std::vector<std::string>& containers) {
    Status s;
    {
      py::gil_scoped_release nogil;
      s = session_->ResetContainers(containers);
    }
    if (!s.ok()) RaiseStatus(s);
  }

 private:
  // Sends the nodes added to the graph since the last run (all of them the first time). Threads that run
  // steps at once (queue runners beside the training loop) sync one at a time: the graph is read with the
  // GIL held (only Python threads holding it add nodes), sent without it, under sync_mu_.
  void Sync() {
    if (graph_.graph()->num_node_ids() == synced_ids_.load()) return;
    std::unique_lock<std::mutex> lock(sync_mu_, std::defer_lock);
    {
      py::gil_scoped_release nogil;  // wait for another thread's sync without holding the GIL it may need
      lock.lock();
    }
    const int ids = graph_.graph()->num_node_ids();
    if (ids == synced_ids_.load()) return;
    proto::GraphDef def;
    Status s = graph_.ToGraphDef(&def);
    if (!s.ok()) RaiseStatus(s);
    if (!container_.empty()) ContainStatefulOps(&def, container_);
    const int functions = def.library().function_size();
    if (synced_ids_.load() > 0) {
      proto::GraphDef fresh;
      *fresh.mutable_versions() = def.versions();
      for (const auto& n : def.node()) {
        Node* node = graph_.graph()->FindNode(n.name());
        if (node && node->id() >= synced_ids_.load()) *fresh.add_node() = n;
      }
      if (functions > library_functions_) *fresh.mutable_library() = def.library();
      py::gil_scoped_release nogil;
      s = session_->Extend(fresh);
    } else {
      py::gil_scoped_release nogil;
      s = session_->Create(def);
    }
    if (!s.ok()) RaiseStatus(s);
    library_functions_ = functions;
    synced_ids_.store(ids);
  }

  Scope graph_;
  SessionOptions options_;
  std::string container_;  // "" for a session of a cluster: its tasks' containers are shared
  std::unique_ptr<Session> session_;
  std::mutex sync_mu_;                // one Sync at a time
  std::atomic<int> synced_ids_{0};    // the graph's node ids sent to the session: [0, synced_ids_)
  int library_functions_ = 0;         // (under sync_mu_)
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
    // As every actorflow program: ACTORFLOW_BIND, ACTORFLOW_TLS_*, ... (what `actorflow launch` sets).
    Status s = ApplyServerEnvironment(&o);
    if (!s.ok()) RaiseStatus(s);
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
  void ShutdownTasks(const std::string& job, const std::string& reason, int64_t timeout_ms) {
    Status s;
    {
      py::gil_scoped_release nogil;
      s = server_->ShutdownTasks(job, reason, std::chrono::milliseconds(timeout_ms));
    }
    if (!s.ok()) RaiseStatus(s);
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
  m.def("_steps_in_run", [] { return steps_in_run.load(); });  // for tests: a step is under way
  m.def("_wait_for_steps", [](int64_t timeout_ms) {
    py::gil_scoped_release nogil;  // the threads returning from their steps need it
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (steps_in_run.load() > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return steps_in_run.load() == 0;
  });
  py::class_<PySession>(m, "Session")
      .def(py::init<const Scope&, const std::string&, const std::vector<std::string>&>(), py::arg("graph"),
           py::arg("target") = "", py::arg("device_filters") = std::vector<std::string>())
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
      .def("shutdown_tasks", &PyServer::ShutdownTasks, py::arg("job"), py::arg("reason"),
           py::arg("timeout_ms") = 10000)
      .def("destroy", &PyServer::Destroy);
}

}  // namespace python
}  // namespace actorflow
