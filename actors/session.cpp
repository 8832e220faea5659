#include "actors/session.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <optional>

#include "actors/client_channel.hpp"
#include "actors/messages.hpp"
#include "actors/runtime.hpp"
#include "core/exception_status.hpp"
#include "graph/graph_def_io.hpp"
#include "graph/partition.hpp"
#include "graph/placer.hpp"
#include "graph/subgraph.hpp"
#include "devices/device.hpp"
#include "devices/device_manager.hpp"

namespace actorflow {

namespace {
std::atomic<int64_t> g_next_step_id{1};

// Waits this much longer than a step's own deadline for the device actor's
// answer before giving up on it (the actor answers at the deadline itself).
constexpr auto kReplyGrace = std::chrono::seconds(30);
}  // namespace

struct Session::Executable {
  // One partition per device the signature runs on; the first is the only
  // one when everything runs on one device.
  struct Part {
    int device = 0;
    uint64_t graph_handle = 0;
    std::vector<int> arg_indices;     // per argument of the partition: the step's argument index
    std::vector<int> retval_indices;  // per result of the partition: the fetch index
  };
  std::vector<Part> parts;
  int device = 0;             // parts[0]'s, for the one-partition fast path
  uint64_t graph_handle = 0;  // parts[0]'s
  FeedFetchInfo info;
  std::vector<std::string> feed_names;
  // A moving average of this signature's step latency (ns): short steps are
  // waited for by spinning (see SpinBudget).
  mutable std::atomic<int64_t> typical_ns{0};
};

namespace {
// Steps that typically take less than this are waited for by spinning, up to
// twice their typical time: on virtual machines waking a sleeping thread
// costs 15-40 us, as much as such a step. Longer steps are slept through.
constexpr int64_t kSpinForStepsUnderNs = 50'000;

// Traced steps teach the placer's cost model what each node costs where.
void RecordCosts(const std::vector<NodeExecStats>& stats, CostModel* model) {
  for (const auto& st : stats)
    if (!st.device.empty()) model->Record(st.node, st.device, static_cast<double>(st.end_us - st.start_us));
}

// Whether partition error `a` was caused by error `b` of another partition:
// `a` is Cancelled and `b` is not, or `a` is a _Recv failing with the step's
// abort status, which the executor wraps as "node '...' (op '_Recv'): " + b.
bool DerivedFrom(const Status& a, const Status& b) {
  if (errors::IsCancelled(a)) return !errors::IsCancelled(b);
  const std::string& am = a.message();
  const std::string& bm = b.message();
  return a.code() == b.code() && am.size() > bm.size() && am.compare(am.size() - bm.size(), bm.size(), bm) == 0 &&
         am.find("(op '_Recv'): ") != std::string::npos;
}

std::chrono::nanoseconds SpinBudget(int64_t typical_ns) {
  if (typical_ns <= 0 || typical_ns >= kSpinForStepsUnderNs) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(2 * typical_ns);
}
}  // namespace

namespace {
std::atomic<uint64_t> g_next_session{1};
}  // namespace

Session::Session(SessionOptions options)
    : runtime_(options.runtime ? options.runtime : Runtime::Default()),
      options_(options),
      handle_("session_" + std::to_string(g_next_session.fetch_add(1))) {}

Session::~Session() { Close(); }

Status Session::Create(const proto::GraphDef& graph) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::FailedPrecondition("Session has been closed");
  if (created_) return errors::AlreadyExists("Session already has a graph; use Extend to add nodes");
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(graph, &g));
  AF_RETURN_IF_ERROR(graph_.CopyFrom(g));
  created_ = true;
  return Status::OK();
} catch (...) {  // out of memory (or a bug) in the client: a Status, never an exception
  return CurrentExceptionStatus("Session::Create");
}

Status Session::Extend(const proto::GraphDef& graph) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::FailedPrecondition("Session has been closed");
  proto::GraphDef merged;
  graph_.ToGraphDef(&merged);
  for (const auto& n : graph.node()) *merged.add_node() = n;
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(merged, &g));
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

Status Session::Prepare(Graph* g, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets, std::shared_ptr<const Executable>* out) {
  auto exe = std::make_shared<Executable>();
  AF_RETURN_IF_ERROR(RewriteGraphForExecution(g, feeds, fetches, targets, &exe->info));
  AF_RETURN_IF_ERROR(OptimizeGraph(g, runtime_->devices()[0], options_.graph_options));  // folds on the CPU device
  exe->feed_names = feeds;
  PlacerOptions placer;
  placer.strategy = options_.placement;
  placer.allow_soft_placement = options_.allow_soft_placement;
  placer.cost_model = &cost_model_;
  std::map<std::string, std::string> stateful;  // a snapshot: placing runs without the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    stateful = stateful_placements_;
  }
  placer.stateful_placements = &stateful;
  AF_RETURN_IF_ERROR(PlaceGraph(g, runtime_->device_manager(), placer));
  {
    std::map<std::string, std::string> placement;
    for (Node* n : g->nodes()) placement[n->name()] = n->assigned_device();
    std::lock_guard<std::mutex> lock(mu_);
    for (Node* n : g->nodes())
      if (n->is_stateful()) stateful_placements_[n->name()] = n->assigned_device();
    last_placement_ = std::move(placement);
  }
  std::vector<GraphPartition> partitions;
  AF_RETURN_IF_ERROR(PartitionGraph(*g, options_.partitioning, &partitions));
  if (partitions.empty()) return errors::Internal("the graph has no nodes left to run");
  // Register every partition; on an error, release those registered.
  for (auto& part : partitions) {
    Executable::Part p;
    p.device = runtime_->FindDevice(part.device);
    if (p.device < 0) return errors::Internal("placed on unknown device ", part.device);
    p.arg_indices = part.arg_indices;
    p.retval_indices = part.retval_indices;
    RegisterGraphRequest req;
    req.session_handle = handle_;
    if (!part.graph.SerializeToString(&req.graph_def))
      return errors::InvalidArgument("the pruned graph cannot be serialized (over 2 GB?)");
    RegisterGraphResponse resp;
    Status s = runtime_->channels()->Ask(runtime_->device_actor(p.device), std::move(req), std::chrono::minutes(5),
                                         &resp);
    if (s.ok()) s = resp.status;
    if (!s.ok()) {
      Deregister(*exe);
      return s;
    }
    p.graph_handle = resp.graph_handle;
    exe->parts.push_back(std::move(p));
  }
  exe->device = exe->parts[0].device;
  exe->graph_handle = exe->parts[0].graph_handle;
  *out = exe;
  return Status::OK();
}

void Session::Deregister(const Executable& exe) {
  for (const auto& p : exe.parts) caf::anon_send(runtime_->device_actor(p.device), DeregisterGraph{p.graph_handle});
}

std::map<std::string, std::string> Session::LastPlacement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_placement_;
}

Status Session::GetExecutable(const std::vector<std::pair<std::string, Tensor>>& feeds,
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
    if (it != executables_.end()) {
      future = it->second.future;
    } else {
      graph.emplace();
      AF_RETURN_IF_ERROR(graph->CopyFrom(graph_));
      promise.emplace();
      future = promise->get_future().share();
      entry_id = next_entry_id_++;
      executables_.emplace(key, Entry{future, entry_id});
      prepare = true;
    }
  }
  if (prepare) {
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    std::shared_ptr<const Executable> exe;
    Status s;
    try {
      s = Prepare(&*graph, feed_names, fetches, targets, &exe);
    } catch (const std::bad_alloc&) {
      s = errors::ResourceExhausted("out of memory preparing the graph for this Run");
    } catch (const std::exception& e) {
      s = errors::Internal("preparing the graph for this Run threw: ", e.what());
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (s.ok() && closed_) {  // closed while we prepared: release what we registered
      Deregister(*exe);
      s = errors::Cancelled("Session has been closed");
    }
    auto it = executables_.find(key);  // ours, unless Close or Extend dropped it meanwhile
    if (!s.ok() && it != executables_.end() && it->second.id == entry_id) executables_.erase(it);
    promise->set_value(s.ok() ? StatusOr<std::shared_ptr<const Executable>>(exe)
                              : StatusOr<std::shared_ptr<const Executable>>(s));
  }
  const auto& result = future.get();
  AF_RETURN_IF_ERROR(result.status());
  *out = result.value();
  return Status::OK();
}

Status Session::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs, RunMetadata* metadata) try {
  if (outputs) outputs->clear();  // feeds hold their own references: safe even if they came from it
  if (fetches.empty() && targets.empty()) return errors::InvalidArgument("Run needs at least one fetch or target");
  if (options.timeout_in_ms < 0 || options.timeout_in_ms > RunOptions::kMaxTimeoutMs)
    return errors::InvalidArgument("timeout_in_ms must be in [0, ", RunOptions::kMaxTimeoutMs, "], got ",
                                   options.timeout_in_ms);
  std::shared_ptr<const Executable> exe;
  AF_RETURN_IF_ERROR(GetExecutable(feeds, fetches, targets, &exe));
  RunStepRequest req;
  req.graph_handle = exe->graph_handle;
  req.step_id = g_next_step_id.fetch_add(1, std::memory_order_relaxed);
  req.timeout_ms = options.timeout_in_ms;
  req.collect_stats = options.collects_step_stats();
  req.args.reserve(feeds.size());
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
    if (exe->info.feed_arg_index[i] >= 0) req.args.push_back(t);  // in order: indices are dense
  }
  if (exe->parts.size() > 1) return RunPartitions(*exe, options, std::move(req.args), outputs, metadata);
  std::chrono::milliseconds wait{0};  // none: the step runs as long as it needs
  if (options.timeout_in_ms > 0) wait = std::chrono::milliseconds(options.timeout_in_ms) + kReplyGrace;
  RunStepResponse resp;
  const auto t0 = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point answered;
  AF_RETURN_IF_ERROR(runtime_->channels()->Ask(runtime_->device_actor(exe->device), std::move(req), wait, &resp,
                                               SpinBudget(exe->typical_ns.load(std::memory_order_relaxed)),
                                               &answered));
  // The step's own latency, up to its answer: were it measured after a sleeping
  // caller woke, one sleep would add a wake-up to the average, push it past the
  // spin limit, and every later step would sleep and pay a wake-up too.
  const int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(answered - t0).count();
  const int64_t typical = exe->typical_ns.load(std::memory_order_relaxed);
  exe->typical_ns.store(typical == 0 ? took : (7 * typical + took) / 8, std::memory_order_relaxed);
  if (!resp.stats.empty()) RecordCosts(resp.stats, &cost_model_);
  if (metadata) metadata->step_stats = std::move(resp.stats);
  AF_RETURN_IF_ERROR(resp.status);
  if (resp.retvals.size() != fetches.size())
    return errors::Internal("step returned ", resp.retvals.size(), " tensors for ", fetches.size(), " fetches");
  if (outputs) *outputs = std::move(resp.retvals);
  return Status::OK();
} catch (...) {  // out of memory (or a bug) in the client: a Status, never an exception
  return CurrentExceptionStatus("Session::Run");
}

Status Session::RunPartitions(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                              std::vector<Tensor>* outputs, RunMetadata* metadata) {
  const int64_t step_id = g_next_step_id.fetch_add(1, std::memory_order_relaxed);
  std::chrono::milliseconds wait{0};
  if (options.timeout_in_ms > 0) wait = std::chrono::milliseconds(options.timeout_in_ms) + kReplyGrace;
  ChannelPool* channels = runtime_->channels();
  std::vector<std::unique_ptr<ClientChannel>> started;
  Status status;
  for (const auto& part : exe.parts) {
    RunStepRequest req;
    req.graph_handle = part.graph_handle;
    req.step_id = step_id;
    req.timeout_ms = options.timeout_in_ms;
    req.collect_stats = options.collects_step_stats();
    req.multi_partition = true;
    req.args.reserve(part.arg_indices.size());
    for (int a : part.arg_indices) req.args.push_back(args[a]);
    auto ch = channels->Acquire();
    status = ch->Start(runtime_->device_actor(part.device), caf::make_message(std::move(req)));
    if (!status.ok()) break;
    started.push_back(std::move(ch));
  }
  if (!status.ok()) caf::anon_send(runtime_->rendezvous_actor(), RendezvousAbort{step_id, status});
  // Every started partition answers (a failed one aborts the step at the
  // rendezvous, so the others' Recvs fail rather than wait).
  std::vector<Tensor> results(exe.info.fetch_types.size());
  std::vector<NodeExecStats> stats;
  for (size_t i = 0; i < started.size(); ++i) {
    caf::message reply;
    Status s = started[i]->Wait(wait, &reply);
    RunStepResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (!errors::IsDeadlineExceeded(s)) channels->Release(std::move(started[i]));
    if (s.ok()) s = resp.status;
    // The root cause wins over what it caused elsewhere, whichever partition
    // answers first: the Cancelled, and the _Recv errors that carry it.
    if (!s.ok() && (status.ok() || DerivedFrom(status, s))) status = s;
    if (!s.ok() && !errors::IsCancelled(s))
      caf::anon_send(runtime_->rendezvous_actor(), RendezvousAbort{step_id, s});
    for (auto& st : resp.stats) stats.push_back(std::move(st));
    const auto& part = exe.parts[i];
    if (s.ok() && resp.retvals.size() != part.retval_indices.size())
      status = errors::Internal("partition on ", runtime_->devices()[part.device]->name(), " returned ",
                                resp.retvals.size(), " tensors for ", part.retval_indices.size(), " results");
    for (size_t r = 0; s.ok() && r < resp.retvals.size() && r < part.retval_indices.size(); ++r)
      results[part.retval_indices[r]] = std::move(resp.retvals[r]);
  }
  caf::anon_send(runtime_->rendezvous_actor(), RendezvousStepDone{step_id});
  if (!stats.empty()) RecordCosts(stats, &cost_model_);
  if (metadata) metadata->step_stats = std::move(stats);
  AF_RETURN_IF_ERROR(status);
  if (outputs) *outputs = std::move(results);
  return Status::OK();
}

Status Session::Close() {
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
    if (result.ok()) Deregister(*result.value());
  }
  for (size_t d = 0; d < runtime_->devices().size(); ++d)
    caf::anon_send(runtime_->device_actor(static_cast<int>(d)), CloseSession{handle_});
  return Status::OK();
}

Status Session::ResetContainers(const std::vector<std::string>& containers) {
  ResetContainersResponse resp;
  AF_RETURN_IF_ERROR(runtime_->channels()->Ask(runtime_->container_actor(), ResetContainersRequest{containers},
                                               std::chrono::milliseconds(0), &resp));
  return resp.status;
}

size_t Session::num_cached_executables() const {
  std::lock_guard<std::mutex> lock(mu_);
  return executables_.size();
}

}  // namespace actorflow
