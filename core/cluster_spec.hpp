// ClusterSpec: the tasks of a cluster, by job, as TensorFlow describes them,
// and the task this process is (TF_CONFIG).
//
//   {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"], "ps": ["127.0.0.1:2225"]}
//   {"cluster": {...as above...}, "task": {"type": "worker", "index": 0}}     (TF_CONFIG)
//
// A job's tasks are a list of "host:port" addresses, or an object from task
// index to address ({"0": "...", "1": "..."}). A cluster given alone
// describes every task, so its indices must be dense from 0 (TensorFlow's
// JobDef). TF_CONFIG's cluster may be sparse, one task's partial view: the
// dynamic workers of Kubeflow's TFJob (enableDynamicWorker) see only
// themselves and the ps tasks ({"worker": {"3": "host:port"}, "ps": [...]}),
// written under "sparseCluster" instead of "cluster"; there an empty job is
// left out, and the task's own job given as a one-address list is that task
// alone (the operator writes a ps task's view so). Other TF_CONFIG keys
// ("environment": "cloud", "rpc_layer") are accepted and ignored.
//
// Validated as TensorFlow validates them; each violation is InvalidArgument
// saying which rule: a job name is [a-z][a-z0-9_]*; a job has at least one
// task; at most one `chief` task; "host:port" with a port in 1..65535 (an
// IPv6 host in brackets); no address twice; the task's type and index
// present, the index an integer in range (in a sparse job: one it lists).
// An `evaluator` job is accepted and left out of the cluster (TensorFlow's
// evaluator runs beside it, not in it); an `evaluator` task is not checked
// against the cluster. Device names of a task are TensorFlow's:
// "/job:worker/replica:0/task:1/device:CPU:0".
//
// Sparse jobs and their users: num_tasks() counts the tasks a job lists
// (TensorFlow's num_tasks), task_indices() gives them; IsDense() says whether
// they are every task from 0 (always so for a cluster given alone). Code that
// needs a job's size (how many workers average a step) checks IsDense first.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

/// One task of a cluster: its job and its index in the job.
struct TaskId {
  std::string job;
  int index = -1;
  bool valid() const { return !job.empty() && index >= 0; }
  /// "/job:J/replica:0/task:T".
  std::string name() const;
};

class ClusterSpec {
 public:
  /// Parses a cluster: the jobs' object alone, or a TF_CONFIG object whose
  /// "cluster" it takes (its "task", if any, goes to `task`; may be null).
  static Status Parse(const std::string& json, ClusterSpec* out, TaskId* task = nullptr);
  /// From the TF_CONFIG environment variable, read verbatim; `found` says
  /// whether it is set (not set: OK, nothing parsed).
  static Status FromEnvironment(ClusterSpec* out, TaskId* task, bool* found);

  /// Job names, sorted.
  std::vector<std::string> jobs() const;
  /// Tasks `job` lists (0 when there is no such job); its size when it is dense.
  int num_tasks(const std::string& job) const;
  /// The indices of `job`'s tasks, ascending (0..num_tasks-1 when it is dense).
  std::vector<int> task_indices(const std::string& job) const;
  /// Whether `job` lists every task from 0 to num_tasks-1 (true for a job it does not have;
  /// false for the task's own job in Kubeflow's "sparseCluster" view, which lists only it).
  bool IsDense(const std::string& job) const;
  /// The address of a task; NotFound naming it when the cluster has no such task.
  Status Address(const TaskId& task, std::string* address) const;
  /// Every task, by job then index.
  std::vector<TaskId> tasks() const;
  /// The chief: the `chief` task when there is one, else worker 0 (TensorFlow's
  /// convention); invalid when the cluster has neither.
  TaskId chief() const;
  /// InvalidArgument unless `task` is a task of this cluster (or an evaluator).
  Status CheckTask(const TaskId& task) const;
  /// The cluster as JSON (jobs to address lists; a sparse job as an object
  /// from index to address), as Parse reads it (a sparse one: in TF_CONFIG).
  std::string ToJson() const;
  /// TF_CONFIG for `task` of this cluster: {"cluster": ToJson(), "task": {"type": J, "index": I}}.
  std::string ToTfConfig(const TaskId& task) const;

 private:
  std::map<std::string, std::map<int, std::string>> jobs_;  // job -> task index -> address
  std::set<std::string> partial_;  // jobs this view lists only some tasks of (Kubeflow's sparseCluster: the task's own)
};

/// Whether `name` is a job name as TensorFlow accepts it: [a-z][a-z0-9_]*.
bool IsValidJobName(const std::string& name);
/// Whether `address` is "host:port" as a cluster accepts it; if not, why.
Status CheckHostPort(const std::string& address);
/// A checked "host:port" split in two; an IPv6 host loses its brackets ("[::1]:2222" -> "::1", 2222).
Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port);
/// Whether `host` names no interface in particular ("", "0.0.0.0", "::"): a server bound
/// so is reached at the host its cluster address names.
bool UnspecifiedHost(const std::string& host);

}  // namespace actorflow
