#include "actorflow/client/train/supervisor.hpp"

#include <algorithm>
#include <thread>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {

TrainingSupervisor::Graph TrainingSupervisor::Prepare(const Scope& scope, const SaverOptions& saver,
                                                      bool with_checkpoints, const Operation& train) {
  Graph g;
  g.init_op = GlobalVariablesInitializer(scope.WithOpName("supervisor/init")).node()->name();
  g.local_init_op = LocalVariablesInitializer(scope.WithOpName("supervisor/init_local")).node()->name();
  for (const Variable& v : GlobalVariables(scope)) {
    Output ready = ops::IsVariableInitialized(scope.WithDevice(v.ref.node()->requested_device())
                                                  .WithOpName("supervisor/ready/" + v.name),
                                              v.ref);
    if (ready.valid()) g.ready_checks.push_back(ready.name());
  }
  const Variable step = GetOrCreateGlobalStep(scope);
  g.global_step = step.value.name();
  if (train.node()) {
    g.train = train.node()->name();
    Output after = ReadVariableNow(
        scope.WithDevice(step.ref.node()->requested_device()).WithOpName("supervisor/global_step_after_train")
            .WithControlDependencies({train}),
        step);
    if (after.valid()) g.step_after_train = after.name();
  }
  if (with_checkpoints) g.saver = std::make_shared<Saver>(scope, std::vector<Variable>{}, saver);
  return g;
}

TrainingSupervisor::TrainingSupervisor(proto::GraphDef graph, Graph g, SupervisorOptions options)
    : graph_(std::move(graph)), g_(std::move(g)), options_(std::move(options)) {}

TrainingSupervisor::~TrainingSupervisor() {
  if (!session_) return;
  (void)CloseSession();
  if (options_.on_session_closed) options_.on_session_closed();
}

Status TrainingSupervisor::CloseSession() {
  Status s = session_->Close();  // its steps in flight end (Cancelled)
  // A closed session resets nothing: a fresh one, which needs no graph for it.
  if (!options_.reset_containers.empty()) (void)Session(options_.session).ResetContainers(options_.reset_containers);
  return s;
}

Status TrainingSupervisor::Pause(std::chrono::milliseconds d) {
  if (options_.keep_waiting) AF_RETURN_IF_ERROR(options_.keep_waiting());
  std::this_thread::sleep_for(d);
  return Status::OK();
}

Status TrainingSupervisor::StepValue(const Tensor& t) {
  if (t.dtype() == DT_INT64 && t.NumElements() == 1) {
    global_step_ = t.scalar<int64_t>();
  } else if (t.dtype() == DT_INT32 && t.NumElements() == 1) {
    global_step_ = t.scalar<int32_t>();
  } else {
    return errors::InvalidArgument("the global step ", g_.global_step, " is ", DataTypeString(t.dtype()), "[",
                                   t.NumElements(), " elements], not an int32 or int64 scalar");
  }
  return Status::OK();
}

bool TrainingSupervisor::Recoverable(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kAborted;
}

Status TrainingSupervisor::ReadGlobalStep() {
  if (g_.global_step.empty()) return Status::OK();  // a model without one
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session_->Run(options_.run, {}, {g_.global_step}, {}, &out));
  return StepValue(out[0]);
}

Status TrainingSupervisor::WaitReady() {
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  Status last;
  for (;;) {
    std::vector<Tensor> out;
    last = session_->Run(options_.run, {}, g_.ready_checks, {}, &out);
    std::string missing;  // the first variables not initialized, for the message
    int unready = 0;
    auto note = [&](const std::string& name) {
      if (++unready <= 3) missing += (missing.empty() ? "" : ", ") + name;
    };
    for (size_t i = 0; last.ok() && i < out.size(); ++i) {
      if (out[i].dtype() == DT_STRING) {  // report_uninitialized_variables: their names
        const std::string* names = out[i].data<std::string>();
        for (int64_t j = 0; j < out[i].NumElements(); ++j) note(names[j]);
      } else if (!out[i].scalar<bool>()) {
        note(g_.ready_checks[i]);
      }
    }
    if (last.ok() && unready == 0) return Status::OK();
    if (!last.ok() && !Recoverable(last)) return last;
    if (std::chrono::steady_clock::now() + options_.ready_poll > deadline)
      return errors::DeadlineExceeded("the model was not ready within ", options_.ready_timeout.count(),
                                      " ms (the chief initializes or restores it)",
                                      last.ok() ? ": " + std::to_string(unready) + " variables uninitialized (" +
                                                      missing + (unready > 3 ? ", ..." : "") + ")"
                                                : ": " + last.ToString());
    AF_RETURN_IF_ERROR(Pause(options_.ready_poll));
  }
}

Status TrainingSupervisor::NewSession() {
  if (session_) {
    (void)CloseSession();
    if (options_.on_session_closed) options_.on_session_closed();
    session_.reset();
  }
  session_ = std::make_unique<Session>(options_.session);
  AF_RETURN_IF_ERROR(session_->Create(graph_));
  std::vector<Tensor> out;
  if (options_.is_chief && options_.chief_prepare) {
    AF_RETURN_IF_ERROR(options_.chief_prepare(session_.get()));
  } else if (options_.is_chief) {
    bool restored = false;
    if (g_.saver) AF_RETURN_IF_ERROR(g_.saver->RestoreLatest(session_.get(), &restored));
    if (!restored) AF_RETURN_IF_ERROR(session_->Run(options_.run, {}, {}, {g_.init_op}, &out));
  } else {
    AF_RETURN_IF_ERROR(WaitReady());
  }
  if (!g_.local_init_op.empty()) AF_RETURN_IF_ERROR(session_->Run(options_.run, {}, {}, {g_.local_init_op}, &out));
  for (const auto& op : options_.after_init) AF_RETURN_IF_ERROR(session_->Run(options_.run, {}, {}, {op}, &out));
  if (options_.is_chief)
    for (const auto& op : options_.chief_after_init)
      AF_RETURN_IF_ERROR(session_->Run(options_.run, {}, {}, {op}, &out));
  if (options_.on_session_ready) AF_RETURN_IF_ERROR(options_.on_session_ready(session_.get()));
  return ReadGlobalStep();
}

Status TrainingSupervisor::Start() {
  Status s = NewSession();
  // The cluster may still be coming up (or a task restarting): recover as from a failed step.
  while (!s.ok() && Recoverable(s) && recoveries_ < options_.max_recoveries) {
    ++recoveries_;
    if (options_.on_recovery) options_.on_recovery(s, recoveries_);
    AF_RETURN_IF_ERROR(Pause(options_.backoff));
    s = NewSession();
  }
  return s;
}

Status TrainingSupervisor::Recover(const Status& why) {
  if (finished_) return errors::FailedPrecondition("training is finished: the supervisor recovers no more");
  if (!session_) return errors::FailedPrecondition("TrainingSupervisor::Start first");
  if (!Recoverable(why)) return why;
  Status r = why;
  while (Recoverable(r)) {
    if (recoveries_ >= options_.max_recoveries)
      return options_.max_recoveries == 0 ? r  // none allowed: the error as it is
                                          : Status(r.code(), "giving up after " + std::to_string(recoveries_) +
                                                                 " recoveries: " + r.message());
    ++recoveries_;
    if (options_.on_recovery) options_.on_recovery(r, recoveries_);
    AF_RETURN_IF_ERROR(Pause(options_.backoff));
    r = NewSession();
  }
  return r;
}

Status TrainingSupervisor::Run(const RunOptions& step_options,
                               const std::vector<std::pair<std::string, Tensor>>& feeds,
                               const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                               std::vector<Tensor>* outputs) {
  if (finished_) return errors::FailedPrecondition("training is finished: the supervisor runs no more steps");
  if (!session_) return errors::FailedPrecondition("TrainingSupervisor::Start first");
  // A step running the train op fetches the global step as it is after it.
  const bool fused = !g_.step_after_train.empty() &&
                     std::find(targets.begin(), targets.end(), g_.train) != targets.end();
  std::vector<std::string> all_fetches = fetches;
  if (fused) all_fetches.push_back(g_.step_after_train);
  // The step's feeds, made anew by feeds_again before each run after the first.
  const std::vector<std::pair<std::string, Tensor>>* step_feeds = &feeds;
  std::vector<std::pair<std::string, Tensor>> renewed;
  // A recoverable error of feeds_again stands for the step's (no run with
  // stale feeds): it syncs or recovers as a failed step would.
  Status pending;
  auto feed_again = [&]() -> Status {
    if (!options_.feeds_again) return Status::OK();
    renewed = feeds;
    Status f = options_.feeds_again(session_.get(), &renewed);
    step_feeds = &renewed;
    if (!Recoverable(f)) return f;
    pending = f;
    return Status::OK();
  };
  for (;;) {
    Status s = pending.ok() ? session_->Run(step_options, *step_feeds, all_fetches, targets, outputs) : pending;
    pending = Status::OK();
    if (s.ok() && fused) {
      s = StepValue(outputs->back());
      outputs->pop_back();
    } else if (s.ok() && options_.read_global_step_each_step) {
      s = ReadGlobalStep();
    }
    if (s.ok() && options_.is_chief && g_.saver) s = g_.saver->MaybeSave(session_.get(), global_step_);
    if (s.ok()) resyncs_since_step_ = 0;
    if (s.ok() || !Recoverable(s)) return s;
    // Elastic: the survivors sync their state in this session, then the step
    // again; after max_resyncs_per_failure syncs without a step that went
    // through, or a sync that fails, a recovery as without it (a new session
    // finds the cluster again).
    if (options_.elastic_resync && resyncs_since_step_ < options_.max_resyncs_per_failure) {
      if (resyncs_since_step_++ > 0) std::this_thread::sleep_for(options_.backoff / 5);
      Status synced = options_.elastic_resync(session_.get(), s);
      if (synced.ok()) synced = ReadGlobalStep();
      if (synced.ok()) {
        ++resyncs_;
        if (options_.last_step > 0 && global_step_ >= options_.last_step)
          return errors::OutOfRange("training is over: the sync brought global step ", global_step_, " (the last is ",
                                    options_.last_step, ")");
        AF_RETURN_IF_ERROR(feed_again());
        continue;
      }
      // The group changed again during the sync (a joiner, another loss):
      // the step again, whose failure syncs again, within the bound.
      if (Recoverable(synced)) {
        AF_RETURN_IF_ERROR(feed_again());
        continue;
      }
    }
    resyncs_since_step_ = 0;
    // Recover: a new session, restored by the chief (or waited for), then the step again.
    AF_RETURN_IF_ERROR(Recover(s));
    AF_RETURN_IF_ERROR(feed_again());
  }
}

Status TrainingSupervisor::Finish() {
  if (finished_) return Status::OK();
  finished_ = true;
  if (!session_) return Status::OK();
  Status s;
  if (options_.is_chief && g_.saver) {
    s = ReadGlobalStep();
    if (s.ok()) s = g_.saver->Save(session_.get(), global_step_);
  }
  Status closed = CloseSession();
  if (options_.on_session_closed) options_.on_session_closed();
  return s.ok() ? closed : s;
}

}  // namespace actorflow
