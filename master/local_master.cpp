#include "actorflow/master/local_master.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <optional>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/ids.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/preparation.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/master/step_barrier.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {

namespace {
// Waits this much longer than a step's own deadline for the device actor's
// answer before giving up on it (the actor answers at the deadline itself).
constexpr auto kReplyGrace = std::chrono::seconds(30);

// How long ExplainUnavailable waits for a task to answer its probe: two of
// this process's heartbeat intervals, at most its peer timeout. A restarted
// task is a live process and answers a handshake at once; a hung one (whose
// kernel still accepts connections) never does, and its silence has already
// taken a peer timeout to be noticed: a longer probe only delays the error
// (a fixed 2 s made a hung task's steps fail after 3 s with a 1 s peer
// timeout). Each try lasts at most one interval anyway: CAF 0.17.6 starts an
// outgoing connection with no last_seen, so its next heartbeat tick closes it
// (connection_timeout) unless the peer's handshake came first, and
// ConnectToTask tries again.
std::chrono::milliseconds ProbeTimeout(const caf::actor_system& sys) {
  using ms = std::chrono::milliseconds;
  const auto heartbeat = caf::get_or(sys.config(), "middleman.heartbeat-interval", caf::timespan{0});
  const auto peer_timeout = caf::get_or(sys.config(), "middleman.connection-timeout", caf::timespan{0});
  if (heartbeat.count() <= 0) return ms(2000);  // no heartbeats: nothing to scale by
  ms bound = std::chrono::duration_cast<ms>(2 * heartbeat);
  if (peer_timeout.count() > 0) bound = std::min(bound, std::chrono::duration_cast<ms>(peer_timeout));
  return std::max(bound, ms(1));
}
}  // namespace

struct LocalMaster::Executable {
  // One partition per device the signature runs on; the first is the only
  // one when everything runs on one device.
  struct Part {
    std::string device;  // full name
    caf::actor actor;    // its device actor (a proxy when remote)
    uint64_t graph_handle = 0;
    std::vector<int> arg_indices;     // per argument of the partition: the step's argument index
    std::vector<int> retval_indices;  // per result of the partition: the fetch index
  };
  std::vector<Part> parts;
  caf::actor device;          // parts[0]'s, for the one-partition fast path
  uint64_t graph_handle = 0;  // parts[0]'s
  std::vector<caf::actor> participants;  // the rendezvous actors of the tasks the parts run in
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

// Traced steps teach the placer's cost model what each node costs where. Not
// on a GPU: its kernels only enqueue, so a node's traced time there is its
// launch, not its work (the placer then keeps preferring the GPU).
void RecordCosts(const std::vector<NodeExecStats>& stats, CostModel* model) {
  for (const auto& st : stats)
    if (!st.device.empty() && st.device.find("/device:GPU:") == std::string::npos)
      model->Record(st.node, st.device, static_cast<double>(st.end_us - st.start_us));
}

std::chrono::nanoseconds SpinBudget(int64_t typical_ns) {
  if (typical_ns <= 0 || typical_ns >= kSpinForStepsUnderNs) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(2 * typical_ns);
}
}  // namespace

LocalMaster::LocalMaster(SessionOptions options, std::string handle)
    : runtime_(options.runtime ? options.runtime : Runtime::Default()),
      options_(options),
      handle_(std::move(handle)) {}

LocalMaster::LocalMaster(SessionOptions options, std::string handle, ClusterSpec cluster, TaskId task)
    : LocalMaster(std::move(options), std::move(handle)) {
  in_cluster_ = true;
  cluster_ = std::move(cluster);
  task_ = std::move(task);
}

LocalMaster::~LocalMaster() { Close(); }

Status LocalMaster::ConnectCluster() {
  // By default a session of a cluster with parameter servers uses them and
  // its own task, not the other workers (TensorFlow users had to learn to set
  // device_filters so; TF#13337): a worker that is down or busy elsewhere
  // does not hold this one up.
  std::vector<std::string> filters = options_.device_filters;
  if (filters.empty() && cluster_.num_tasks("ps") > 0) filters = {"/job:ps", task_.name()};
  AF_RETURN_IF_ERROR(ClusterView::Find(runtime_, cluster_, task_, filters,
                                       std::chrono::milliseconds(options_.device_find_timeout_ms), &view_));
  // An actor that stands for this master: workers monitor it. It monitors
  // the other tasks in turn: one that dies, or hangs past CAF's heartbeat
  // timeout, is marked failed in the membership, which fails this process's
  // collectives with it at once (the collectives' own timeout is the bound
  // only where no session watches).
  std::vector<std::tuple<caf::actor, std::string, uint64_t>> watched;
  for (const auto& t : view_->tasks())
    if (!t.local && t.task_actor) watched.emplace_back(t.task_actor, t.name, t.status.incarnation);
  Membership* membership = runtime_->membership();
  presence_ = runtime_->system().spawn([watched, membership](caf::event_based_actor* self) -> caf::behavior {
    for (const auto& w : watched) self->monitor(std::get<0>(w));
    self->set_down_handler([watched, membership](caf::down_msg& down) {
      for (const auto& [actor, name, incarnation] : watched)
        if (actor.address() == down.source)
          membership->MarkFailed(name, incarnation, errors::Unavailable("task ", name, " is down (",
                                                                        caf::to_string(down.reason), ")"));
    });
    return {[](int) {}};
  });
  const std::vector<TaskPeer> peers = view_->Peers();
  if (runtime_->transport())
    for (const auto& p : peers)
      if (p.task != runtime_->task_name())
        runtime_->membership()->Update(TaskRecord::At(p.task, p.host, p.port, p.incarnation));
  // Every other task opens the worker session, in parallel.
  const auto deadline = std::chrono::milliseconds(options_.device_find_timeout_ms);
  std::vector<std::unique_ptr<ClientChannel>> started;
  std::vector<const ClusterTask*> asked;
  Status status;
  for (const auto& t : view_->tasks()) {
    if (t.local) continue;
    auto ch = runtime_->channels()->Acquire();
    AF_RETURN_IF_ERROR(ch->Start(t.task_actor, caf::make_message(CreateWorkerSessionRequest{handle_, presence_, peers})));
    started.push_back(std::move(ch));
    asked.push_back(&t);
  }
  for (size_t i = 0; i < started.size(); ++i) {
    caf::message reply;
    Status s = started[i]->Wait(deadline, &reply);
    StatusResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (s.ok()) s = resp.status;
    if (!s.ok() && status.ok())
      status = Status(s.code(), "opening a worker session on task " + asked[i]->name + ": " + s.message());
  }
  return status;
}

Status LocalMaster::Create(const proto::GraphDef& graph) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::FailedPrecondition("Session has been closed");
  if (created_) return errors::AlreadyExists("Session already has a graph; use Extend to add nodes");
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(graph, &g));
  if (in_cluster_ && !view_) AF_RETURN_IF_ERROR(ConnectCluster());
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

Status LocalMaster::Prepare(Graph* g, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                            const std::vector<std::string>& targets, std::shared_ptr<const Executable>* out) {
  auto exe = std::make_shared<Executable>();
  exe->feed_names = feeds;
  PreparationOptions prep;
  prep.fold_device = runtime_->devices()[0];  // constants fold on the CPU device
  prep.graph_options = options_.graph_options;
  prep.devices = view_ ? &view_->devices() : &runtime_->device_manager();
  if (view_) prep.placer.default_task = runtime_->task_name();
  prep.placer.strategy = options_.placement;
  prep.placer.allow_soft_placement = options_.allow_soft_placement;
  prep.placer.cost_model = &cost_model_;
  std::map<std::string, std::string> stateful;  // a snapshot: placing runs without the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    stateful = stateful_placements_;
  }
  prep.placer.stateful_placements = &stateful;
  prep.on_placed = [this](const Graph& placed) {
    std::map<std::string, std::string> placement;
    for (Node* n : placed.nodes()) placement[n->name()] = n->assigned_device();
    std::lock_guard<std::mutex> lock(mu_);
    for (Node* n : placed.nodes())
      if (n->is_stateful()) stateful_placements_[n->name()] = n->assigned_device();
    last_placement_ = std::move(placement);
  };
  prep.partitioning = options_.partitioning;
  // Rendezvous keys name the sending device's incarnation: this process's.
  prep.partitioning.device_incarnation = runtime_->incarnation();
  if (view_) prep.partitioning.incarnation_of = [this](const std::string& d) { return view_->IncarnationOf(d); };
  PreparedGraph prepared;
  AF_RETURN_IF_ERROR(PrepareGraph(g, feeds, fetches, targets, prep, &prepared));
  exe->info = std::move(prepared.info);
  std::vector<GraphPartition>& partitions = prepared.partitions;
  // Register every partition, all at once (each device actor builds its
  // kernels in parallel, in this process or another); on an error, release
  // those registered.
  ChannelPool* channels = runtime_->channels();
  std::vector<std::unique_ptr<ClientChannel>> asked;
  Status status;
  for (auto& part : partitions) {
    Executable::Part p;
    p.device = part.device;
    if (view_) {
      p.actor = view_->DeviceActor(part.device);
    } else {
      const int index = runtime_->FindDevice(part.device);
      if (index >= 0) p.actor = runtime_->device_actor(index);
    }
    if (!p.actor) {
      status = errors::Internal("placed on unknown device ", part.device);
      break;
    }
    caf::actor rendezvous = runtime_->rendezvous_actor();
    if (view_) rendezvous = view_->TaskOf(part.device)->status.rendezvous;
    if (std::find(exe->participants.begin(), exe->participants.end(), rendezvous) == exe->participants.end())
      exe->participants.push_back(rendezvous);
    p.arg_indices = part.arg_indices;
    p.retval_indices = part.retval_indices;
    RegisterGraphRequest req;
    req.session_handle = handle_;
    if (!part.graph.SerializeToString(&req.graph_def)) {
      status = errors::InvalidArgument("the pruned graph cannot be serialized (over 2 GB?)");
      break;
    }
    auto ch = channels->Acquire();
    status = ch->Start(p.actor, caf::make_message(std::move(req)));
    if (!status.ok()) break;
    asked.push_back(std::move(ch));
    exe->parts.push_back(std::move(p));
  }
  // Every request sent is answered (or times out) before the outcome is known.
  std::vector<bool> registered(asked.size(), false);
  for (size_t i = 0; i < asked.size(); ++i) {
    caf::message reply;
    Status s = asked[i]->Wait(std::chrono::minutes(5), &reply);
    RegisterGraphResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (!errors::IsDeadlineExceeded(s)) channels->Release(std::move(asked[i]));
    if (!s.ok() && view_) s = Status(s.code(), "registering a partition on " + exe->parts[i].device + ": " + s.message());
    if (s.ok()) s = resp.status;
    if (s.ok()) {
      exe->parts[i].graph_handle = resp.graph_handle;
      registered[i] = true;
    } else if (status.ok()) {
      status = s;
    }
  }
  if (!status.ok()) {
    for (size_t i = 0; i < registered.size(); ++i)
      if (registered[i]) caf::anon_send(exe->parts[i].actor, DeregisterGraph{exe->parts[i].graph_handle});
    return status;
  }
  exe->device = exe->parts[0].actor;
  exe->graph_handle = exe->parts[0].graph_handle;
  *out = exe;
  return Status::OK();
}

void LocalMaster::Deregister(const Executable& exe) {
  for (const auto& p : exe.parts) caf::anon_send(p.actor, DeregisterGraph{p.graph_handle});
}

std::map<std::string, std::string> LocalMaster::LastPlacement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_placement_;
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
  RunStepRequest req;
  req.graph_handle = exe->graph_handle;
  req.step_id = NewStepId();
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
  const Status asked = runtime_->channels()->Ask(exe->device, std::move(req), wait, &resp,
                                                 SpinBudget(exe->typical_ns.load(std::memory_order_relaxed)),
                                                 &answered);
  if (!asked.ok()) {
    const Status s = Status(asked.code(), "partition on " + exe->parts[0].device + ": " + asked.message());
    return errors::IsUnavailable(s) ? ExplainUnavailable(s, *exe) : s;
  }
  // The step's own latency, up to its answer: were it measured after a sleeping
  // caller woke, one sleep would add a wake-up to the average, push it past the
  // spin limit, and every later step would sleep and pay a wake-up too.
  const int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(answered - t0).count();
  const int64_t typical = exe->typical_ns.load(std::memory_order_relaxed);
  exe->typical_ns.store(typical == 0 ? took : (7 * typical + took) / 8, std::memory_order_relaxed);
  if (!resp.stats.empty()) RecordCosts(resp.stats, &cost_model_);
  if (metadata) metadata->step_stats = std::move(resp.stats);
  if (errors::IsUnavailable(resp.status)) return ExplainUnavailable(resp.status, *exe);
  AF_RETURN_IF_ERROR(resp.status);
  if (resp.retvals.size() != fetches.size())
    return errors::Internal("step returned ", resp.retvals.size(), " tensors for ", fetches.size(), " fetches");
  if (outputs) *outputs = std::move(resp.retvals);
  return Status::OK();
} catch (...) {  // out of memory (or a bug) in the client: a Status, never an exception
  return CurrentExceptionStatus("Session::Run");
}

Status LocalMaster::RunPartitions(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                                  std::vector<Tensor>* outputs, RunMetadata* metadata) {
  const int64_t step_id = NewStepId();
  std::chrono::milliseconds wait{0};
  if (options.timeout_in_ms > 0) wait = std::chrono::milliseconds(options.timeout_in_ms) + kReplyGrace;
  ChannelPool* channels = runtime_->channels();
  std::vector<std::unique_ptr<ClientChannel>> started;
  started.reserve(exe.parts.size());  // a started partition is always waited for
  // Answers are taken as they come: the first failure aborts the others at
  // once, even while an earlier partition waits for a tensor from it.
  auto notifier = std::make_shared<ReplyNotifier>();
  // Every process the step runs in takes part in its rendezvous.
  StepBarrier barrier(step_id, exe.participants);
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
    const Status s = ch->Start(part.actor, caf::make_message(std::move(req)), notifier);
    if (!s.ok()) {
      barrier.FailedToStart(s);
      break;
    }
    started.push_back(std::move(ch));
    barrier.Started();
  }
  // Every started partition answers (a failed one aborts the step at the
  // rendezvous, so the others' Recvs fail rather than wait).
  std::vector<Tensor> results(exe.info.fetch_types.size());
  std::vector<NodeExecStats> stats;
  Status status;
  auto take = [&](size_t i, std::chrono::milliseconds timeout) {
    caf::message reply;
    Status s = started[i]->Wait(timeout, &reply);
    RunStepResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (!errors::IsDeadlineExceeded(s)) channels->Release(std::move(started[i]));
    // No answer at all (its process died, or went silent): say where.
    if (!s.ok()) s = Status(s.code(), "partition on " + exe.parts[i].device + ": " + s.message());
    if (s.ok()) s = resp.status;
    barrier.PartitionDone(s);
    for (auto& st : resp.stats) stats.push_back(std::move(st));
    const auto& part = exe.parts[i];
    if (s.ok() && resp.retvals.size() != part.retval_indices.size())
      status = errors::Internal("partition on ", part.device, " returned ",
                                resp.retvals.size(), " tensors for ", part.retval_indices.size(), " results");
    for (size_t r = 0; s.ok() && r < resp.retvals.size() && r < part.retval_indices.size(); ++r)
      results[part.retval_indices[r]] = std::move(resp.retvals[r]);
  };
  std::vector<bool> taken(started.size(), false);
  size_t remaining = started.size();
  const auto until = wait.count() > 0 ? std::chrono::steady_clock::now() + wait
                                      : std::chrono::steady_clock::time_point::max();
  while (remaining > 0) {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> l(notifier->mu);
      seen = notifier->replies;
    }
    bool progressed = false;
    for (size_t i = 0; i < started.size(); ++i) {
      if (taken[i] || !started[i]->Ready()) continue;
      take(i, std::chrono::milliseconds(0));
      taken[i] = true;
      --remaining;
      progressed = true;
    }
    if (remaining == 0 || progressed) continue;
    std::unique_lock<std::mutex> l(notifier->mu);
    const bool woke = notifier->cv.wait_until(l, until, [&] { return notifier->replies != seen; });
    l.unlock();
    if (!woke) {  // past the step's deadline and grace: whoever has not answered times out
      for (size_t i = 0; i < started.size(); ++i)
        if (!taken[i]) {
          take(i, std::chrono::milliseconds(1));
          taken[i] = true;
        }
      remaining = 0;
    }
  }
  const Status finished = barrier.Finish();
  if (!barrier.status().ok()) status = barrier.status();
  if (status.ok()) status = finished;
  if (errors::IsUnavailable(status)) status = ExplainUnavailable(status, exe);
  if (!stats.empty()) RecordCosts(stats, &cost_model_);
  if (metadata) metadata->step_stats = std::move(stats);
  AF_RETURN_IF_ERROR(status);
  if (outputs) *outputs = std::move(results);
  return Status::OK();
}

Status LocalMaster::ExplainUnavailable(Status s, const Executable& exe) {
  if (!view_) return s;
  std::vector<const ClusterTask*> tasks;
  for (const auto& p : exe.parts) {
    const ClusterTask* t = view_->TaskOf(p.device);
    if (t && !t->local && std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
  }
  const auto probe_timeout = ProbeTimeout(runtime_->system());
  for (const ClusterTask* t : tasks) {
    uint64_t now = 0;
    if (!ClusterView::Probe(runtime_->system(), *t, probe_timeout, &now).ok()) continue;
    if (now != t->status.incarnation)
      return errors::Aborted("task ", t->name, " restarted (incarnation ", now, ", this session knew ",
                             t->status.incarnation, "): its state is gone; open a new session. ", s.message());
  }
  return s;
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
    if (result.ok()) Deregister(*result.value());
  }
  if (view_) {
    for (const auto& t : view_->tasks()) {
      for (const auto& d : t.status.devices) caf::anon_send(d.actor, CloseSession{handle_});
      if (!t.local) caf::anon_send(t.task_actor, DeleteWorkerSessionRequest{handle_});
    }
    // The actor standing for this master ends with the session, not with the
    // Session object: a Server destroyed while a closed Session still exists
    // would otherwise wait for it forever (~actor_system).
    if (presence_) caf::anon_send_exit(presence_, caf::exit_reason::user_shutdown);
    presence_ = caf::actor();
    return Status::OK();
  }
  for (size_t d = 0; d < runtime_->devices().size(); ++d)
    caf::anon_send(runtime_->device_actor(static_cast<int>(d)), CloseSession{handle_});
  return Status::OK();
}

Status LocalMaster::ResetContainers(const std::vector<std::string>& containers) {
  if (view_) {  // every task's variables
    for (const auto& t : view_->tasks()) {
      ResetContainersResponse resp;
      Status s = runtime_->channels()->Ask(t.status.container, ResetContainersRequest{containers},
                                           std::chrono::milliseconds(options_.device_find_timeout_ms), &resp);
      if (s.ok()) s = resp.status;
      if (!s.ok()) return Status(s.code(), "resetting containers on " + t.name + ": " + s.message());
    }
    return Status::OK();
  }
  ResetContainersResponse resp;
  AF_RETURN_IF_ERROR(runtime_->channels()->Ask(runtime_->container_actor(), ResetContainersRequest{containers},
                                               std::chrono::milliseconds(0), &resp));
  return resp.status;
}

size_t LocalMaster::num_cached_executables() const {
  std::lock_guard<std::mutex> lock(mu_);
  return executables_.size();
}

}  // namespace actorflow
