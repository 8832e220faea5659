// `actorflow launch`: runs a whole cluster on this machine, one process per
// task (TensorFlow left this to outside schedulers; torchrun's model).
//
//   actorflow launch --cluster FILE|JSON [--max-restarts N] [--log-dir D] [--grace-ms N]
//                    -- PROGRAM [ARGS...]
//
// Every task gets TF_CONFIG ({"cluster": ..., "task": {"type": JOB, "index": I}});
// ps tasks run `actorflow server` for their address, every other task runs
// PROGRAM ARGS. Their output lines are prefixed with the task ("[worker:1] "),
// and with --log-dir also written to D/JOB-I.log. A task that dies (a signal
// or a non-zero exit) is restarted, up to --max-restarts times each. When
// every non-ps task has exited 0 the ps tasks are stopped and the launcher
// exits 0; when one fails for good, or on SIGINT/SIGTERM, every child is
// ended by PID (SIGTERM, then SIGKILL after --grace-ms) and it exits 1.
// Usage errors exit 2.
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

extern const char kLaunchUsage[];

int LaunchCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
