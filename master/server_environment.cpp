#include "actorflow/master/server_environment.hpp"

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace actorflow {
namespace {

Status ParseMs(const char* name, const char* value, int* out) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < 1 || v > 3600000)
    return errors::InvalidArgument(name, "='", value, "': expects milliseconds, an integer in 1..3600000");
  *out = static_cast<int>(v);
  return Status::OK();
}

}  // namespace

Status ApplyServerEnvironment(ServerOptions* options, const EnvironmentReader& env) {
  auto get = [&env](const char* name) { return ReadVariable(env, name); };
  if (const char* bind = get("ACTORFLOW_BIND")) {
    if (*bind == '\0') return errors::InvalidArgument("ACTORFLOW_BIND is set but empty: expects an address to serve on");
    options->bind = bind;
  }
  if (const char* insecure = get("ACTORFLOW_INSECURE")) {
    const std::string v = insecure;
    if (v == "1" || v == "true") options->insecure = true;
    else if (v == "0" || v == "false" || v.empty()) options->insecure = false;
    else return errors::InvalidArgument("ACTORFLOW_INSECURE='", v, "': expects 1 or 0");
  }
  const char* cert = get("ACTORFLOW_TLS_CERT");
  const char* key = get("ACTORFLOW_TLS_KEY");
  const char* ca = get("ACTORFLOW_TLS_CA");
  if (cert || key || ca) {
    if (!cert || !key || !ca || !*cert || !*key || !*ca)
      return errors::InvalidArgument(
          "ACTORFLOW_TLS_CERT, ACTORFLOW_TLS_KEY and ACTORFLOW_TLS_CA go together: mutual TLS needs all three");
    TlsOptions tls;
    tls.cert = cert;
    tls.key = key;
    tls.ca = ca;
    const Status checked = CheckTlsFiles(tls);
    if (!checked.ok()) return errors::InvalidArgument("ACTORFLOW_TLS_*: ", checked.message());
    options->tls = tls;
  }
  if (const char* v = get("ACTORFLOW_HEARTBEAT_MS")) AF_RETURN_IF_ERROR(ParseMs("ACTORFLOW_HEARTBEAT_MS", v, &options->heartbeat_ms));
  if (const char* v = get("ACTORFLOW_PEER_TIMEOUT_MS"))
    AF_RETURN_IF_ERROR(ParseMs("ACTORFLOW_PEER_TIMEOUT_MS", v, &options->peer_timeout_ms));
  if (options->peer_timeout_ms <= options->heartbeat_ms)
    return errors::InvalidArgument("ACTORFLOW_PEER_TIMEOUT_MS (", options->peer_timeout_ms,
                                   ") must exceed ACTORFLOW_HEARTBEAT_MS (", options->heartbeat_ms, ")");
  return Status::OK();
}

const std::vector<std::string>& ServerEnvironmentNames() {
  static const std::vector<std::string> names = {"ACTORFLOW_BIND",        "ACTORFLOW_INSECURE",     "ACTORFLOW_TLS_CERT",
                                                 "ACTORFLOW_TLS_KEY",     "ACTORFLOW_TLS_CA",       "ACTORFLOW_HEARTBEAT_MS",
                                                 "ACTORFLOW_PEER_TIMEOUT_MS"};
  return names;
}

std::vector<std::string> ServerEnvironment(const ServerOptions& options) {
  std::vector<std::string> env = {"ACTORFLOW_BIND=" + options.bind,
                                  std::string("ACTORFLOW_INSECURE=") + (options.insecure ? "1" : "0"),
                                  "ACTORFLOW_HEARTBEAT_MS=" + std::to_string(options.heartbeat_ms),
                                  "ACTORFLOW_PEER_TIMEOUT_MS=" + std::to_string(options.peer_timeout_ms)};
  if (options.tls.enabled()) {
    env.push_back("ACTORFLOW_TLS_CERT=" + options.tls.cert);
    env.push_back("ACTORFLOW_TLS_KEY=" + options.tls.key);
    env.push_back("ACTORFLOW_TLS_CA=" + options.tls.ca);
  }
  return env;
}

}  // namespace actorflow
