#include "actorflow/master/master_service.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <iostream>
#include <memory>
#include <set>
#include <vector>

#include "actorflow/core/ids.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/master/local_master.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

namespace {

struct SessionState {
  std::shared_ptr<LocalMaster> master;  // shared with the runners, which may finish a step after the session ends
  caf::actor_addr client;
  std::vector<caf::actor> idle;  // runners waiting for a step
  static const char* name;
};
const char* SessionState::name = "master_session";
using SessionActor = caf::stateful_actor<SessionState>;

// Runners idle beyond this many end; a client running more steps at once gets more.
constexpr size_t kMaxIdleRunners = 4;

// Runs one step at a time, blocking on its own thread (a step waits for the
// device actors). A session hands each MasterRunRequest to an idle runner, so
// a client's concurrent Runs run concurrently, as in one process: a dequeue
// waiting for another call's enqueue does not hold that call up.
caf::behavior Runner(caf::event_based_actor*, std::shared_ptr<LocalMaster> master) {
  return {
      [master](MasterRunRequest& r) {
        MasterRunResponse resp;
        std::vector<std::pair<std::string, Tensor>> feeds;
        if (r.feed_names.size() != r.feed_values.size()) {
          resp.status = errors::InvalidArgument("feed names and values differ in number");
          return resp;
        }
        for (size_t i = 0; i < r.feed_names.size(); ++i) feeds.emplace_back(r.feed_names[i], std::move(r.feed_values[i]));
        RunOptions ro;
        ro.timeout_in_ms = r.timeout_ms;
        ro.trace_level = static_cast<TraceLevel>(r.trace_level);
        RunMetadata md;
        resp.status = master->Run(ro, feeds, r.fetches, r.targets, &resp.outputs, &md);
        resp.stats = std::move(md.step_stats);
        resp.num_cached = master->num_cached_executables();
        for (auto& [node, device] : master->LastPlacement()) {
          resp.placement.push_back(node);
          resp.placement.push_back(device);
        }
        return resp;
      },
  };
}

std::atomic<uint64_t> g_next{1};

Status ParseGraph(const std::string& bytes, proto::GraphDef* def) {
  if (!def->ParseFromString(bytes)) return errors::InvalidArgument("the client's GraphDef does not parse");
  return Status::OK();
}

}  // namespace

caf::actor SpawnMasterService(caf::actor_system& sys, Runtime* runtime, bool has_cluster, ClusterSpec cluster,
                              TaskId task) {
  return sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    // Sessions are linked to the service: when it ends (the server stops),
    // they end; when one of them ends, however abnormally, only it is gone.
    auto sessions = std::make_shared<std::set<caf::actor_addr>>();
    self->set_exit_handler([self, sessions](const caf::exit_msg& msg) {
      if (sessions->erase(msg.source)) {
        if (msg.reason) std::cerr << "actorflow: a remote session failed: " << to_string(msg.reason) << "\n";
        return;
      }
      self->quit(msg.reason);
    });
    return {
        [=](const MasterCreateSessionRequest& req) {
          (void)sessions;
          SessionOptions options;
          options.runtime = runtime;
          options.placement = static_cast<PlacementStrategy>(req.placement);
          options.allow_soft_placement = req.allow_soft_placement;
          options.partitioning.truncate_float32_on_wire = req.truncate_float32_on_wire;
          options.graph_options.do_common_subexpression_elimination = req.do_cse;
          options.graph_options.do_constant_folding = req.do_constant_folding;
          if (req.fuse_optimizer_updates >= 0 && req.fuse_optimizer_updates <= 2)  // else the default
            options.graph_options.fuse_optimizer_updates = static_cast<FuseUpdates>(req.fuse_optimizer_updates);
          options.graph_options.capture_gpu_steps = req.capture_gpu_steps;
          options.graph_options.do_remapping = req.do_remapping;
          const std::string handle = "remote_session_" + std::to_string(NewIncarnation()) + "_" +
                                     std::to_string(g_next.fetch_add(1));
          caf::actor_addr client = req.client ? req.client.address() : caf::actor_addr();
          // The session's calls block (they wait for device actors): it gets a thread of its own.
          caf::actor session = self->spawn<caf::detached + caf::linked>([=](SessionActor* s) -> caf::behavior {
            s->state.master = has_cluster ? std::make_shared<LocalMaster>(options, handle, cluster, task)
                                          : std::make_shared<LocalMaster>(options, handle);
            s->state.client = client;
            if (client) {
              s->monitor(caf::actor_cast<caf::actor>(client));
              s->set_down_handler([s](const caf::down_msg& down) {
                if (down.source != s->state.client) return;
                std::cerr << "actorflow: the client of a remote session went down; the session is closed\n";
                s->state.master->Close();
                s->quit();
              });
            }
            return {
                [s](const MasterExtendRequest& r) {
                  proto::GraphDef def;
                  Status st = ParseGraph(r.graph_def, &def);
                  if (st.ok()) st = s->state.master->Extend(def);
                  return StatusResponse{st};
                },
                [s](const MasterCreateSessionRequest& r) {  // the graph, once connected
                  proto::GraphDef def;
                  Status st = ParseGraph(r.graph_def, &def);
                  if (st.ok()) st = s->state.master->Create(def);
                  return StatusResponse{st};
                },
                [s](MasterRunRequest& r) -> caf::result<MasterRunResponse> {
                  caf::actor runner;
                  if (!s->state.idle.empty()) {
                    runner = std::move(s->state.idle.back());
                    s->state.idle.pop_back();
                  } else {
                    runner = s->spawn<caf::detached + caf::linked>(Runner, s->state.master);
                  }
                  auto rp = s->make_response_promise<MasterRunResponse>();
                  s->request(runner, caf::infinite, std::move(r))
                      .then(
                          [s, runner, rp](MasterRunResponse& resp) mutable {
                            if (s->state.idle.size() < kMaxIdleRunners) s->state.idle.push_back(runner);
                            else s->send_exit(runner, caf::exit_reason::user_shutdown);
                            rp.deliver(std::move(resp));
                          },
                          [s, rp](caf::error& err) mutable {
                            MasterRunResponse resp;
                            resp.status = errors::Internal("the step's runner failed: ", s->system().render(err));
                            rp.deliver(std::move(resp));
                          });
                  return rp;
                },
                [s](const MasterResetRequest& r) { return StatusResponse{s->state.master->ResetContainers(r.containers)}; },
                [s](const MasterCloseRequest&) {
                  const Status st = s->state.master->Close();
                  s->quit();
                  return StatusResponse{st};
                },
            };
          });
          sessions->insert(session.address());
          return MasterCreateSessionResponse{Status::OK(), session};
        },
    };
  });
}

}  // namespace actorflow
