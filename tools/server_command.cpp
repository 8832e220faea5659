#include "tools/server_command.hpp"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/cluster_resolver.hpp"
#include "actorflow/master/server.hpp"
#include "tools/cli_common.hpp"
#include "tools/task_flags.hpp"

namespace actorflow {
namespace cli {

namespace {

extern const char kServerUsage[] = R"(usage: actorflow server [--cluster FILE|JSON|tf_config|slurm|auto [--jobs JOB:N,...] [--port-base P]]
                        [--job NAME --task N] [--port P] [--bind ADDR] [--port-file FILE]
                        [--devices cpu:N[,gpu:M]] [--threads N] [--heartbeat-ms N]
                        [--peer-timeout-ms N] [--insecure]
                        [--security none|mtls --cert F --key F --ca F [--key-passphrase-file F]]
Runs one task of a cluster until SIGINT, SIGTERM or a shutdown request.
  --cluster FILE|JSON   the cluster ({"worker": ["127.0.0.1:2223"], "ps": [...]}, or TF_CONFIG's
                        form), the JSON itself or a file holding it
  --cluster tf_config   the TF_CONFIG variable (as Kubeflow's TFJob writes it too)
  --cluster slurm       this Slurm task's place in its job step (SLURM_PROCID, SLURM_STEP_*):
                        --jobs JOB:N,... gives ranks to jobs in that order (default: every task
                        a worker); a task serves on its node at --port-base P (default 8888)
                        plus its index among the node's tasks
  --cluster auto        tf_config if TF_CONFIG is set, else slurm inside a Slurm step, else one
                        local worker task at 127.0.0.1:P
                        (default: the TF_CONFIG variable when set, else no cluster)
  --job NAME --task N   this task (default: the cluster's task)
  --port P              the port to serve on (default: this task's in the cluster; 0: any free one)
  --bind ADDR           the address to serve on (default 127.0.0.1; another address needs --insecure
                        or --security mtls)
  --port-file FILE      writes "PORT TRANSPORT_PORT" there once serving (atomically)
  --devices cpu:N[,gpu:M]  devices of this task (default cpu:1 and every GPU)
  --threads N           compute threads (default: ACTORFLOW_NUM_THREADS or the cores)
  --heartbeat-ms N      heartbeat interval to peers (default 500)
  --peer-timeout-ms N   a peer silent this long is down (default 3000)
  --security none|mtls  plaintext (default; loopback only unless --insecure), or mutual TLS on
                        control messages and tensors: --cert and --key (PEM, signed by the
                        cluster CA) and --ca (the cluster CA), checked before the server starts
  --insecure            allow a non-loopback --bind in plaintext
The ACTORFLOW_* variables (ACTORFLOW_BIND, ACTORFLOW_INSECURE, ACTORFLOW_TLS_CERT, _KEY, _CA,
ACTORFLOW_HEARTBEAT_MS, ACTORFLOW_PEER_TIMEOUT_MS) are defaults the flags override.
Exit status: 0 stopped cleanly, 1 failed while running, 2 usage or configuration error.
)";

Status WritePortFile(const std::string& path, uint16_t port, uint16_t transport_port) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    if (!f) return errors::InvalidArgument("--port-file: cannot write '", tmp, "'");
    f << port << " " << transport_port << "\n";
    if (!f.flush()) return errors::InvalidArgument("--port-file: cannot write '", tmp, "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return errors::InvalidArgument("--port-file: cannot write '", path, "'");
  }
  return Status::OK();
}

}  // namespace

int ServerCommand(const std::vector<std::string>& argv) {
  // SIGINT and SIGTERM are taken by one thread (sigwait), blocked in every
  // other: set before any thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  bool help = false;
  std::string job, port_file;
  int task = -1, port = -2, threads = 0;
  bool has_task = false, has_devices = false;
  DeviceCounts devices;
  TaskFlags task_flags;
  std::string& cluster_arg = task_flags.cluster;
  std::set<std::string> known = {"--job", "--task", "--port", "--port-file", "--devices", "--threads"};
  known.insert(kTaskFlags.begin(), kTaskFlags.end());
  Status parsed = ParseFlags(
      argv, known, &help,
      [&](const std::string& flag, const std::string& value) -> Status {
        bool taken = false;
        AF_RETURN_IF_ERROR(ParseTaskFlag(flag, value, &task_flags, &taken));
        if (taken) return Status::OK();
        if (flag == "--job") return SetOnce(flag, value, &job);
        if (flag == "--task") {
          has_task = true;
          return ParseInt(flag, value, 0, 1 << 20, &task);
        }
        if (flag == "--port") return ParseInt(flag, value, 0, 65535, &port);
        if (flag == "--port-file") return SetOnce(flag, value, &port_file);
        if (flag == "--devices") {
          has_devices = true;
          return ParseDevices(value, &devices);
        }
        if (flag == "--threads") return ParseInt(flag, value, 1, 1024, &threads);
        return errors::InvalidArgument("unknown flag ", flag);
      },
      {kServeSwitch});
  if (help) {
    std::cout << kServerUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  ServerOptions options;
  const Status served = ApplyServeFlags(task_flags.serve, nullptr, &options);
  if (!served.ok()) return UsageError(served);

  // The cluster: --cluster, else TF_CONFIG when set, else none (--job, --task and --port say it all).
  TaskId from_config;
  if (cluster_arg.empty() && ReadVariable(nullptr, "TF_CONFIG") && *ReadVariable(nullptr, "TF_CONFIG"))
    cluster_arg = "tf_config";
  if (!cluster_arg.empty()) {
    ResolvedCluster resolved;
    const Status s = ResolveCluster(cluster_arg, task_flags.resolver, nullptr, &resolved);
    if (!s.ok()) return UsageError(s);
    options.cluster = resolved.cluster;
    options.has_cluster = true;
    from_config = resolved.task;
  }
  options.task = from_config;
  if (!job.empty()) options.task.job = job;
  if (has_task) options.task.index = task;
  if (!job.empty() != has_task && !from_config.valid())
    return UsageError(errors::InvalidArgument("--job and --task go together"));
  options.port = port == -2 ? -1 : port;
  options.num_cpu_devices = devices.cpu;
  options.num_gpu_devices = has_devices ? devices.gpu : -1;
  options.num_threads = threads;

  std::unique_ptr<Server> server;
  const Status started = Server::Create(options, &server);
  if (!started.ok())
    return CommandError(started, started.code() == Code::kUnavailable ? kExitStepFailed : kExitUsage);
  if (!port_file.empty()) {
    const Status written = WritePortFile(port_file, server->port(), server->transport_port());
    if (!written.ok()) return UsageError(written);
  }
  std::cout << "actorflow server: task " << server->task_name() << " serving at " << server->target()
            << " (tensor transport port " << server->transport_port() << ")" << std::endl;

  Server* raw = server.get();
  std::atomic<bool> stopping{false};
  std::thread waiter([raw, signals, &stopping] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!stopping.load()) raw->RequestStop(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal");
  });
  const std::string reason = server->Join();
  std::cout << "actorflow server: task " << server->task_name() << " stopping (" << reason << ")" << std::endl;
  // The waiter may still wait for a signal: send it one it takes and ends on, while the server still exists.
  stopping.store(true);
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  server.reset();
  return kExitOk;
}

}  // namespace cli
}  // namespace actorflow
