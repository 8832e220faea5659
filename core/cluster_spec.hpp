// ClusterSpec: the tasks of a cluster, by job, as TensorFlow describes them,
// and the task this process is (TF_CONFIG).
//
//   {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"], "ps": ["127.0.0.1:2225"]}
//   {"cluster": {...as above...}, "task": {"type": "worker", "index": 0}}     (TF_CONFIG)
//
// A job's tasks are a list of "host:port" addresses, or an object from task
// index to address ({"0": "...", "1": "..."}), whose indices must be dense
// from 0 (TensorFlow's JobDef). Validated as TensorFlow validates them; each
// violation is InvalidArgument saying which rule: a job name is
// [a-z][a-z0-9_]*; a job has at least one task; at most one `chief` task;
// "host:port" with a port in 1..65535 (an IPv6 host in brackets); no address
// twice; the task's type and index present, the index an integer in range.
// An `evaluator` job is accepted and left out of the cluster (TensorFlow's
// evaluator runs beside it, not in it); an `evaluator` task is not checked
// against the cluster. Device names of a task are TensorFlow's:
// "/job:worker/replica:0/task:1/device:CPU:0".
#pragma once

#include <cstdint>
#include <map>
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
  /// Tasks of `job` (0 when there is no such job).
  int num_tasks(const std::string& job) const;
  /// The address of a task; NotFound naming it when the cluster has no such task.
  Status Address(const TaskId& task, std::string* address) const;
  /// Every task, by job then index.
  std::vector<TaskId> tasks() const;
  /// The chief: the `chief` task when there is one, else worker 0 (TensorFlow's
  /// convention); invalid when the cluster has neither.
  TaskId chief() const;
  /// InvalidArgument unless `task` is a task of this cluster (or an evaluator).
  Status CheckTask(const TaskId& task) const;
  /// The cluster as JSON (jobs to address lists), as Parse reads it.
  std::string ToJson() const;

 private:
  std::map<std::string, std::vector<std::string>> jobs_;  // job -> address per task index
};

/// Whether `address` is "host:port" as a cluster accepts it; if not, why.
Status CheckHostPort(const std::string& address);
/// A checked "host:port" split in two; an IPv6 host loses its brackets ("[::1]:2222" -> "::1", 2222).
Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port);

}  // namespace actorflow
