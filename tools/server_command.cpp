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
#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/comm/tls.hpp"
#include "tools/cli_common.hpp"

namespace actorflow {
namespace cli {

namespace {

extern const char kServerUsage[] = R"(usage: actorflow server [--cluster FILE|JSON] [--job NAME --task N] [--port P]
                        [--bind ADDR] [--port-file FILE] [--devices cpu:N[,gpu:M]] [--threads N]
                        [--heartbeat-ms N] [--peer-timeout-ms N] [--insecure]
                        [--security none|mtls --cert F --key F --ca F [--key-passphrase-file F]]
Runs one task of a cluster until SIGINT, SIGTERM or a shutdown request.
  --cluster FILE|JSON   the cluster ({"worker": ["127.0.0.1:2223"], "ps": [...]}, or TF_CONFIG's
                        form); default: the TF_CONFIG environment variable
  --job NAME --task N   this task (default: TF_CONFIG's task)
  --port P              the port to serve on (default: this task's in the cluster; 0: any free one)
  --bind ADDR           the address to serve on (default 127.0.0.1; another address needs --insecure)
  --port-file FILE      writes "PORT TRANSPORT_PORT" there once serving (atomically)
  --devices cpu:N[,gpu:M]  devices of this task (default cpu:1 and every GPU)
  --threads N           compute threads (default: ACTORFLOW_NUM_THREADS or the cores)
  --heartbeat-ms N      heartbeat interval to peers (default 500)
  --peer-timeout-ms N   a peer silent this long is down (default 3000)
  --security none|mtls  plaintext (default; loopback only unless --insecure), or mutual TLS on
                        control messages and tensors: --cert and --key (PEM, signed by the
                        cluster CA) and --ca (the cluster CA), checked before the server starts
  --insecure            allow a non-loopback --bind in plaintext
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
  std::string cluster_arg, job, port_file, security = "none";
  int task = -1, port = -2, threads = 0, heartbeat = 500, peer_timeout = 3000;
  bool has_task = false, insecure = false, has_devices = false;
  std::string bind;  // default 127.0.0.1
  DeviceCounts devices;
  const std::set<std::string> known = {"--cluster", "--job",     "--task",         "--port",
                                       "--bind",    "--port-file", "--devices",    "--threads",
                                       "--heartbeat-ms", "--peer-timeout-ms", "--security", "--cert",
                                       "--key",     "--ca",      "--key-passphrase-file"};
  std::string cert, key, ca, passphrase_file;
  Status parsed = ParseFlags(
      argv, known, &help,
      [&](const std::string& flag, const std::string& value) -> Status {
        if (flag == "--cluster") return SetOnce(flag, value, &cluster_arg);
        if (flag == "--job") return SetOnce(flag, value, &job);
        if (flag == "--task") {
          has_task = true;
          return ParseInt(flag, value, 0, 1 << 20, &task);
        }
        if (flag == "--port") return ParseInt(flag, value, 0, 65535, &port);
        if (flag == "--bind") return SetOnce(flag, value, &bind);
        if (flag == "--port-file") return SetOnce(flag, value, &port_file);
        if (flag == "--devices") {
          has_devices = true;
          return ParseDevices(value, &devices);
        }
        if (flag == "--threads") return ParseInt(flag, value, 1, 1024, &threads);
        if (flag == "--heartbeat-ms") return ParseInt(flag, value, 1, 3600000, &heartbeat);
        if (flag == "--peer-timeout-ms") return ParseInt(flag, value, 1, 3600000, &peer_timeout);
        if (flag == "--security") {
          security = value;
          if (value != "none" && value != "mtls")
            return errors::InvalidArgument("--security expects none or mtls, got '", value, "'");
          return Status::OK();
        }
        if (flag == "--cert") return SetOnce(flag, value, &cert);
        if (flag == "--key") return SetOnce(flag, value, &key);
        if (flag == "--ca") return SetOnce(flag, value, &ca);
        if (flag == "--key-passphrase-file") return SetOnce(flag, value, &passphrase_file);
        if (flag == "--insecure") {
          insecure = true;
          return Status::OK();
        }
        return errors::InvalidArgument("unknown flag ", flag);
      },
      {"--insecure"});
  if (help) {
    std::cout << kServerUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  if (security == "none" && (!cert.empty() || !key.empty() || !ca.empty() || !passphrase_file.empty()))
    return UsageError(errors::InvalidArgument("--cert, --key, --ca and --key-passphrase-file go with --security mtls"));
  TlsOptions tls;
  if (security == "mtls") {
    if (cert.empty() || key.empty() || ca.empty())
      return UsageError(errors::InvalidArgument("--security mtls needs --cert, --key and --ca"));
    tls.cert = cert;
    tls.key = key;
    tls.ca = ca;
    if (!passphrase_file.empty()) {
      std::ifstream f(passphrase_file);
      if (!f) return UsageError(errors::InvalidArgument("--key-passphrase-file: cannot read '", passphrase_file, "'"));
      std::getline(f, tls.key_passphrase);
    }
    // Every file is checked now: a wrong one is a usage error naming it, never an abort at the first connection.
    const Status checked = CheckTlsFiles(tls);
    if (!checked.ok()) return UsageError(errors::InvalidArgument("--security mtls: ", checked.message()));
  }

  ServerOptions options;
  TaskId from_config;
  if (!cluster_arg.empty()) {
    const Status s = ParseClusterArg(cluster_arg, &options.cluster, &from_config);
    if (!s.ok()) return UsageError(s);
    options.has_cluster = true;
  } else {
    bool found = false;
    const Status s = ClusterSpec::FromEnvironment(&options.cluster, &from_config, &found);
    if (!s.ok()) return UsageError(errors::InvalidArgument("TF_CONFIG: ", s.message()));
    options.has_cluster = found;
  }
  options.task = from_config;
  if (!job.empty()) options.task.job = job;
  if (has_task) options.task.index = task;
  if (!job.empty() != has_task && !from_config.valid())
    return UsageError(errors::InvalidArgument("--job and --task go together"));
  options.bind = bind.empty() ? "127.0.0.1" : bind;
  options.port = port == -2 ? -1 : port;
  options.num_cpu_devices = devices.cpu;
  options.num_gpu_devices = has_devices ? devices.gpu : -1;
  options.num_threads = threads;
  options.heartbeat_ms = heartbeat;
  options.peer_timeout_ms = peer_timeout;
  options.insecure = insecure;
  options.tls = tls;
  if (peer_timeout <= heartbeat)
    return UsageError(errors::InvalidArgument("--peer-timeout-ms must exceed --heartbeat-ms"));

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
