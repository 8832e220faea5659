// `actorflow launch`: runs tasks of a cluster, one process per task (torchrun's
// model; TensorFlow left this to outside schedulers).
//
//   actorflow launch --cluster FILE|JSON|tf_config|slurm|auto [--jobs JOB:N,...] [--port-base P]
//                    [--bind ADDR] [--insecure] [--security none|mtls --cert F --key F --ca F]
//                    [--heartbeat-ms N] [--peer-timeout-ms N]
//                    [--max-restarts N] [--min-workers N [--max-workers M]] [--log-dir D]
//                    [--grace-ms N] [--finish-wait-ms N] -- PROGRAM [ARGS...]
//
// The cluster comes from core/cluster_resolver.hpp. When it does not name
// this process's task (a cluster file or JSON of jobs), every task runs on
// this machine; when it does (tf_config, slurm, auto, TF_CONFIG's form), this
// launch runs that task only: a cluster manager starts one launch per task
// (srun -n K actorflow launch --cluster slurm ...; one Kubernetes pod each).
// Every task gets TF_CONFIG ({"cluster": ..., "task": {"type": JOB, "index": I}});
// ps tasks run `actorflow server` for their address (with the serving flags,
// tools/serve_flags.hpp), every other task runs PROGRAM ARGS with the
// ACTORFLOW_* variables of master/server_environment.hpp (inherited ones
// replaced). Output lines are prefixed with the task ("[worker:1] "), and with
// --log-dir also written to D/JOB-I.log. A task that dies (a signal or a
// non-zero exit) is restarted, up to --max-restarts times each.
// Every task: when every non-ps task has exited 0 the ps tasks are stopped and
// the launcher exits 0; when one fails for good, or on SIGINT/SIGTERM, every
// child is ended by PID (SIGTERM, then SIGKILL after --grace-ms) and it exits 1.
// One task: it exits 0 when the task exited 0 (a ps task: stopped by the
// chief), the task's own status (128+N for signal N) when it failed for good,
// 1 on SIGINT/SIGTERM. Usage errors exit 2.
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

extern const char kLaunchUsage[];

int LaunchCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
