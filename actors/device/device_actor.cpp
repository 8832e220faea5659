// The device actor: a thin shell around one Executor (actors/device/executor.hpp).
// It keeps the registered plans (built on the compute pool), hosts the
// executor (resume, deadline timers, completions coming back) and owns the
// accesses through which its kernels reach other actors
// (actors/device/actor_access.hpp).
#include "actorflow/actors/device/device_actor.hpp"

#include <caf/all.hpp>

#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "actorflow/actors/device/actor_access.hpp"
#include "actorflow/actors/device/executor.hpp"
#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/actors/device/kernel_segment.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {
/// A graph's plan has been built on the pool (to the device actor itself only).
struct GraphBuilt {
  uint64_t graph_handle = 0;
};
}  // namespace actorflow
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::GraphBuilt)

namespace actorflow {

namespace {

using resume_atom = caf::atom_constant<caf::atom("af_resume")>;
using deadline_atom = caf::atom_constant<caf::atom("af_dline")>;

// A plan being built on the compute pool: the pool job fills it, then tells
// the actor (GraphBuilt), which takes it over. Never touched by both at once.
struct PendingGraph {
  Status status;
  std::unique_ptr<ExecutorPlan> plan;
};

using DeviceActor = caf::stateful_actor<struct DeviceActorState>;

// To the actor that made the message (its sender), on the compute pool
// `context`: needs nothing of the actor's state, which may be gone.
void DeliverCompletion(void* context, caf::mailbox_element_ptr msg) noexcept {
  const caf::strong_actor_ptr keep = msg->sender;  // the actor lives until this returns
  caf::abstract_actor* dest = caf::actor_cast<caf::abstract_actor*>(keep);
  ComputePool* pool = static_cast<ComputePool*>(context);
  try {
    dest->enqueue(std::move(msg), pool->delivery_unit());
  } catch (...) {
    // In the mailbox already (pushing allocates nothing); making the actor
    // runnable threw for memory: it must still run.
    pool->RescheduleAfterFailure(dynamic_cast<caf::resumable*>(dest));
  }
}

// The executor's host: the actor's mailbox brings resumes, deadlines and
// completions back to its thread.
class DeviceHost final : public ExecutorHost {
 public:
  DeviceHost(DeviceActor* self, Device* device) : self_(self), device_(device) {}
  void ScheduleResume() override;
  void ArmDeadline(std::chrono::nanoseconds delay) override;
  caf::mailbox_element_ptr MakeCompletion() override;
  CompletionSink completion_sink() override { return {&DeliverCompletion, device_->compute_pool()}; }
  void Drained() noexcept override;
  caf::error exit_reason;

 private:
  DeviceActor* self_;
  Device* device_;
};

struct DeviceActorState {
  Device* device = nullptr;
  std::unique_ptr<DeviceHost> host;
  std::unique_ptr<DeviceVariableAccess> variables;
  std::unique_ptr<DeviceRendezvousAccess> rendezvous;
  std::unique_ptr<DeviceQueueAccess> queues;
  std::unique_ptr<Executor> executor;
  uint64_t next_graph_handle = 1;
  struct Registration {
    std::shared_ptr<PendingGraph> pending;
    caf::response_promise promise;
    std::string session;
  };
  std::unordered_map<uint64_t, Registration> registrations;  // by the handle they will get
  std::unordered_map<uint64_t, std::shared_ptr<const ExecutorPlan>> graphs;
  std::unordered_map<std::string, std::shared_ptr<KernelSegment>> segments;  // by session handle
  std::unordered_map<std::string, std::vector<uint64_t>> session_graphs;    // graphs registered by each session
  std::unordered_set<std::string> closed_sessions;  // a late registration must not recreate their segment
  bool shutting_down = false;  // exit received: draining running kernels, then quit
  static const char* name;
};
const char* DeviceActorState::name = "device_actor";

void DeviceHost::ScheduleResume() { self_->send(self_, resume_atom::value); }

void DeviceHost::ArmDeadline(std::chrono::nanoseconds delay) {
  self_->delayed_send(self_, delay, deadline_atom::value);
}

caf::mailbox_element_ptr DeviceHost::MakeCompletion() {
  // Sent as from the actor itself: KernelDone is accepted from no one else.
  return caf::make_mailbox_element(caf::strong_actor_ptr(self_->ctrl()), caf::make_message_id(), {}, KernelDone{});
}


void DeviceHost::Drained() noexcept {
  try {
    self_->quit(exit_reason);
  } catch (...) {  // no memory to copy the reason: quit all the same
    self_->quit();
  }
}

Status BuildPlanOrThrow(const std::string& graph_def, Device* device, KernelSegment* segment,
                        std::unique_ptr<ExecutorPlan>* plan) {
  proto::GraphDef def;
  if (!def.ParseFromString(graph_def))
    return errors::InvalidArgument("cannot parse the GraphDef sent to ", device->name());
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(def, &g));
  return ExecutorPlan::Build(g, device, plan, segment);
}

// Never throws: the registration must always be answered.
Status BuildPlan(const std::string& graph_def, Device* device, KernelSegment* segment,
                 std::unique_ptr<ExecutorPlan>* plan) noexcept {
  try {
    return BuildPlanOrThrow(graph_def, device, segment, plan);
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("out of memory building the kernels of a graph on ", device->name());
  } catch (const std::exception& e) {
    return errors::Internal("building the kernels of a graph on ", device->name(), " threw: ", e.what());
  }
}

void Register(DeviceActor* self, RegisterGraphRequest& req) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  if (st.shutting_down) {
    rp.deliver(RegisterGraphResponse{errors::Cancelled("device ", st.device->name(), " is shutting down"), 0});
    return;
  }
  const uint64_t handle = st.next_graph_handle++;
  try {
    auto pending = std::make_shared<PendingGraph>();
    caf::actor me = caf::actor_cast<caf::actor>(self);
    // Made here, so the pool job's report cannot fail for memory and
    // leave the registration unanswered.
    auto built = std::make_shared<caf::mailbox_element_ptr>(caf::make_mailbox_element(
        caf::actor_cast<caf::strong_actor_ptr>(me), caf::make_message_id(), {}, GraphBuilt{handle}));
    std::shared_ptr<KernelSegment> segment;
    if (!req.session_handle.empty() && !st.closed_sessions.count(req.session_handle)) {
      auto& seg = st.segments[req.session_handle];
      if (!seg) seg = std::make_shared<KernelSegment>();
      segment = seg;
    }
    ComputePool* pool = st.device->compute_pool();
    pool->Schedule([pending, me, built, pool, device = st.device, segment, def = std::move(req.graph_def)] {
      pending->status = BuildPlan(def, device, segment.get(), &pending->plan);
      caf::abstract_actor* dest = caf::actor_cast<caf::abstract_actor*>(me);
      try {
        dest->enqueue(std::move(*built), pool->delivery_unit());
      } catch (...) {  // in the mailbox; scheduling the actor threw for memory
        pool->RescheduleAfterFailure(dynamic_cast<caf::resumable*>(dest));
      }
    });
    // Its GraphBuilt is handled after this handler returns.
    st.registrations.emplace(handle, DeviceActorState::Registration{pending, rp, req.session_handle});
  } catch (...) {
    st.registrations.erase(handle);
    try {
      rp.deliver(RegisterGraphResponse{CurrentExceptionStatus("registering a graph on " + st.device->name()), 0});
    } catch (...) {  // not even the answer fits: the client's deadline ends its wait
    }
  }
}

void GraphReady(DeviceActor* self, GraphBuilt& built) {
  auto& st = self->state;
  auto it = st.registrations.find(built.graph_handle);
  if (it == st.registrations.end()) return;
  auto reg = std::move(it->second);
  st.registrations.erase(it);
  if (!reg.pending->status.ok() || st.shutting_down) {
    Status s = st.shutting_down ? errors::Cancelled("device ", st.device->name(), " is shutting down")
                                : reg.pending->status;
    reg.promise.deliver(RegisterGraphResponse{s, 0});
    return;
  }
  try {
    auto& plan = reg.pending->plan;
    st.executor->ReserveOutputs(plan->max_outputs());
    st.graphs.emplace(built.graph_handle, std::shared_ptr<const ExecutorPlan>(std::move(plan)));
    if (!reg.session.empty()) st.session_graphs[reg.session].push_back(built.graph_handle);
    reg.promise.deliver(RegisterGraphResponse{Status::OK(), built.graph_handle});
  } catch (...) {
    st.graphs.erase(built.graph_handle);
    try {
      reg.promise.deliver(
          RegisterGraphResponse{CurrentExceptionStatus("registering a graph on " + st.device->name()), 0});
    } catch (...) {  // not even the answer fits: the client's deadline ends its wait
    }
  }
}

// A step's reply: its response promise, moved in (not copied: no reference
// counts touched per step), or, for a request from this process that named
// one, its sink (no reply message at all).
struct AnswerStep {
  caf::response_promise rp;
  std::shared_ptr<StepReplySink> sink;
  uint64_t token = 0;
  void operator()(RunStepResponse&& r) {
    if (sink) sink->Reply(token, std::move(r));
    else rp.deliver(std::move(r));
  }
};

// Finds the step's plan and hands the step to the executor; a step refused
// before it starts is aborted at the rendezvous too, as a failing one is:
// other partitions may wait in Recvs for its Sends.
void RunStep(DeviceActor* self, RunStepRequest& req) noexcept {
  auto& st = self->state;
  // The answer's way back: the request's sink, else a response promise (a
  // plain message with no sink has nobody to answer).
  AnswerStep answer;
  answer.sink = std::move(req.reply_sink);
  answer.token = req.reply_token;
  if (!answer.sink) answer.rp = self->make_response_promise();
  auto fail = [&](const Status& s) {
    try {
      if (req.multi_partition) st.rendezvous->Abort(req.step_id, s);
      RunStepResponse r;
      r.status = s;
      answer(std::move(r));
    } catch (...) {  // not even the answer fits: the client's deadline ends its wait
    }
  };
  try {
    auto g = st.graphs.find(req.graph_handle);
    if (g == st.graphs.end() && !st.shutting_down) {
      // Handles only grow: one we gave out and no longer hold was deregistered.
      const bool dropped = req.graph_handle < st.next_graph_handle && !st.registrations.count(req.graph_handle);
      fail(dropped ? errors::Cancelled("graph ", req.graph_handle, " was deregistered (session closed)")
                   : errors::NotFound("graph handle ", req.graph_handle, " is not registered on ",
                                      st.device->name()));
      return;
    }
    std::shared_ptr<const ExecutorPlan> plan = g == st.graphs.end() ? nullptr : g->second;
    // The answer moves into the reply only once the reply's memory is there
    // (its allocation may throw: then `answer` still answers below).
    Executor::Reply reply = AnswerStep{};
    *reply.target<AnswerStep>() = std::move(answer);
    st.executor->StartStep(std::move(plan), req.graph_handle, req, std::move(reply));
  } catch (...) {
    fail(CurrentExceptionStatus("starting a step on " + st.device->name()));
  }
}

caf::behavior DeviceActorBehavior(DeviceActor* self, Device* device, caf::actor container, caf::actor rendezvous,
                                  CollectiveAccess* collectives) {
  auto& st = self->state;
  st.device = device;
  st.host = std::make_unique<DeviceHost>(self, device);
  ExecutorServices services;
  services.device = device;
  services.host = st.host.get();
  st.executor = std::make_unique<Executor>(services);
  Executor* executor = st.executor.get();
  st.queues = std::make_unique<DeviceQueueAccess>(self, executor, device, container);
  st.variables = std::make_unique<DeviceVariableAccess>(self, executor, device, std::move(container));
  st.rendezvous = std::make_unique<DeviceRendezvousAccess>(self, executor, device, std::move(rendezvous));
  services.variables = st.variables.get();
  services.rendezvous = st.rendezvous.get();
  services.queues = st.queues.get();
  services.collectives = collectives;
  executor->set_services(services);
  // On exit: answer every step at once, then stay until kernels still running
  // on the pool have returned (they read the steps' state), then quit.
  self->set_exit_handler([self](const caf::exit_msg& msg) {
    RunKeptWakes();  // see the behaviour below
    auto& st = self->state;
    st.shutting_down = true;
    Status down = OutOfMemoryStatus();
    try {
      st.host->exit_reason = msg.reason;
      down = errors::Cancelled("device ", st.device->name(), " shut down");
      for (auto& [handle, reg] : st.registrations) reg.promise.deliver(RegisterGraphResponse{down, 0});
    } catch (...) {  // out of memory while shutting down: what was not answered ends by its client's deadline
    }
    st.registrations.clear();
    st.executor->Shutdown(down);  // quits now, or when the last running kernel returned
  });
  // Clients answered by an earlier handler of this turn are woken after the
  // turn (WakeAfterHandler), or as the next handler with a RunningScope
  // begins; a handler with none wakes them first, so none waits behind it.
  return {
      // Parsing a GraphDef and building kernels (decoding constants) can take
      // long: it runs on the pool, so steps of other graphs go on meanwhile.
      [self](RegisterGraphRequest& req) {
        RunKeptWakes();
        Register(self, req);
      },
      [self](GraphBuilt& built) {
        RunKeptWakes();
        if (self->current_sender() != self->ctrl()) return;  // only our own pool jobs report here
        GraphReady(self, built);
      },
      [self](RunStepRequest& req) {
        Executor::RunningScope running(self->state.executor.get(), self->context());
        RunStep(self, req);
      },
      [self](KernelDone& done) {
        if (self->current_sender() != self->ctrl()) return;  // only our own kernels report here
        Executor* executor = self->state.executor.get();
        Executor::RunningScope running(executor, self->context());
        executor->KernelFinished(done);
        executor->Run();
      },
      [self](resume_atom) {
        Executor::RunningScope running(self->state.executor.get(), self->context());
        self->state.executor->Resume();
      },
      [self](queue_inbox_atom) {
        if (self->current_sender() != self->ctrl()) return;
        Executor::RunningScope running(self->state.executor.get(), self->context());
        self->state.executor->RunCallback([self] { self->state.queues->DrainInbox(); });
      },
      [self](deadline_atom) {
        RunKeptWakes();
        if (self->current_sender() != self->ctrl()) return;
        self->state.executor->DeadlinesDue();
      },
      [self](RendezvousDeliver& d) {
        Executor::RunningScope running(self->state.executor.get(), self->context());
        self->state.executor->RunCallback([&] { self->state.rendezvous->Deliver(d); });
      },
      [self](const CloseSession& c) {
        RunKeptWakes();
        // A session's end (its client closed it, or its master died) drops its graphs and cancels their steps.
        auto graphs = self->state.session_graphs.find(c.session_handle);
        if (graphs != self->state.session_graphs.end()) {
          const Status why = c.master_down ? errors::Aborted("graph deregistered (the master of session ",
                                                             c.session_handle, " went down)")
                                           : errors::Cancelled("graph deregistered (session closed)");
          for (uint64_t h : graphs->second) {
            self->state.executor->CancelSteps(h, why);
            self->state.graphs.erase(h);
          }
          self->state.session_graphs.erase(graphs);
        }
        self->state.segments.erase(c.session_handle);
        try {
          self->state.closed_sessions.insert(c.session_handle);
        } catch (...) {  // out of memory: a late registration of that session may build a segment it never uses
        }
      },
      [self](DeregisterGraph& d) {
        RunKeptWakes();
        self->state.executor->CancelSteps(d.graph_handle, errors::Cancelled("graph deregistered (session closed)"));
        self->state.graphs.erase(d.graph_handle);
      },
  };
}

}  // namespace

bool RunStepHere(ComputePool* pool, const caf::actor& device, RunStepRequest& req) noexcept {
  if (!device || !req.reply_sink) return false;
  auto* self = dynamic_cast<DeviceActor*>(caf::actor_cast<caf::abstract_actor*>(device));
  if (!self) return false;
  struct Turn {
    DeviceActor* self;
    RunStepRequest* req;
  } turn{self, &req};
  // The RunStepRequest handler's body (DeviceActorBehavior).
  return RunTurnInline(
      pool, self,
      [](void* arg) {
        auto* t = static_cast<Turn*>(arg);
        Executor::RunningScope running(t->self->state.executor.get(), t->self->context());
        RunStep(t->self, *t->req);
      },
      &turn);
}

caf::actor SpawnDeviceActor(caf::actor_system& sys, Device* device, caf::actor container, caf::actor rendezvous,
                            CollectiveAccess* collectives) {
  return sys.spawn([device, container, rendezvous, collectives](DeviceActor* self) {
    return DeviceActorBehavior(self, device, container, rendezvous, collectives);
  });
}

}  // namespace actorflow
