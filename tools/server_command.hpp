// `actorflow server`: runs one task of a cluster until SIGINT, SIGTERM or a
// ShutdownRequest (master/server.hpp).
//
//   actorflow server [--cluster FILE|JSON] [--job NAME --task N] [--port P] [--bind ADDR]
//                    [--port-file FILE] [--devices cpu:N[,gpu:M]] [--threads N]
//                    [--heartbeat-ms N] [--peer-timeout-ms N] [--insecure]
//                    [--security none|mtls --cert F --key F --ca F [--key-passphrase-file F]]
//
// The cluster and task come from --cluster/--job/--task, else from TF_CONFIG.
// --port 0 takes a free port; --port-file then receives "PORT TRANSPORT_PORT"
// (written to a temporary file and renamed, so a reader never sees half).
// Exit status: 0 after a clean stop, 1 when the server fails while running,
// 2 for a usage or configuration error (naming the flag or file).
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

int ServerCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
