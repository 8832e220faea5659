#include "actorflow/master/step_runner.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/actors/step_calls.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/core/ids.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/master/partition_registry.hpp"
#include "actorflow/master/step_barrier.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/net/rendezvous_service.hpp"

namespace actorflow {

namespace {
// Waits this much longer than a step's own deadline for the device actor's
// answer before giving up on it: the actor answers at the deadline itself,
// naming what it waited for, so this only bounds an answer that never comes
// (its message lost without its connection failing, as the transport's
// test-only fault injection does) or comes very late (a task overloaded).
constexpr auto kReplyGrace = std::chrono::seconds(3);

// Steps that typically take less than this are waited for by spinning, up to
// twice their typical time: on virtual machines waking a sleeping thread
// costs 15-40 us, as much as such a step. Longer steps are slept through.
constexpr int64_t kSpinForStepsUnderNs = 50'000;

std::chrono::nanoseconds SpinBudget(int64_t typical_ns) {
  if (typical_ns <= 0 || typical_ns >= kSpinForStepsUnderNs) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(2 * typical_ns);
}

std::chrono::milliseconds ReplyWait(const RunOptions& options) {
  if (options.timeout_in_ms <= 0) return std::chrono::milliseconds(0);  // none: the step runs as long as it needs
  return std::chrono::milliseconds(options.timeout_in_ms) + kReplyGrace;
}

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

// Traced steps teach the placer's cost model what each node costs where. Not
// on a GPU: its kernels only enqueue, so a node's traced time there is its
// launch, not its work (the placer then keeps preferring the GPU).
void RecordCosts(const std::vector<NodeExecStats>& stats, CostModel* model) {
  for (const auto& st : stats)
    if (!st.device.empty() && st.device.find("/device:GPU:") == std::string::npos)
      model->Record(st.node, st.device, static_cast<double>(st.end_us - st.start_us));
}

// A step's request to `part`, without its arguments.
RunStepRequest StepHeader(const Executable::Part& part, int64_t step_id, const RunOptions& options,
                          bool multi_partition) {
  RunStepRequest req;
  req.graph_handle = part.graph_handle;
  req.step_id = step_id;
  req.timeout_ms = options.timeout_in_ms;
  req.collect_stats = options.collects_step_stats();
  req.multi_partition = multi_partition;
  return req;
}

RunStepRequest StepRequest(const Executable::Part& part, int64_t step_id, const RunOptions& options,
                           const std::vector<Tensor>& args, bool multi_partition) {
  RunStepRequest req = StepHeader(part, step_id, options, multi_partition);
  req.args.reserve(part.arg_indices.size());
  for (int a : part.arg_indices) req.args.push_back(args[a]);
  return req;
}

// The same, for the step's only partition: its arguments move when they are
// the step's in order (the common case), rather than being copied.
RunStepRequest StepRequest(const Executable::Part& part, int64_t step_id, const RunOptions& options,
                           std::vector<Tensor>&& args) {
  bool in_order = part.arg_indices.size() == args.size();
  for (size_t i = 0; in_order && i < args.size(); ++i) in_order = part.arg_indices[i] == static_cast<int>(i);
  if (!in_order) return StepRequest(part, step_id, options, args, false);
  RunStepRequest req = StepHeader(part, step_id, options, false);
  req.args = std::move(args);
  return req;
}

// The one reply path: a partition's answer, or `asked`, the failure to get one.
Status Absorb(const Executable::Part& part, const Status& asked, RunStepResponse* resp, std::vector<Tensor>* results,
              std::vector<NodeExecStats>* stats) {
  // No answer at all (its process died, or went silent): say where.
  if (!asked.ok()) return Status(asked.code(), "partition on " + part.device + ": " + asked.message());
  for (auto& st : resp->stats) stats->push_back(std::move(st));
  if (!resp->status.ok()) return resp->status;
  if (resp->retvals.size() != part.retval_indices.size())
    return errors::Internal("partition on ", part.device, " returned ", resp->retvals.size(), " tensors for ",
                            part.retval_indices.size(), " results");
  for (size_t r = 0; r < resp->retvals.size(); ++r) (*results)[part.retval_indices[r]] = std::move(resp->retvals[r]);
  return Status::OK();
}

// Whether `part` runs in another process whose steps go over the transport.
bool Remote(Runtime* runtime, const ClusterView* view, const Executable::Part& part) {
  const ClusterTask* task = runtime->step_calls() && view ? view->TaskOf(part.device) : nullptr;
  return task && !task->local;
}


// Starts `part`'s step on `ch`: a partition in another process over the
// tensor transport (actors/step_calls.hpp: a fraction of CAF's remote round
// trip), else, or when the transport cannot send there, as a CAF request to
// its worker session, or, for a partition of this process, to its device
// actor directly. Either way `ch` watches that actor. `here`: a partition in
// this process starts on this thread (ClientChannel::StartHere).
Status StartPart(Runtime* runtime, const ClusterView* view, const Executable::Part& part, RunStepRequest req,
                 ClientChannel* ch, std::shared_ptr<ReplyNotifier> notifier = nullptr, bool here = false) {
  StepCalls* calls = runtime->step_calls();
  const ClusterTask* task = calls && view ? view->TaskOf(part.device) : nullptr;
  const bool remote = task && !task->local;
  const caf::actor* dest = &part.session;
  if (!remote && part.device_actor) {  // this process's partition: to its device actor, not via the worker
    dest = &part.device_actor;
    req.graph_handle = part.device_handle;
  }
  if (here && !remote) {
    if (dest == &part.device_actor) return ch->StartHereStep(*dest, std::move(req), notifier);  // answered by a call
    return ch->StartHere(*dest, caf::make_message(std::move(req)), notifier);
  }
  if (remote) {
    const Status s = ch->StartVia(
        part.session,
        [&](ClientChannel::ReplyFn done, ClientChannel::CancelFn* cancel) {
          uint64_t id = 0;
          // The incarnation its partitions were registered with: a restarted task runs none of them.
          const Status sent = calls->Call(task->name, task->status.incarnation, req, std::move(done), &id);
          if (sent.ok()) *cancel = [calls, id] { calls->Cancel(id); };
          return sent;
        },
        notifier);
    if (s.ok()) return s;
  }
  return ch->Start(*dest, caf::make_message(std::move(req)), std::move(notifier));
}

}  // namespace

StepRunner::StepRunner(Runtime* runtime, const ClusterView* view, CostModel* cost_model)
    : runtime_(runtime), view_(view), cost_model_(cost_model) {}

Status StepRunner::Run(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                       std::vector<Tensor>* outputs, RunMetadata* metadata) {
  Status s = exe.parts.size() == 1 ? RunOne(exe, options, std::move(args), outputs, metadata)
                                   : RunMany(exe, options, std::move(args), outputs, metadata);
  return errors::IsUnavailable(s) ? ExplainUnavailable(s, exe) : s;
}

Status StepRunner::RunOne(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                          std::vector<Tensor>* outputs, RunMetadata* metadata) {
  const Executable::Part& part = exe.parts[0];
  RunStepResponse resp;
  std::chrono::steady_clock::time_point t0, answered;
  bool timed = false;  // whether this step's wait taught typical_ns anything
  Status asked;
  {
    ChannelPool* channels = runtime_->channels();
    auto ch = channels->Acquire();
    caf::message reply;
    // The caller runs the step's first turns itself (ClientChannel::StartHere):
    // a short step is done before this returns, with no worker woken and no
    // thread handing over to another (on 2 cores a one-node step took 1.5 us
    // this way, and 2.0 or 4.7 us through a worker, depending on whether both
    // workers were polling beside the caller's spin). An idle device actor
    // runs it as a turn with no message (RunStepHere: about 1.0 us where a
    // message delivered inline took 1.6, same host phase).
    // Not a GPU's step: its kernels would make the GPU the caller's current
    // CUDA device.
    asked = StartPart(runtime_, view_, part, StepRequest(part, NewStepId(), options, std::move(args)), ch.get(),
                      nullptr, /*here=*/!part.on_gpu);
    // What typical_ns learns is the wait after the start, which is what the
    // spin is for: a step answered before StartHere returned (run inline to
    // its end, as short ones are) waits for nothing, and reads no clock.
    if (asked.ok() && !ch->Ready()) {
      timed = true;
      t0 = std::chrono::steady_clock::now();
    }
    if (asked.ok())
      asked = ch->Wait(ReplyWait(options), &reply, SpinBudget(exe.typical_ns.load(std::memory_order_relaxed)));
    if (asked.ok()) asked = ch->TakeStepResponse(reply, &resp);
    if (!errors::IsDeadlineExceeded(asked)) {  // a channel that timed out is dropped with its late reply
      answered = ch->answered_at();
      channels->Release(std::move(ch));
    }
  }
  if (asked.ok() && timed) {
    // Up to the answer: were it measured after a sleeping caller woke, one
    // sleep would add a wake-up to the average, push it past the spin limit,
    // and every later step would sleep and pay a wake-up too. An answer
    // delivered by an inline run (no time taken, ClientChannel) counts as now.
    if (answered < t0) answered = std::chrono::steady_clock::now();
    const int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(answered - t0).count();
    const int64_t typical = exe.typical_ns.load(std::memory_order_relaxed);
    exe.typical_ns.store(typical == 0 ? took : (7 * typical + took) / 8, std::memory_order_relaxed);
  }
  // Straight into `outputs`, keeping its capacity from the last step;
  // emptied on failure.
  std::vector<Tensor> own;
  std::vector<Tensor>* results = outputs ? outputs : &own;
  results->clear();
  results->resize(exe.info.fetch_types.size());
  std::vector<NodeExecStats> stats;
  const Status s = Absorb(part, asked, &resp, results, &stats);
  if (!stats.empty()) RecordCosts(stats, cost_model_);
  if (metadata) metadata->step_stats = std::move(stats);
  if (!s.ok()) results->clear();
  return s;
}

Status StepRunner::RunMany(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                           std::vector<Tensor>* outputs, RunMetadata* metadata) {
  const int64_t step_id = NewStepId();
  const std::chrono::milliseconds wait = ReplyWait(options);
  ChannelPool* channels = runtime_->channels();
  std::vector<std::unique_ptr<ClientChannel>> started;
  started.reserve(exe.parts.size());  // a started partition is always waited for
  // Answers are taken as they come: the first failure aborts the others at
  // once, even while an earlier partition waits for a tensor from it.
  auto notifier = std::make_shared<ReplyNotifier>();
  // A step across processes: its remote partitions start first (on the
  // transport), then this process's run on this thread until they wait (no
  // worker woken for them: a worker's wake-up, and its polling for work
  // after, cost more than a small partition, and the polling takes the core
  // the transport's thread needs). Other steps start as they always did.
  std::vector<size_t> order;  // parts in the order they start; started[i] is exe.parts[order[i]]
  for (size_t i = 0; i < exe.parts.size(); ++i)
    if (Remote(runtime_, view_, exe.parts[i])) order.push_back(i);
  const bool crosses = !order.empty();
  for (size_t i = 0; i < exe.parts.size(); ++i)
    if (!Remote(runtime_, view_, exe.parts[i])) order.push_back(i);
  // Every process the step runs in takes part in its rendezvous. Across
  // processes, a remote participant hears the step is over on the transport,
  // as its partition's step came, and this process's on this thread.
  StepBarrier::SendDone send_done;
  if (crosses) {
    send_done = [this](const caf::actor& p, int64_t id) {
      if (p->node() == runtime_->system().node()) {
        DeliverInline(runtime_->compute_pool(), p, nullptr, caf::make_message_id(),
                      caf::make_message(RendezvousStepDone{id}));
        return true;
      }
      for (const auto& t : view_->tasks())
        if (!t.local && t.status.rendezvous == p)
          return runtime_->step_calls()->StepDone(t.name, t.status.incarnation, id).ok();
      return false;
    };
  }
  StepBarrier barrier(step_id, exe.participants, std::move(send_done));
  for (size_t i : order) {
    const auto& part = exe.parts[i];
    auto ch = channels->Acquire();
    const Status s =
        StartPart(runtime_, view_, part, StepRequest(part, step_id, options, args, true), ch.get(), notifier, crosses);
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
  auto take = [&](size_t i, std::chrono::milliseconds timeout) {
    caf::message reply;
    Status asked = started[i]->Wait(timeout, &reply);
    RunStepResponse resp;
    if (asked.ok()) asked = started[i]->TakeStepResponse(reply, &resp);
    if (!errors::IsDeadlineExceeded(asked)) channels->Release(std::move(started[i]));
    barrier.PartitionDone(Absorb(exe.parts[order[i]], asked, &resp, &results, &stats));
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
  Status status = barrier.status().ok() ? finished : barrier.status();
  if (!stats.empty()) RecordCosts(stats, cost_model_);
  if (metadata) metadata->step_stats = std::move(stats);
  AF_RETURN_IF_ERROR(status);
  if (outputs) *outputs = std::move(results);
  return Status::OK();
}

Status StepRunner::ExplainUnavailable(Status s, const Executable& exe) {
  std::vector<const ClusterTask*> tasks;
  for (const auto& p : exe.parts) {
    const ClusterTask* t = view_->TaskOf(p.device);
    if (t && !t->local && std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
  }
  if (tasks.empty()) return s;
  // The membership may know already (another session, or a resolver, found
  // the task again at a new incarnation): no probe then.
  for (const ClusterTask* t : tasks) {
    const auto known = runtime_->membership()->Find(t->name);
    if (known && known->incarnation != 0 && known->incarnation != t->status.incarnation) {
      const Status restarted = TaskRestartedError(t->name, known->incarnation, t->status.incarnation);
      return Status(restarted.code(), restarted.message() + ". " + s.message());
    }
  }
  const auto probe_timeout = ProbeTimeout(runtime_->system());
  for (const ClusterTask* t : tasks) {
    uint64_t now = 0;
    if (!ClusterView::Probe(runtime_->system(), *t, probe_timeout, &now).ok()) continue;
    if (now != t->status.incarnation) {  // the incarnation this session's partitions were registered with
      const Status restarted = TaskRestartedError(t->name, now, t->status.incarnation);
      return Status(restarted.code(), restarted.message() + ". " + s.message());
    }
  }
  return s;
}

}  // namespace actorflow
