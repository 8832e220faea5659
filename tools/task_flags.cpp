// Which task a process is and how it serves, as flags: see tools/task_flags.hpp.
#include "tools/task_flags.hpp"

#include <fstream>

#include "actorflow/master/server_environment.hpp"
#include "tools/cli_common.hpp"

namespace actorflow {
namespace cli {

const std::set<std::string> kTaskFlags = {"--cluster", "--jobs",         "--port-base",      "--bind",
                                          "--security", "--cert",       "--key",            "--ca",
                                          "--key-passphrase-file",      "--heartbeat-ms",   "--peer-timeout-ms"};
const char kServeSwitch[] = "--insecure";

Status ParseTaskFlag(const std::string& flag, const std::string& value, TaskFlags* task, bool* taken) {
  *taken = true;
  ServeFlags* f = &task->serve;
  if (flag == "--cluster") return SetOnce(flag, value, &task->cluster);
  if (flag == "--jobs") return SetOnce(flag, value, &task->resolver.jobs);
  if (flag == "--port-base") return ParseInt(flag, value, 1, 65535, &task->resolver.port_base);
  if (flag == kServeSwitch) {
    f->insecure = true;
    return Status::OK();
  }
  if (flag == "--bind") return SetOnce(flag, value, &f->bind);
  if (flag == "--security") {
    if (value != "none" && value != "mtls")
      return errors::InvalidArgument("--security expects none or mtls, got '", value, "'");
    return SetOnce(flag, value, &f->security);
  }
  if (flag == "--cert") return SetOnce(flag, value, &f->cert);
  if (flag == "--key") return SetOnce(flag, value, &f->key);
  if (flag == "--ca") return SetOnce(flag, value, &f->ca);
  if (flag == "--key-passphrase-file") return SetOnce(flag, value, &f->passphrase_file);
  if (flag == "--heartbeat-ms") return ParseInt(flag, value, 1, 3600000, &f->heartbeat_ms);
  if (flag == "--peer-timeout-ms") return ParseInt(flag, value, 1, 3600000, &f->peer_timeout_ms);
  *taken = false;
  return Status::OK();
}

Status ApplyServeFlags(const ServeFlags& f, const EnvironmentReader& env, ServerOptions* options) {
  const bool tls_files = !f.cert.empty() || !f.key.empty() || !f.ca.empty() || !f.passphrase_file.empty();
  if (f.security != "mtls" && tls_files)
    return errors::InvalidArgument("--cert, --key, --ca and --key-passphrase-file go with --security mtls");
  // The timing flags first, so that the variables' check (peer timeout above
  // heartbeat) sees what the flags will leave; then the variables, then the flags.
  if (f.heartbeat_ms > 0) options->heartbeat_ms = f.heartbeat_ms;
  if (f.peer_timeout_ms > 0) options->peer_timeout_ms = f.peer_timeout_ms;
  AF_RETURN_IF_ERROR(ApplyServerEnvironment(options, env));
  if (!f.bind.empty()) options->bind = f.bind;
  if (f.insecure) options->insecure = true;
  if (f.heartbeat_ms > 0) options->heartbeat_ms = f.heartbeat_ms;
  if (f.peer_timeout_ms > 0) options->peer_timeout_ms = f.peer_timeout_ms;
  if (f.security == "none") options->tls = TlsOptions();
  if (f.security == "mtls") {
    if (f.cert.empty() || f.key.empty() || f.ca.empty())
      return errors::InvalidArgument("--security mtls needs --cert, --key and --ca");
    TlsOptions tls;
    tls.cert = f.cert;
    tls.key = f.key;
    tls.ca = f.ca;
    if (!f.passphrase_file.empty()) {
      std::ifstream in(f.passphrase_file);
      if (!in) return errors::InvalidArgument("--key-passphrase-file: cannot read '", f.passphrase_file, "'");
      std::getline(in, tls.key_passphrase);
    }
    // Every file is checked now: a wrong one is a usage error naming it, never an abort at the first connection.
    const Status checked = CheckTlsFiles(tls);
    if (!checked.ok()) return errors::InvalidArgument("--security mtls: ", checked.message());
    options->tls = tls;
  }
  if (options->peer_timeout_ms <= options->heartbeat_ms)
    return errors::InvalidArgument("--peer-timeout-ms must exceed --heartbeat-ms");
  return Status::OK();
}

std::vector<std::string> ServeArgs(const ServerOptions& options) {
  std::vector<std::string> args = {"--bind", options.bind};
  if (options.insecure) args.push_back(kServeSwitch);
  if (options.tls.enabled())
    args.insert(args.end(), {"--security", "mtls", "--cert", options.tls.cert, "--key", options.tls.key, "--ca",
                             options.tls.ca});
  args.insert(args.end(), {"--heartbeat-ms", std::to_string(options.heartbeat_ms), "--peer-timeout-ms",
                           std::to_string(options.peer_timeout_ms)});
  return args;
}

}  // namespace cli
}  // namespace actorflow
