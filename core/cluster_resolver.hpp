// Cluster resolvers (TensorFlow's ClusterResolver family): where a process
// learns its cluster and which task of it it is, in one place for
// `actorflow server`, `actorflow launch` and the examples, chosen by one flag:
//
//   --cluster FILE|JSON   a ClusterSpec (core/cluster_spec.hpp): the JSON itself (it
//                         starts with '{') or the file holding it; TF_CONFIG's form
//                         names this task too, the jobs alone do not
//   --cluster tf_config   the TF_CONFIG variable, as TensorFlow and Kubeflow's
//                         training operator write it: DNS names, "environment":
//                         "cloud", the sparse view of dynamic workers
//                         ("sparseCluster"), evaluator tasks beside the cluster
//   --cluster slurm       this Slurm task's place in its job step (below)
//   --cluster auto        tf_config when TF_CONFIG is set, else slurm inside a Slurm
//                         job step, else one local task:
//                         {"worker": ["127.0.0.1:PORT_BASE"]}, this process worker 0
//
// Slurm (TensorFlow's SlurmClusterResolver rules, Slurm's own task layout):
//   rank       SLURM_PROCID, in 0..tasks-1
//   tasks      SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, else SLURM_NPROCS
//   nodes      SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, else SLURM_NODELIST
//              (a hostlist, core/slurm_hostlist.hpp), in Slurm's order
//   per node   SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE ("2(x3),1"),
//              one count per node, summing to the tasks
//   layout     SLURM_DISTRIBUTION's first method: block (the default: consecutive
//              ranks fill a node), cyclic (round robin over the nodes with room
//              left) or plane=N (blocks of N, round robin; N also from
//              SLURM_DIST_PLANESIZE); arbitrary is refused. SLURM_LOCALID and
//              SLURMD_NODENAME, where set, must agree with the layout.
//   jobs       --jobs ps:1,worker:3: ranks go to the jobs in the order listed
//              (ps rank 0, workers ranks 1-3); the counts sum to the tasks.
//              Default: one `worker` job of every task. (TensorFlow's resolver
//              sorts job names first: list them sorted for its exact layout.)
//   addresses  a task serves on NODE:(--port-base + its index among its node's
//              tasks), default port base 8888, as TensorFlow's resolver does.
// Inside a step means SLURM_PROCID and SLURM_STEP_ID (or SLURM_STEPID) are set
// and the step is not the batch script's (4294967294): the batch script
// itself is one process, not the step's tasks. The step's variables win over
// the job's (a step may use fewer tasks and nodes than its job).
//
// Contract: pure functions of their arguments and the EnvironmentReader (tests
// pass maps). Every failure is InvalidArgument naming the flag or variable,
// its value and the rule broken: counts that disagree, a rank out of range,
// a bad hostlist, jobs not summing to the task count, a port past 65535, a
// layout SLURM_LOCALID contradicts. Nothing here resolves host names.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/core/environment.hpp"
#include "actorflow/core/status.hpp"

namespace actorflow {

/// What --jobs and --port-base say (Slurm and the one local task).
struct ClusterResolverOptions {
  std::string jobs;      // "ps:1,worker:3"; empty: one worker job of every task
  int port_base = 8888;  // a task's port: this plus its index among its node's tasks
};

/// A resolved cluster and this process's task in it.
struct ResolvedCluster {
  ClusterSpec cluster;
  TaskId task;           // invalid when the source names no task (a cluster file alone)
  int local_index = 0;   // this task's index among the tasks of its host (SLURM_LOCALID)
  std::string host;      // this task's host as the cluster names it (empty: unknown)
  std::string source;    // where it came from, for messages ("TF_CONFIG", "Slurm step: ...")
};

/// Resolves `spec` (FILE|JSON|tf_config|slurm|auto) with `options` and the variables of `env`.
Status ResolveCluster(const std::string& spec, const ClusterResolverOptions& options, const EnvironmentReader& env,
                      ResolvedCluster* out);

/// Whether `env` is a task of a Slurm job step (see above).
bool InsideSlurmStep(const EnvironmentReader& env);

/// Parses --jobs ("ps:1,worker:3") into (job, tasks) in order: job names as
/// ClusterSpec's, each once, counts from 1.
Status ParseJobCounts(const std::string& jobs, std::vector<std::pair<std::string, int>>* out);

}  // namespace actorflow
