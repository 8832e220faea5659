// The supervisor half of _actorflow: a TrainingSupervisor
// (client/train/supervisor.hpp) over a graph built in Python, for
// tf.train.MonitoredSession (python/actorflow/train/monitored_session.py).
// The supervisor owns the session and makes it anew after a lost peer
// (bounded recoveries, the worker's readiness polled); Python gives it the
// chief's restore-or-initialize, and is told when a session is ready (queue
// runners, hooks' after_create_session) or closed.
//
// Python callbacks run on the thread that runs the step (its GIL released
// and taken back for the call). A callback that raises a tf.errors.OpError
// stands for a Status of its code: UnavailableError or AbortedError is
// recovered from as a failed step is. Any other exception ends the call, and
// the same Python exception (its class, its traceback) is raised from it.
//
// raw_run runs on the session of the moment, without recovery: for hooks
// and queue-runner threads. While the supervisor replaces its session, a
// raw run gets CancelledError; the old session is destroyed only once no
// raw run is in it. A hook's run that failed with UnavailableError or
// AbortedError is recovered from with recover(), and the hooked step run
// again (TensorFlow's _RecoverableSession around its _HookedSession).
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/supervisor.hpp"
#include "bindings.hpp"

namespace actorflow {
namespace python {

namespace {

struct SupervisorArgs {
  std::string target;
  std::vector<std::string> device_filters;
  bool is_chief = true;
  std::string init_op, local_init_op, global_step;
  std::vector<std::string> ready_checks;
  int max_recoveries = 5;
  int64_t backoff_ms = 500, ready_poll_ms = 250, ready_timeout_ms = 7200000, step_timeout_ms = 0;
  py::object chief_prepare, on_session_ready, on_session_closed, on_recovery;
};

class PySupervisor {
 public:
  PySupervisor(const Scope& graph, SupervisorArgs args) : args_(std::move(args)) {
    proto::GraphDef def;
    Status s = graph.ToGraphDef(&def);
    if (!s.ok()) RaiseStatus(s);
    SupervisorOptions o;
    if (args_.target.empty()) {  // in this process: state of its own, as a Session's (session_binding.cpp)
      const std::string container = NewSessionContainer();
      ContainStatefulOps(&def, container);
      o.reset_containers = {container};  // emptied as each session closes
    }
    TrainingSupervisor::Graph g;
    g.init_op = args_.init_op;
    g.local_init_op = args_.local_init_op;
    g.ready_checks = args_.ready_checks;
    g.global_step = args_.global_step;
    o.is_chief = args_.is_chief;
    o.session.target = args_.target;
    o.session.device_filters = args_.device_filters;
    if (args_.step_timeout_ms > 0) o.run.timeout_in_ms = args_.step_timeout_ms;
    o.max_recoveries = args_.max_recoveries;
    o.backoff = std::chrono::milliseconds(args_.backoff_ms);
    o.ready_poll = std::chrono::milliseconds(args_.ready_poll_ms);
    o.ready_timeout = std::chrono::milliseconds(args_.ready_timeout_ms);
    o.read_global_step_each_step = false;  // the hooks fetch it with the step
    if (!args_.chief_prepare.is_none())
      o.chief_prepare = [this](Session* session) {
        SetCurrent(session);
        return Call(&SupervisorArgs::chief_prepare);
      };
    o.on_session_ready = [this](Session* session) {
      SetCurrent(session);
      return Call(&SupervisorArgs::on_session_ready);
    };
    o.on_session_closed = [this] { Retire(); };
    o.on_recovery = [this](const Status& why, int n) {
      py::gil_scoped_acquire gil;
      if (pending_) *pending_ = Pending();  // what a callback raised before is not this call's error now
      if (ended_ || args_.on_recovery.is_none()) return;
      try {
        args_.on_recovery(static_cast<int>(why.code()), why.message(), n);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("MonitoredSession's on_recovery");
      }
    };
    // Ctrl-C while a worker waits for the chief, or between recoveries: the wait ends with KeyboardInterrupt.
    o.keep_waiting = [this]() -> Status {
      if (ended_) return errors::Cancelled("the monitored session is closed");
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() == 0) return Status::OK();
      Status s = errors::Cancelled("interrupted");
      Keep(py::error_already_set(), s);  // the error PyErr_CheckSignals set (KeyboardInterrupt)
      return s;
    };
    sup_ = std::make_unique<TrainingSupervisor>(std::move(def), std::move(g), std::move(o));
  }

  ~PySupervisor() {
    End();
    py::gil_scoped_release nogil;
    sup_.reset();  // no call runs now (a call holds a reference to this object)
  }

  void Start() {
    InRun in_run;
    Supervised([&] { return sup_->Start(); });
  }

  py::list Run(const std::vector<PyFeed>& feeds, const std::vector<std::string>& fetches,
               const std::vector<std::string>& targets, int64_t timeout_ms) {
    InRun in_run;
    std::vector<std::pair<std::string, Tensor>> in = FeedsFromPython(feeds);
    std::vector<Tensor> out;
    RunOptions options;
    options.timeout_in_ms = timeout_ms > 0 ? timeout_ms : args_.step_timeout_ms;
    Supervised([&] {
      Status s = sup_->Run(options, in, fetches, targets, &out);
      in.clear();  // a fetch that is a feed may then come back in place
      return s;
    });
    return FetchesToPython(&out);
  }

  // After a run of the caller's own in the session (a hook's) failed with
  // `code`: a new session as for a failed step, or the error.
  void Recover(int code, const std::string& message) {
    InRun in_run;
    const Status why(static_cast<Code>(code), message);
    Supervised([&] { return sup_->Recover(why); });
  }

  // A step in the session of the moment, without recovery.
  py::list RawRun(const std::vector<PyFeed>& feeds, const std::vector<std::string>& fetches,
                  const std::vector<std::string>& targets, int64_t timeout_ms) {
    InRun in_run;
    std::vector<std::pair<std::string, Tensor>> in = FeedsFromPython(feeds);
    std::vector<Tensor> out;
    const Status s = InCurrent([&](Session* session) {
      RunOptions options;
      if (timeout_ms > 0) options.timeout_in_ms = timeout_ms;
      Status st = session->Run(options, in, fetches, targets, &out);
      in.clear();
      return st;
    });
    if (!s.ok()) RaisePythonNow(s);
    return FetchesToPython(&out);
  }

  // The end of training: the session closes (after the hooks' end, which Python runs first).
  void Finish() {
    InRun in_run;
    if (ended_) return;  // ended already (interpreter exit closed it)
    if (in_call_) return End();  // another thread's step: it ends Cancelled (no saver of the supervisor's here)
    Pending p;
    Status s = Locked(&p, [&] {
      ended_ = true;  // under the call lock: a step waiting for it then ends Cancelled, not "finished"
      return sup_->Finish();
    });
    DropCallbacks();
    Check(s, &p);
  }

  // Closes without Finish (an exception is leaving the training loop, or
  // interpreter exit): the callbacks are not called again. From any thread,
  // also while a call runs (another thread's step, or this thread's own
  // callback): then its session is closed, which ends what it runs, and the
  // call destroys the supervisor on its way out.
  void End() {
    const bool first = !ended_.exchange(true);
    {
      py::gil_scoped_release nogil;
      if (in_call_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (current_) (void)current_->Close();
      } else {
        std::lock_guard<std::mutex> lock(call_mu_);
        sup_.reset();  // closes the session; Retire() as it does
      }
    }
    if (first) DropCallbacks();
  }

  void Reset(const std::vector<std::string>& containers) {
    const Status s = InCurrent([&](Session* session) { return session->ResetContainers(containers); });
    if (!s.ok()) RaiseStatus(s);
  }

  int64_t global_step() const { return global_step_.load(); }
  int recoveries() const { return recoveries_.load(); }
  bool ended() const { return ended_; }

 private:
  // What a callback of the current call raised: the Python exception, and the Status it stood for.
  struct Pending {
    std::optional<py::error_already_set> error;
    Status status;
  };

  // A call into the supervisor: its Status, or the exception a callback of it raised, raised in Python.
  template <typename F>
  void Supervised(F&& f) {
    Pending p;
    Check(Locked(&p, std::forward<F>(f)), &p);
  }

  // f(the session of the moment), without the GIL and without recovery;
  // Cancelled while the supervisor has none (it is making a new one, or it ended).
  template <typename F>
  Status InCurrent(F&& f) {
    py::gil_scoped_release nogil;
    Session* session = Enter();
    if (!session)
      return errors::Cancelled(ended_ ? "the monitored session is closed"
                                      : "the monitored session's session was closed (a new one is being made)");
    Status s = f(session);
    Leave();
    return s;
  }

  // Runs `f` without the GIL, one call at a time, its callbacks' exceptions
  // kept in `p`; a supervisor that End() left to this call is destroyed after it.
  template <typename F>
  Status Locked(Pending* p, F&& f) {
    if (owner_.load() == std::this_thread::get_id())  // a callback of this thread's call (a hook's own run)
      throw py::value_error("MonitoredSession.run called from a hook's after_create_session or another callback "
                            "of the session being made: use the session it is given");
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(call_mu_);
    struct InCall {  // set before ended_ is read: End() sees the call, or the call sees End()
      PySupervisor* self;
      Pending* p;
      InCall(PySupervisor* s, Pending* pending) : self(s), p(pending) {
        self->owner_ = std::this_thread::get_id();
        self->in_call_ = true;
        self->pending_ = p;  // under call_mu_; the callbacks read it with the GIL, within this call
      }
      ~InCall() {
        self->pending_ = nullptr;
        self->in_call_ = false;
        self->owner_ = std::thread::id();
      }
    } in_call(this, p);
    if (ended_ || !sup_) return errors::Cancelled("the monitored session is closed");
    Status s = f();
    global_step_ = sup_->global_step();
    recoveries_ = sup_->recoveries();
    if (ended_) sup_.reset();
    return s;
  }
  // Raises the Python exception a callback left for the Status the call
  // returned, or the Status's own (the GIL held).
  void Check(const Status& s, Pending* p) {
    if (s.ok()) return;
    if (p->error && p->status.code() == s.code() && p->status.message() == s.message()) {
      p->error->restore();
      p->error.reset();
      throw py::error_already_set();
    }
    RaisePythonNow(s);
  }
  // Keeps a callback's exception for the call in progress (the GIL held);
  // with none (the supervisor's end), it is reported as unraisable.
  void Keep(py::error_already_set e, const Status& s) {
    if (!pending_) return e.discard_as_unraisable("MonitoredSession's callback");
    pending_->error.emplace(std::move(e));
    pending_->status = s;
  }

  // A Python callback, on a thread without the GIL.
  Status Call(py::object SupervisorArgs::*callback) {
    py::gil_scoped_acquire gil;
    if (ended_) return errors::Cancelled("the monitored session is closed");
    py::object fn = args_.*callback;
    if (fn.is_none()) return Status::OK();
    try {
      fn();
      return Status::OK();
    } catch (py::error_already_set& e) {
      Status s = errors::Internal("a Python callback of MonitoredSession raised an exception");
      try {  // an OpError stands for its Status (its code decides whether it is recovered from)
        py::object op_error = py::module_::import("actorflow.errors").attr("OpError");
        if (py::isinstance(e.value(), op_error))
          s = Status(static_cast<Code>(e.value().attr("error_code").cast<int>()),
                     py::str(e.value().attr("message")).cast<std::string>());
      } catch (const std::exception&) {  // an odd one (no code, a __str__ that raises): not recovered from
        PyErr_Clear();
      }
      Keep(std::move(e), s);
      return s;
    }
  }

  // The callbacks are bound methods of the MonitoredSession that holds this
  // object (through weak references: python/actorflow/train/monitored_session.py);
  // once ended they are dropped (the GIL held).
  void DropCallbacks() {
    args_.chief_prepare = args_.on_session_ready = args_.on_session_closed = args_.on_recovery = py::none();
  }

  void SetCurrent(Session* session) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = session;
  }
  Session* Enter() {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_) ++in_flight_;
    return current_;
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--in_flight_ == 0) cv_.notify_all();
  }
  // The supervisor closed its session and is about to destroy it: no raw run
  // may start in it or still be in it (each ends Cancelled; its containers
  // were emptied before it closed), then Python stops the threads that ran in it.
  void Retire() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      current_ = nullptr;
      cv_.wait(lock, [&] { return in_flight_ == 0; });
    }
    Status s = Call(&SupervisorArgs::on_session_closed);
    if (!s.ok()) {  // nothing to return it to: the session is gone either way
      py::gil_scoped_acquire gil;
      if (pending_ && pending_->error) pending_->error->discard_as_unraisable("MonitoredSession's on_session_closed");
      if (pending_) *pending_ = Pending();
    }
  }

  SupervisorArgs args_;
  std::mutex call_mu_;  // one Start, Run, Recover or Finish at a time; sup_'s end
  std::atomic<bool> in_call_{false};
  std::atomic<std::thread::id> owner_{};  // the thread in the call
  std::atomic<int64_t> global_step_{0};
  std::atomic<int> recoveries_{0};
  std::mutex mu_;  // current_ and in_flight_
  std::condition_variable cv_;
  Session* current_ = nullptr;
  int in_flight_ = 0;
  std::atomic<bool> ended_{false};
  Pending* pending_ = nullptr;  // the call in progress's (set under call_mu_, read with the GIL by its callbacks)
  std::unique_ptr<TrainingSupervisor> sup_;  // last: destroyed first, its callbacks finding the rest still here
};

}  // namespace

void BindSupervisor(py::module_& m) {
  py::class_<PySupervisor>(m, "Supervisor")
      .def(py::init([](const Scope& graph, const std::string& target, const std::vector<std::string>& device_filters,
                       bool is_chief, const std::string& init_op, const std::string& local_init_op,
                       const std::vector<std::string>& ready_checks, const std::string& global_step,
                       int max_recoveries, int64_t backoff_ms, int64_t ready_poll_ms, int64_t ready_timeout_ms,
                       int64_t step_timeout_ms, py::object chief_prepare, py::object on_session_ready,
                       py::object on_session_closed, py::object on_recovery) {
             SupervisorArgs a;
             a.target = target;
             a.device_filters = device_filters;
             a.is_chief = is_chief;
             a.init_op = init_op;
             a.local_init_op = local_init_op;
             a.ready_checks = ready_checks;
             a.global_step = global_step;
             a.max_recoveries = max_recoveries;
             a.backoff_ms = backoff_ms;
             a.ready_poll_ms = ready_poll_ms;
             a.ready_timeout_ms = ready_timeout_ms;
             a.step_timeout_ms = step_timeout_ms;
             a.chief_prepare = std::move(chief_prepare);
             a.on_session_ready = std::move(on_session_ready);
             a.on_session_closed = std::move(on_session_closed);
             a.on_recovery = std::move(on_recovery);
             return std::make_unique<PySupervisor>(graph, std::move(a));
           }),
           py::arg("graph"), py::arg("target"), py::arg("device_filters"), py::arg("is_chief"), py::arg("init_op"),
           py::arg("local_init_op"), py::arg("ready_checks"), py::arg("global_step"), py::arg("max_recoveries") = 5,
           py::arg("backoff_ms") = 500, py::arg("ready_poll_ms") = 250, py::arg("ready_timeout_ms") = 7200000,
           py::arg("step_timeout_ms") = 0, py::arg("chief_prepare") = py::none(),
           py::arg("on_session_ready") = py::none(), py::arg("on_session_closed") = py::none(),
           py::arg("on_recovery") = py::none())
      .def("start", &PySupervisor::Start)
      .def("run", &PySupervisor::Run, py::arg("feeds"), py::arg("fetches"), py::arg("targets"),
           py::arg("timeout_ms") = 0)
      .def("raw_run", &PySupervisor::RawRun, py::arg("feeds"), py::arg("fetches"), py::arg("targets"),
           py::arg("timeout_ms") = 0)
      .def("recover", &PySupervisor::Recover, py::arg("code"), py::arg("message"))
      .def("finish", &PySupervisor::Finish)
      .def("end", &PySupervisor::End)
      .def("reset", &PySupervisor::Reset)
      .def_property_readonly("global_step", &PySupervisor::global_step)
      .def_property_readonly("recoveries", &PySupervisor::recoveries)
      .def_property_readonly("ended", &PySupervisor::ended);
}

}  // namespace python
}  // namespace actorflow
