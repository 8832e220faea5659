#include "actorflow/master/local_master.hpp"

#include <caf/all.hpp>

#include <optional>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/ids.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/master/partition_registry.hpp"
#include "actorflow/master/step_runner.hpp"
#include "actorflow/master/worker_sessions.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

LocalMaster::LocalMaster(SessionOptions options, std::string handle)
    : LocalMaster(std::move(options), std::move(handle), ClusterSpec(), TaskId()) {}

LocalMaster::LocalMaster(SessionOptions options, std::string handle, ClusterSpec cluster, TaskId task)
    : runtime_(options.runtime ? options.runtime : Runtime::Default()),
      options_(options),
      cluster_(std::move(cluster)),
      task_(std::move(task)),
      handle_(std::move(handle)) {}

LocalMaster::~LocalMaster() { Close(); }

Status LocalMaster::Connect() {
  if (closed_) return errors::Cancelled("Session has been closed");
  if (view_) return Status::OK();
  // By default a session of a cluster with parameter servers uses them and
  // its own task, not the other workers (TensorFlow users had to learn to set
  // device_filters so; TF#13337): a worker that is down or busy elsewhere
  // does not hold this one up.
  std::vector<std::string> filters = options_.device_filters;
  if (filters.empty() && cluster_.num_tasks("ps") > 0) filters = {"/job:ps", task_.name()};
  const auto deadline = std::chrono::milliseconds(options_.device_find_timeout_ms);
  std::unique_ptr<ClusterView> view;
  AF_RETURN_IF_ERROR(ClusterView::Find(runtime_, cluster_, task_, filters, deadline, &view, options_.rendezvous));
  std::unique_ptr<WorkerSessions> sessions;
  AF_RETURN_IF_ERROR(WorkerSessions::Open(runtime_, *view, handle_, deadline, &sessions));
  view_ = std::move(view);
  sessions_ = std::move(sessions);
  registry_ = std::make_unique<PartitionRegistry>(runtime_, view_.get(), sessions_.get(), options_, &cost_model_);
  runner_ = std::make_unique<StepRunner>(runtime_, view_.get(), &cost_model_);
  return Status::OK();
}

Status LocalMaster::Create(const proto::GraphDef& graph) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::FailedPrecondition("Session has been closed");
  if (created_) return errors::AlreadyExists("Session already has a graph; use Extend to add nodes");
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(graph, &g));
  AF_RETURN_IF_ERROR(Connect());
  AF_RETURN_IF_ERROR(graph_.CopyFrom(g));
  created_ = true;
  return Status::OK();
} catch (...) {  // out of memory (or a bug) in the client: a Status, never an exception
  return CurrentExceptionStatus("Session::Create");
}

Status LocalMaster::Extend(const proto::GraphDef& graph) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::FailedPrecondition("Session has been closed");
  proto::GraphDef merged;
  graph_.ToGraphDef(&merged);
  for (const auto& n : graph.node()) *merged.add_node() = n;
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(merged, &g));
  AF_RETURN_IF_ERROR(Connect());  // Extend may come first (a remote client's MasterExtendRequest)
  AF_RETURN_IF_ERROR(graph_.CopyFrom(g));
  created_ = true;
  // Signatures still being prepared saw the old graph: later Runs start afresh
  // (failed ones may now succeed; finished ones stay valid, the graph only grew).
  for (auto it = executables_.begin(); it != executables_.end();) {
    if (it->second.future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) it = executables_.erase(it);
    else ++it;
  }
  return Status::OK();
} catch (...) {  // out of memory (or a bug) in the client: a Status, never an exception
  return CurrentExceptionStatus("Session::Extend");
}

std::map<std::string, std::string> LocalMaster::LastPlacement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_ ? registry_->LastPlacement() : std::map<std::string, std::string>();
}

Status LocalMaster::GetExecutable(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                  const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                  std::shared_ptr<const Executable>* out) {
  std::string key;
  for (const auto& f : feeds) {
    key += f.first;
    key += '\x1f';
  }
  key += '\x1e';
  for (const auto& f : fetches) {
    key += f;
    key += '\x1f';
  }
  key += '\x1e';
  for (const auto& t : targets) {
    key += t;
    key += '\x1f';
  }

  // A repeated signature (the common case) only looks its entry up; the
  // graph copy and the promise are made by the first caller of a signature.
  ExecutableFuture future;
  std::optional<std::promise<StatusOr<std::shared_ptr<const Executable>>>> promise;
  std::optional<Graph> graph;
  bool prepare = false;  // this caller is the first with this signature
  uint64_t entry_id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return errors::Cancelled("Session has been closed");
    if (!created_) return errors::FailedPrecondition("Session has no graph: call Create first");
    auto it = executables_.find(key);
    if (it != executables_.end() && it->second.ready) {  // the common case: prepared before
      *out = it->second.ready;
      return Status::OK();
    }
    if (it != executables_.end()) {
      future = it->second.future;
    } else {
      graph.emplace();
      AF_RETURN_IF_ERROR(graph->CopyFrom(graph_));
      promise.emplace();
      future = promise->get_future().share();
      entry_id = next_entry_id_++;
      executables_.emplace(key, Entry{future, entry_id, nullptr});
      prepare = true;
    }
  }
  if (prepare) {
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    std::shared_ptr<const Executable> exe;
    Status s;
    try {
      s = registry_->Prepare(&*graph, feed_names, fetches, targets, &exe);
    } catch (const std::bad_alloc&) {
      s = errors::ResourceExhausted("out of memory preparing the graph for this Run");
    } catch (const std::exception& e) {
      s = errors::Internal("preparing the graph for this Run threw: ", e.what());
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {  // closed while we prepared: release what we registered (the workers may have refused)
      if (s.ok()) registry_->Deregister(*exe);
      s = errors::Cancelled("Session has been closed");
    }
    auto it = executables_.find(key);  // ours, unless Close or Extend dropped it meanwhile
    if (it != executables_.end() && it->second.id == entry_id) {
      if (s.ok()) it->second.ready = exe;
      else executables_.erase(it);
    }
    promise->set_value(s.ok() ? StatusOr<std::shared_ptr<const Executable>>(exe)
                              : StatusOr<std::shared_ptr<const Executable>>(s));
  }
  const auto& result = future.get();
  AF_RETURN_IF_ERROR(result.status());
  *out = result.value();
  return Status::OK();
}

Status LocalMaster::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                        const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                        std::vector<Tensor>* outputs, RunMetadata* metadata) try {
  if (outputs) outputs->clear();  // feeds hold their own references: safe even if they came from it
  if (fetches.empty() && targets.empty()) return errors::InvalidArgument("Run needs at least one fetch or target");
  if (options.timeout_in_ms < 0 || options.timeout_in_ms > RunOptions::kMaxTimeoutMs)
    return errors::InvalidArgument("timeout_in_ms must be in [0, ", RunOptions::kMaxTimeoutMs, "], got ",
                                   options.timeout_in_ms);
  std::shared_ptr<const Executable> exe;
  AF_RETURN_IF_ERROR(GetExecutable(feeds, fetches, targets, &exe));
  std::vector<Tensor> args;
  args.reserve(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Tensor& t = feeds[i].second;
    if (!t.IsInitialized()) return errors::InvalidArgument("Feed '", feeds[i].first, "' is an uninitialized tensor");
    if (t.dtype() != exe->info.feed_types[i])
      return errors::InvalidArgument("Feed '", feeds[i].first, "' has dtype ", DataTypeString(t.dtype()),
                                     " but the graph expects ", DataTypeString(exe->info.feed_types[i]));
    if (!exe->info.feed_shapes[i].IsCompatibleWith(t.shape()))
      return errors::InvalidArgument("Feed '", feeds[i].first, "' has shape ", t.shape().DebugString(),
                                     " which is incompatible with the placeholder's shape ",
                                     exe->info.feed_shapes[i].DebugString());
    if (exe->info.feed_arg_index[i] >= 0) args.push_back(t);  // in order: indices are dense
  }
  Status s = runner_->Run(*exe, options, std::move(args), outputs, metadata);
  if (!s.ok()) {
    // Closed while the step was under way: its partitions may be gone before it reached them (NotFound) or
    // ended under it; either way it was cancelled by the Close, as TensorFlow's session says.
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ && s.code() != Code::kCancelled)
      return errors::Cancelled("Session has been closed while the step ran (", s.ToString(), ")");
  }
  return s;
} catch (...) {  // out of memory (or a bug) in the client: a Status, never an exception
  return CurrentExceptionStatus("Session::Run");
}

Status LocalMaster::Close() {
  std::map<std::string, Entry> exes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    exes.swap(executables_);
  }
  for (const auto& [key, entry] : exes) {
    const auto& future = entry.future;
    // Signatures still being prepared deregister themselves when they see closed_.
    if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    const auto& result = future.get();
    if (result.ok()) registry_->Deregister(*result.value());
  }
  // Once per task: its worker session drops the session's graphs on its devices.
  if (sessions_) sessions_->Close();
  return Status::OK();
}

Status LocalMaster::ResetContainers(const std::vector<std::string>& containers) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    AF_RETURN_IF_ERROR(Connect());
  }
  for (const auto& t : view_->tasks()) {  // every task's variables
    ResetContainersResponse resp;
    // This process's container is waited for as long as it takes; another task's within the find deadline.
    const auto wait = std::chrono::milliseconds(t.local ? 0 : options_.device_find_timeout_ms);
    Status s = runtime_->channels()->Ask(t.status.container, ResetContainersRequest{containers}, wait, &resp);
    if (s.ok()) s = resp.status;
    if (!s.ok()) return t.local ? s : Status(s.code(), "resetting containers on " + t.name + ": " + s.message());
  }
  return Status::OK();
}

size_t LocalMaster::num_cached_executables() const {
  std::lock_guard<std::mutex> lock(mu_);
  return executables_.size();
}

}  // namespace actorflow
