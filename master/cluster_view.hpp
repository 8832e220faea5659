// ClusterView: the devices of a cluster as one master sees them — its own
// task's (this process's Runtime) and every other task's, found by asking
// each task's published task actor (actors/task_actor.hpp) for its status,
// all in parallel and within a deadline. The error names every task that did
// not answer and why (TensorFlow's device finding waits for ever; TF#14489).
//
// Remote devices join the view as placeholders (name and type, no memory, no
// threads): the placer treats them as any device; partitions placed on them
// are registered with their device actors, whose handles came in the answer.
// A task's incarnation goes into the rendezvous keys its devices send under.
#pragma once

#include <caf/actor.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/master/run_options.hpp"
#include "actorflow/net/cluster_service.hpp"

namespace actorflow {

class Runtime;

struct ClusterTask {
  std::string name;     // "/job:ps/replica:0/task:0"
  std::string address;  // "127.0.0.1:2222"
  caf::actor task_actor;
  GetStatusResponse status;
  bool local = false;   // this process
};

class ClusterView {
 public:
  /// Asks every task of `cluster` but `local` (this process, `runtime`) for its
  /// status, in parallel; Unavailable or DeadlineExceeded naming the tasks that
  /// did not answer within `deadline`. `filters`: device specs ("/job:ps",
  /// "/job:worker/task:1"): only tasks matching one are asked (empty: all).
  /// `rendezvous` (SessionOptions::rendezvous): the tasks of its job are a
  /// round's: those that have not answered are asked again every 250 ms (each
  /// ask the last call's time, 2 s at least, at most) until all (or max_tasks) have answered, or, once
  /// min_tasks of them have (this one counted), last_call_ms more; those
  /// that did not answer are left out of the view (a node placed on one fails
  /// placement). Fewer than min_tasks by the deadline: Unavailable naming the
  /// silent ones; a task at another's address: InvalidArgument at once.
  static Status Find(Runtime* runtime, const ClusterSpec& cluster, const TaskId& local,
                     const std::vector<std::string>& filters, std::chrono::milliseconds deadline,
                     std::unique_ptr<ClusterView>* out, const SessionRendezvous& rendezvous = {});

  /// Local devices first, then each remote task's.
  const DeviceManager& devices() const { return *manager_; }
  const std::vector<ClusterTask>& tasks() const { return tasks_; }
  /// The task owning `device` (a full name), or null.
  const ClusterTask* TaskOf(const std::string& device) const;
  /// The actor running partitions on `device`; null when unknown.
  caf::actor DeviceActor(const std::string& device) const;
  uint64_t IncarnationOf(const std::string& device) const;
  /// Every task's transport address and incarnation (for worker sessions).
  std::vector<TaskPeer> Peers() const;
  const std::string& local_task() const { return local_task_; }
  /// Asks `task` (a remote one) for its incarnation anew, within `timeout`:
  /// how a master tells a restarted task from a dead one.
  static Status Probe(caf::actor_system& sys, const ClusterTask& task, std::chrono::milliseconds timeout,
                      uint64_t* incarnation);

 private:
  std::string local_task_;
  std::vector<ClusterTask> tasks_;  // the local one first
  std::vector<std::unique_ptr<Device>> placeholders_;
  std::map<std::string, caf::actor> device_actors_;
  std::map<std::string, size_t> task_of_device_;  // device -> index in tasks_
  std::unique_ptr<DeviceManager> manager_;
};

/// Connects to the actor published at `host:port` (CAF's middleman), within `timeout`.
/// A handshake that times out or breaks off (a busy peer) is tried again while
/// the timeout allows; a refused connection fails at once (Unavailable).
Status ConnectToTask(caf::actor_system& sys, const std::string& address, std::chrono::milliseconds timeout,
                     caf::actor* out);

}  // namespace actorflow
