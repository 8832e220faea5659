#include "actorflow/master/server.hpp"

#include "actorflow/comm/membership.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/manager.hpp>

#include <map>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/actors/task_actor.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/master/master_service.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {

namespace {
std::mutex g_servers_mu;
std::map<std::string, Server*> g_servers;  // by target; guarded by g_servers_mu
}  // namespace

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

Status CheckBindSecurity(const ServerOptions& options) {
  if (IsLoopback(options.bind) || options.insecure || options.tls.enabled()) return Status::OK();
  return errors::InvalidArgument(
      "refusing to bind ", options.bind,
      " without mutual TLS: a server runs any graph a peer sends it (graphs read and write files). Bind to "
      "127.0.0.1, or pass --insecure on a network you trust");
}

struct Server::Actors {
  caf::actor task;
  caf::actor master;
};

Status Server::Create(ServerOptions options, std::unique_ptr<Server>* out) {
  if (!options.task.valid())
    return errors::InvalidArgument("a server needs its task: a job name and a task index (--job, --task or TF_CONFIG)");
  if (options.has_cluster) AF_RETURN_IF_ERROR(options.cluster.CheckTask(options.task));
  if (options.port < 0) {
    if (!options.has_cluster)
      return errors::InvalidArgument("no port: give --port, or a cluster naming task ", options.task.name());
    std::string address, host;
    uint16_t port = 0;
    AF_RETURN_IF_ERROR(options.cluster.Address(options.task, &address));
    AF_RETURN_IF_ERROR(SplitHostPort(address, &host, &port));
    options.port = port;
  }
  if (options.port > 65535) return errors::InvalidArgument("--port must be in 0..65535, got ", options.port);
  if (options.tls.enabled()) AF_RETURN_IF_ERROR(CheckTlsFiles(options.tls));
  AF_RETURN_IF_ERROR(CheckBindSecurity(options));
  if (options.bind == "localhost") options.bind = "127.0.0.1";
  if (options.bind == "[::1]") options.bind = "::1";
  if (options.num_cpu_devices < 1) return errors::InvalidArgument("a server needs at least one CPU device");
  auto server = std::unique_ptr<Server>(new Server);
  server->options_ = options;
  RuntimeOptions ro;
  ro.job = options.task.job;
  ro.task = options.task.index;
  ro.num_threads = options.num_threads;
  ro.num_cpu_devices = options.num_cpu_devices;
  ro.num_gpu_devices = options.num_gpu_devices;
  ro.network = true;
  ro.bind_host = options.bind;
  ro.heartbeat_ms = options.heartbeat_ms;
  ro.peer_timeout_ms = options.peer_timeout_ms;
  ro.tls = options.tls;
  try {
    server->runtime_ = std::make_unique<Runtime>(ro);
  } catch (const std::invalid_argument& e) {
    return errors::InvalidArgument("starting task ", options.task.name(), ": ", e.what());
  } catch (const std::exception& e) {
    return errors::Unavailable("starting task ", options.task.name(), ": ", e.what());
  }
  Runtime* rt = server->runtime_.get();
  server->actors_ = std::make_unique<Actors>();
  server->actors_->master =
      SpawnMasterService(rt->system(), rt, options.has_cluster, options.cluster, options.task);
  TaskActorConfig tc;
  tc.status = DescribeTask(*rt, options.bind, server->actors_->master);
  tc.worker = rt->worker_actor();
  tc.membership = rt->membership();
  Server* raw = server.get();
  tc.on_shutdown = [raw](const std::string& reason) { raw->RequestStop("shutdown requested: " + reason); };
  server->actors_->task = SpawnTaskActor(rt->system(), std::move(tc));
  auto port = options.tls.enabled()
                  ? caf::openssl::publish(server->actors_->task, static_cast<uint16_t>(options.port),
                                          options.bind.c_str(), true)
                  : rt->system().middleman().publish(server->actors_->task, static_cast<uint16_t>(options.port),
                                                     options.bind.c_str(), true);
  if (!port) {
    const std::string why = rt->system().render(port.error());
    caf::anon_send_exit(server->actors_->task, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(server->actors_->master, caf::exit_reason::user_shutdown);
    return errors::Unavailable("cannot listen on ", options.bind, ":", options.port, ": ", why);
  }
  server->port_ = *port;
  // This task in its own membership where the cluster says peers reach it: a
  // task bound to every interface (0.0.0.0) still knows its host, which the
  // collectives' layout by host (comm/collective_layout.hpp) needs.
  std::string self_address, self_host;
  uint16_t ignored = 0;
  if (options.has_cluster && rt->transport() && options.cluster.Address(options.task, &self_address).ok() &&
      SplitHostPort(self_address, &self_host, &ignored).ok())
    (void)rt->membership()->Update(  // this process's own incarnation: never refused
        TaskRecord::At(rt->task_name(), self_host, rt->transport()->port(), rt->incarnation()));
  {
    std::lock_guard<std::mutex> lock(g_servers_mu);
    g_servers[server->target()] = server.get();
  }
  *out = std::move(server);
  return Status::OK();
}

Server::~Server() {
  {
    std::lock_guard<std::mutex> lock(g_servers_mu);
    g_servers.erase(target());
  }
  if (actors_) {
    auto& mm = runtime_->system().middleman();
    if (options_.tls.enabled())  // (caf/openssl/unpublish.hpp does not compile in 0.17.6: ask its manager)
      caf::anon_send(runtime_->system().openssl_manager().actor_handle(), caf::unpublish_atom::value,
                     actors_->task.address(), port_);
    else
      (void)mm.unpublish(actors_->task, port_);
    caf::anon_send_exit(actors_->task, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(actors_->master, caf::exit_reason::user_shutdown);
    actors_.reset();
  }
  runtime_.reset();
}

std::string Server::target() const {
  const std::string host = options_.bind.find(':') != std::string::npos && options_.bind.front() != '['
                               ? "[" + options_.bind + "]"
                               : options_.bind;
  return "actorflow://" + host + ":" + std::to_string(port_);
}

uint16_t Server::transport_port() const { return runtime_->transport() ? runtime_->transport()->port() : 0; }

const std::string& Server::task_name() const { return runtime_->task_name(); }

std::string Server::Join() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return stop_; });
  return stop_reason_;
}

void Server::RequestStop(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    stop_reason_ = reason;
  }
  cv_.notify_all();
}

Status Server::ShutdownTasks(const std::string& job, const std::string& reason, std::chrono::milliseconds timeout) {
  for (const int i : options_.cluster.task_indices(job)) {
    const TaskId id{job, i};
    std::string address;
    AF_RETURN_IF_ERROR(options_.cluster.Address(id, &address));
    caf::actor task;
    Status s = ConnectToTask(runtime_->system(), address, timeout, &task);
    if (errors::IsUnavailable(s)) continue;  // gone already: nothing to stop
    if (s.ok()) {
      StatusResponse r;
      s = runtime_->channels()->Ask(task, ShutdownRequest{reason}, timeout, &r);
      if (s.ok()) s = r.status;
    }
    if (!s.ok())
      return Status(s.code(), "cannot stop /job:" + job + "/replica:0/task:" + std::to_string(i) + " at " + address +
                                  ": " + s.message());
  }
  return Status::OK();
}

Server* Server::FindInProcess(const std::string& target) {
  std::lock_guard<std::mutex> lock(g_servers_mu);
  auto it = g_servers.find(target);
  return it == g_servers.end() ? nullptr : it->second;
}

}  // namespace actorflow
