#include "actorflow/master/partition_registry.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/master/worker_sessions.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

namespace {
// A worker session waits this long for its devices to build a partition's
// kernels; the master a little longer for its answer.
constexpr auto kRegisterWait = std::chrono::minutes(5) + std::chrono::seconds(30);
}  // namespace

PartitionRegistry::PartitionRegistry(Runtime* runtime, const ClusterView* view, WorkerSessions* sessions,
                                     SessionOptions options, CostModel* cost_model)
    : runtime_(runtime), view_(view), sessions_(sessions), options_(std::move(options)), cost_model_(cost_model) {}

Status PartitionRegistry::Prepare(Graph* g, const std::vector<std::string>& feeds,
                                  const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                  std::shared_ptr<const Executable>* out) {
  auto exe = std::make_shared<Executable>();
  exe->feed_names = feeds;
  PreparationOptions prep;
  prep.fold_device = runtime_->devices()[0];  // constants fold on the CPU device
  prep.graph_options = options_.graph_options;
  prep.devices = &view_->devices();
  prep.placer.default_task = runtime_->task_name();  // nodes that name no task run here
  prep.placer.strategy = options_.placement;
  prep.placer.allow_soft_placement = options_.allow_soft_placement;
  prep.placer.cost_model = cost_model_;
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
  // Rendezvous keys name the sending device's incarnation: its task's.
  prep.partitioning.device_incarnation = runtime_->incarnation();
  prep.partitioning.incarnation_of = [this](const std::string& d) { return view_->IncarnationOf(d); };
  PreparedGraph prepared;
  AF_RETURN_IF_ERROR(PrepareGraph(g, feeds, fetches, targets, prep, &prepared));
  exe->info = std::move(prepared.info);
  AF_RETURN_IF_ERROR(Register(prepared.partitions, exe.get()));
  *out = exe;
  return Status::OK();
}

Status PartitionRegistry::Register(std::vector<GraphPartition>& partitions, Executable* exe) {
  // The partitions of each task, in one request to its worker session.
  struct TaskRequest {
    caf::actor session;
    RegisterPartitionsRequest req;
    std::vector<size_t> parts;  // indices in exe->parts
  };
  std::map<std::string, TaskRequest> by_task;
  for (auto& part : partitions) {
    const ClusterTask* task = view_->TaskOf(part.device);
    if (!task) return errors::Internal("placed on unknown device ", part.device);
    TaskRequest& tr = by_task[task->name];
    if (!tr.session) {
      tr.session = sessions_->Of(task->name);
      tr.req.session_handle = sessions_->handle();
    }
    if (!tr.session) return errors::Internal("no worker session on task ", task->name);
    if (std::find(exe->participants.begin(), exe->participants.end(), task->status.rendezvous) ==
        exe->participants.end())
      exe->participants.push_back(task->status.rendezvous);
    Executable::Part p;
    p.device = part.device;
    p.on_gpu = part.device.find("/device:GPU:") != std::string::npos;
    p.session = tr.session;
    p.arg_indices = part.arg_indices;
    p.retval_indices = part.retval_indices;
    std::string def;
    if (!part.graph.SerializeToString(&def))
      return errors::InvalidArgument("the pruned graph cannot be serialized (over 2 GB?)");
    tr.req.devices.push_back(part.device);
    tr.req.graph_defs.push_back(std::move(def));
    tr.parts.push_back(exe->parts.size());
    exe->parts.push_back(std::move(p));
  }
  // Every task at once; every request sent is answered (or times out) before
  // the outcome is known, and on an error the tasks that did register drop
  // their partitions again (a task that failed dropped its own).
  ChannelPool* channels = runtime_->channels();
  std::vector<std::pair<TaskRequest*, std::unique_ptr<ClientChannel>>> asked;
  Status status;
  for (auto& [task, tr] : by_task) {
    auto ch = channels->Acquire();
    status = ch->Start(tr.session, caf::make_message(std::move(tr.req)));
    if (!status.ok()) break;
    asked.emplace_back(&tr, std::move(ch));
  }
  std::vector<const TaskRequest*> registered;
  for (auto& [tr, ch] : asked) {
    caf::message reply;
    Status s = ch->Wait(kRegisterWait, &reply);
    RegisterPartitionsResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (!errors::IsDeadlineExceeded(s)) channels->Release(std::move(ch));
    if (!s.ok()) s = Status(s.code(), "registering partitions on " + exe->parts[tr->parts[0]].device + ": " + s.message());
    if (s.ok()) s = resp.status;
    if (s.ok() && resp.graph_handles.size() != tr->parts.size())
      s = errors::Internal("a worker session registered ", resp.graph_handles.size(), " of ", tr->parts.size(),
                           " partitions");
    if (s.ok()) {
      const bool direct = resp.devices.size() == tr->parts.size() && resp.device_handles.size() == tr->parts.size();
      for (size_t i = 0; i < tr->parts.size(); ++i) {
        Executable::Part& part = exe->parts[tr->parts[i]];
        part.graph_handle = resp.graph_handles[i];
        if (direct && resp.devices[i] && resp.devices[i]->node() == runtime_->system().node()) {
          part.device_actor = resp.devices[i];
          part.device_handle = resp.device_handles[i];
        }
      }
      registered.push_back(tr);
    } else if (status.ok()) {
      status = s;
    }
  }
  if (!status.ok()) {
    for (const TaskRequest* tr : registered)
      for (size_t i : tr->parts) caf::anon_send(tr->session, DeregisterGraph{exe->parts[i].graph_handle});
    return status;
  }
  return Status::OK();
}

void PartitionRegistry::Deregister(const Executable& exe) const {
  for (const auto& p : exe.parts) caf::anon_send(p.session, DeregisterGraph{p.graph_handle});
}

std::map<std::string, std::string> PartitionRegistry::LastPlacement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_placement_;
}

}  // namespace actorflow
