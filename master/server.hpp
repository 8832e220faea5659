// Server: one task of a cluster (TensorFlow's tf.train.Server). It runs a
// Runtime whose actor system speaks CAF's network protocol (with heartbeats)
// and whose rendezvous reaches other tasks through a tensor transport, and
// publishes the task actor (actors/task_actor.hpp) on `bind:port`; a master
// service (master/master_service.hpp) serves clients that name this server
// as their target ("actorflow://host:port").
//
// A program that is a task and a client at once starts a Server and opens
// sessions with `SessionOptions::target = server.target()`: their master runs
// in this process, over the devices of the whole cluster. A parameter server
// starts one and calls Join().
//
// Security: a server executes any graph a peer registers (graphs read and
// write files). It binds to loopback unless told otherwise, and refuses any
// other address unless `insecure` is set.
#pragma once

#include <chrono>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/comm/tls.hpp"

namespace actorflow {

class Runtime;

struct ServerOptions {
  ClusterSpec cluster;   // may be empty: masters then pass the cluster (a server needs only its own task)
  bool has_cluster = false;
  TaskId task;           // job and index; required
  std::string bind = "127.0.0.1";
  int port = -1;         // -1: this task's port in the cluster; 0: any free port
  int num_cpu_devices = 1;
  int num_gpu_devices = -1;
  int num_threads = 0;   // 0: ACTORFLOW_NUM_THREADS or the number of cores
  int heartbeat_ms = 500;
  int peer_timeout_ms = 3000;
  bool insecure = false;  // allow a non-loopback bind without mutual TLS
  /// Mutual TLS on both paths (comm/tls.hpp); any bind address is then allowed.
  TlsOptions tls;
};

/// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopback(const std::string& host);
/// InvalidArgument unless `options` binds to loopback, or is insecure, or has mutual TLS.
Status CheckBindSecurity(const ServerOptions& options);

class Server {
 public:
  /// Starts the server: InvalidArgument for a bad configuration (naming it),
  /// Unavailable when the address cannot be bound.
  static Status Create(ServerOptions options, std::unique_ptr<Server>* out);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// "actorflow://host:port": a session target reaching this server's master.
  std::string target() const;
  uint16_t port() const { return port_; }
  uint16_t transport_port() const;
  Runtime* runtime() { return runtime_.get(); }
  const ServerOptions& options() const { return options_; }
  const std::string& task_name() const;

  /// Blocks until Stop() or an accepted ShutdownRequest; returns the reason.
  std::string Join();
  /// Ends Join(); the server stops serving when destroyed.
  void RequestStop(const std::string& reason);

  /// Asks every task of `job` in this server's cluster to stop (a
  /// ShutdownRequest, as from an authenticated cluster member): the end of
  /// training, when the chief tells the ps tasks. A task that is already gone
  /// counts as stopped; any other failure is returned, naming the task.
  Status ShutdownTasks(const std::string& job, const std::string& reason,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

  /// The server of this process with this target, or null.
  static Server* FindInProcess(const std::string& target);

 private:
  Server() = default;
  ServerOptions options_;
  std::unique_ptr<Runtime> runtime_;
  struct Actors;
  std::unique_ptr<Actors> actors_;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string stop_reason_;
};

}  // namespace actorflow
