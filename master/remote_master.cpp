#include "actorflow/master/remote_master.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/manager.hpp>

#include <map>
#include <utility>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

// The actor system a client process reaches remote masters with: CAF's
// network layer with heartbeats (a hung server is detected), one thread.
struct ClientNet {
  struct Config : caf::actor_system_config {
    explicit Config(const TlsOptions& tls) {
      RegisterMessageTypes(*this);
      load<caf::io::middleman>();
      if (tls.enabled()) {
        load<caf::openssl::manager>();
        set("openssl.certificate", tls.cert);
        set("openssl.key", tls.key);
        set("openssl.cafile", tls.ca);
        if (!tls.key_passphrase.empty()) set("openssl.passphrase", tls.key_passphrase);
      }
      set("scheduler.max-threads", size_t{1});
      set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(500)});
      set("middleman.connection-timeout", caf::timespan{std::chrono::milliseconds(3000)});
    }
  };
  explicit ClientNet(const TlsOptions& tls) : cfg(tls) {}
  Config cfg;
  caf::actor_system system{cfg};
  ChannelPool channels{system};
};

// One plain and one secured network per process, made on first use and never
// destroyed (as Runtime::Default(): tearing CAF down from an exit handler is unsafe).
// One per set of credentials (a client presenting two identities has two).
ClientNet& NetFor(const TlsOptions& tls) {
  static std::mutex mu;
  static auto* nets = new std::map<std::string, ClientNet*>;
  const std::string key = tls.cert + '\n' + tls.key + '\n' + tls.ca + '\n' + tls.key_passphrase;
  std::lock_guard<std::mutex> lock(mu);
  ClientNet*& net = (*nets)[key];
  if (!net) net = new ClientNet(tls);
  return *net;
}

namespace {

// Waits this much longer than a step's own deadline for the master's answer.
constexpr auto kReplyGrace = std::chrono::seconds(30);

}  // namespace

RemoteMaster::RemoteMaster(SessionOptions options, std::string address)
    : options_(std::move(options)), address_(std::move(address)) {}

Status RemoteMaster::Network() {
  if (net_) return Status::OK();
  if (options_.tls.enabled()) AF_RETURN_IF_ERROR(CheckTlsFiles(options_.tls));
  try {
    net_ = &NetFor(options_.tls);
  } catch (const std::exception& e) {
    return errors::Unavailable("starting the client's network: ", e.what());
  }
  return Status::OK();
}

RemoteMaster::~RemoteMaster() { Close(); }

Status RemoteMaster::Call(caf::message msg, std::chrono::milliseconds timeout, caf::message* reply) {
  caf::actor session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return errors::Cancelled("Session has been closed");
    session = session_;
  }
  if (!session) return errors::FailedPrecondition("Session has no graph: call Create first");
  auto ch = net_->channels.Acquire();
  Status s = ch->Ask(session, std::move(msg), timeout, reply);
  if (errors::IsDeadlineExceeded(s)) return errors::DeadlineExceeded("no answer from the master at ", address_);
  net_->channels.Release(std::move(ch));
  if (!s.ok()) return Status(s.code(), "the master at " + address_ + ": " + s.message());
  return Status::OK();
}

Status RemoteMaster::Connect() {
  if (!options_.rendezvous.job.empty())  // not carried to a remote master: refused, not silently dropped
    return errors::InvalidArgument("a rendezvous round (SessionOptions::rendezvous, job ", options_.rendezvous.job,
                                   ") needs a master in this process (a Server's target), not ", address_);
  AF_RETURN_IF_ERROR(Network());
  const auto timeout = std::chrono::milliseconds(options_.device_find_timeout_ms);
  caf::actor task;
  AF_RETURN_IF_ERROR(ConnectToTask(net_->system, address_, timeout, &task));
  GetStatusResponse status;
  Status s = net_->channels.Ask(task, GetStatusRequest{"client"}, timeout, &status);
  if (!s.ok()) return Status(s.code(), "asking the server at " + address_ + " for its master: " + s.message());
  if (!status.master) return errors::Unavailable("the server at ", address_, " has no master service");
  MasterCreateSessionRequest req;
  // An actor of this client's own (not a pooled channel, which another
  // session may drop): its end ends the remote session.
  caf::actor client = net_->system.spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
  req.client = client;
  req.placement = static_cast<int32_t>(options_.placement);
  req.allow_soft_placement = options_.allow_soft_placement;
  req.truncate_float32_on_wire = options_.partitioning.truncate_float32_on_wire;
  req.do_cse = options_.graph_options.do_common_subexpression_elimination;
  req.do_constant_folding = options_.graph_options.do_constant_folding;
  req.fuse_optimizer_updates = static_cast<int32_t>(options_.graph_options.fuse_optimizer_updates);
  req.capture_gpu_steps = options_.graph_options.capture_gpu_steps;
  req.do_remapping = options_.graph_options.do_remapping;
  MasterCreateSessionResponse resp;
  s = net_->channels.Ask(status.master, req, timeout, &resp);
  if (s.ok()) s = resp.status;
  if (!s.ok()) {
    caf::anon_send_exit(client, caf::exit_reason::user_shutdown);
    return Status(s.code(), "opening a session on the master at " + address_ + ": " + s.message());
  }
  std::lock_guard<std::mutex> lock(mu_);
  session_ = resp.session;
  client_ = client;
  return Status::OK();
}

Status RemoteMaster::Create(const proto::GraphDef& graph) try {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return errors::FailedPrecondition("Session has been closed");
    if (session_) return errors::AlreadyExists("Session already has a graph; use Extend to add nodes");
  }
  AF_RETURN_IF_ERROR(Connect());
  MasterCreateSessionRequest req;
  if (!graph.SerializeToString(&req.graph_def)) return errors::InvalidArgument("the graph cannot be serialized");
  caf::message reply;
  Status s = Call(caf::make_message(std::move(req)), std::chrono::milliseconds(0), &reply);
  StatusResponse resp;
  if (s.ok()) s = ReplyAs(reply, &resp);
  if (s.ok()) s = resp.status;
  if (!s.ok()) {  // a later Create may try again
    caf::actor session, client;
    {
      std::lock_guard<std::mutex> lock(mu_);
      session = std::exchange(session_, caf::actor());
      client = std::exchange(client_, caf::actor());
    }
    if (session) caf::anon_send(session, MasterCloseRequest{});
    if (client) caf::anon_send_exit(client, caf::exit_reason::user_shutdown);
  }
  return s;
} catch (...) {
  return CurrentExceptionStatus("Session::Create");
}

Status RemoteMaster::Extend(const proto::GraphDef& graph) try {
  MasterExtendRequest req;
  if (!graph.SerializeToString(&req.graph_def)) return errors::InvalidArgument("the graph cannot be serialized");
  caf::message reply;
  AF_RETURN_IF_ERROR(Call(caf::make_message(std::move(req)), std::chrono::milliseconds(0), &reply));
  StatusResponse resp;
  AF_RETURN_IF_ERROR(ReplyAs(reply, &resp));
  return resp.status;
} catch (...) {
  return CurrentExceptionStatus("Session::Extend");
}

Status RemoteMaster::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                         const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                         std::vector<Tensor>* outputs, RunMetadata* metadata) try {
  if (outputs) outputs->clear();
  MasterRunRequest req;
  for (const auto& [name, value] : feeds) {
    req.feed_names.push_back(name);
    req.feed_values.push_back(value);
  }
  req.fetches = fetches;
  req.targets = targets;
  req.timeout_ms = options.timeout_in_ms;
  req.trace_level = static_cast<int32_t>(options.collects_step_stats() ? std::max(options.trace_level,
                                                                                  TraceLevel::kSoftwareTrace)
                                                                       : TraceLevel::kNoTrace);
  std::chrono::milliseconds wait{0};  // unbounded, but the session actor is watched: a dead server fails the call
  if (options.timeout_in_ms > 0) wait = std::chrono::milliseconds(options.timeout_in_ms) + kReplyGrace;
  caf::message reply;
  AF_RETURN_IF_ERROR(Call(caf::make_message(std::move(req)), wait, &reply));
  MasterRunResponse resp;
  AF_RETURN_IF_ERROR(ReplyAs(reply, &resp));
  {
    std::lock_guard<std::mutex> lock(mu_);
    num_cached_ = resp.num_cached;
    placement_.clear();
    for (size_t i = 0; i + 1 < resp.placement.size(); i += 2) placement_[resp.placement[i]] = resp.placement[i + 1];
  }
  if (metadata) metadata->step_stats = std::move(resp.stats);
  AF_RETURN_IF_ERROR(resp.status);
  if (resp.outputs.size() != fetches.size())
    return errors::Internal("the master returned ", resp.outputs.size(), " tensors for ", fetches.size(), " fetches");
  if (outputs) *outputs = std::move(resp.outputs);
  return Status::OK();
} catch (...) {
  return CurrentExceptionStatus("Session::Run");
}

Status RemoteMaster::Close() {
  caf::actor session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Status::OK();
    session = session_;
  }
  Status s;
  if (session) {
    caf::message reply;
    s = Call(caf::make_message(MasterCloseRequest{}), std::chrono::milliseconds(options_.device_find_timeout_ms),
             &reply);
    StatusResponse resp;
    if (s.ok()) s = ReplyAs(reply, &resp);
    if (s.ok()) s = resp.status;
  }
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  session_ = caf::actor();
  if (client_) caf::anon_send_exit(client_, caf::exit_reason::user_shutdown);
  client_ = caf::actor();
  return s;
}

Status RemoteMaster::ResetContainers(const std::vector<std::string>& containers) {
  caf::message reply;
  AF_RETURN_IF_ERROR(Call(caf::make_message(MasterResetRequest{containers}),
                          std::chrono::milliseconds(options_.device_find_timeout_ms), &reply));
  StatusResponse resp;
  AF_RETURN_IF_ERROR(ReplyAs(reply, &resp));
  return resp.status;
}

size_t RemoteMaster::num_cached_executables() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_cached_;
}

std::map<std::string, std::string> RemoteMaster::LastPlacement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return placement_;
}

}  // namespace actorflow
