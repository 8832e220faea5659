// Runtime: one process's actor system, compute pool, devices, device actors
// and the container actor holding variables.
//
// A process normally has one Runtime (Runtime::Default(), created on first use)
// so that it has exactly one pool of compute threads. Tests create their own to
// get a fresh, separately configured system. The thread count comes from
// RuntimeOptions, else the ACTORFLOW_NUM_THREADS environment variable, else
// the number of cores.
//
// Devices, in this order: the CPU devices, then one per GPU found at start
// (CUDA builds on a machine with GPUs: devices/cuda/gpu_device.hpp); a machine
// or build without GPUs simply has none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/comm/tls.hpp"

namespace caf {
class actor;
class actor_system;
}  // namespace caf

namespace actorflow {

class ChannelPool;
class CollectiveExecutor;
class ComputePool;
class Device;
class DeviceManager;
class Membership;
class PeerWatcher;
class StepCalls;
class TensorTransport;

struct RuntimeOptions {
  /// The task this process is in a cluster (TensorFlow's job, replica and
  /// task): its devices are named "/job:J/replica:R/task:T/device:TYPE:N".
  std::string job = "localhost";
  int replica = 0;
  int task = 0;
  int num_threads = 0;      // 0: ACTORFLOW_NUM_THREADS or the number of cores
  int num_cpu_devices = 1;  // CPU devices exposed in this process
  /// GPU devices exposed: -1 every GPU present, 0 none, n at most n. Always
  /// none in a build without CUDA or on a machine without a usable GPU.
  int num_gpu_devices = -1;
  /// Most threads one kernel may use (TensorFlow's intra_op_parallelism);
  /// 0: ACTORFLOW_INTRA_OP_THREADS or num_threads.
  int intra_op_threads = 0;
  /// Threads each CPU device computes with: 0, the whole pool (every device
  /// shares it); n, at most n of its kernels run at once and one kernel splits
  /// into at most n shards, on the shared pool's threads (TensorFlow's virtual
  /// CPU devices: with 1, each CPU device behaves as one core).
  int cpu_device_threads = 0;
  /// Each CPU device's memory budget for tensors, in bytes (TensorFlow's
  /// per-process GPU memory fraction, for host memory): an allocation past it
  /// fails its step with ResourceExhausted naming the node and the bytes, as
  /// running out of memory does. 0: no budget of its own; every device then
  /// shares the process's, DefaultMemoryLimit() (physical memory, the
  /// cgroup's limit or 3/4 of the address-space limit, whichever is lowest;
  /// core/allocator.hpp).
  int64_t device_memory_limit_bytes = 0;
  /// A task of a cluster: the actor system loads CAF's network layer (with
  /// heartbeats, which CAF leaves off, so that a hung peer is detected) and a
  /// tensor transport listens on `bind_host` (comm/tensor_transport.hpp) for
  /// tensors from other tasks.
  bool network = false;
  std::string bind_host = "127.0.0.1";
  int heartbeat_ms = 500;      // CAF's middleman.heartbeat-interval
  int peer_timeout_ms = 3000;  // CAF's middleman.connection-timeout: a silent peer is down after this
  /// Mutual TLS on both paths (comm/tls.hpp): CAF's openssl module for control
  /// messages, TLS 1.3 for the tensor transport. Files checked at start.
  TlsOptions tls;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The process-wide runtime; `options` apply only to the call that creates it.
  static Runtime* Default(RuntimeOptions options = {});

  caf::actor_system& system();
  ComputePool* compute_pool();
  /// Channels through which client threads ask this runtime's actors.
  ChannelPool* channels();
  int num_threads() const;
  /// "/job:J/replica:R/task:T": the task whose devices these are.
  const std::string& task_name() const;
  /// This process's incarnation (core/ids.hpp): random, drawn at start.
  uint64_t incarnation() const;
  const std::vector<Device*>& devices() const;
  /// devices() found by name or spec (devices/device_manager.hpp); lives as long as the runtime.
  const DeviceManager& device_manager() const;
  /// The position of `d` in devices() (the index of its device actor), or -1 when not this runtime's.
  int device_index(const Device* d) const;
  /// The actor executing partitions on devices()[i].
  const caf::actor& device_actor(int i) const;
  /// The actor holding this runtime's variables (actors/container_actor.hpp):
  /// every session on this runtime shares them.
  const caf::actor& container_actor() const;
  /// The actor where partitions of one step hand tensors to each other
  /// (actors/rendezvous_actor.hpp).
  const caf::actor& rendezvous_actor() const;
  /// The task's worker (actors/worker_session.hpp): the worker sessions of
  /// every master using this task's devices, this process's own included.
  const caf::actor& worker_actor() const;
  /// Who is in the cluster, as this process knows it (comm/membership.hpp):
  /// the one record of the cluster's tasks, their addresses, incarnations and
  /// liveness, which the transport and the collectives read. Always there; a
  /// process outside a cluster has only itself in it.
  Membership* membership() const;
  /// The process's collective ops (comm/collective_executor.hpp): groups of
  /// one everywhere, larger ones over the transport of a cluster task.
  CollectiveExecutor* collectives() const;
  /// The tensor transport of a cluster task (RuntimeOptions::network), else null.
  TensorTransport* transport() const;
  /// A cluster task's steps with partitions in other processes, over the
  /// transport (actors/step_calls.hpp); null where transport() is.
  StepCalls* step_calls() const;
  /// A cluster task's watch on its peers (actors/peer_watcher.hpp): marks a
  /// task failed when CAF sees it go, and alive again when it answers again.
  /// Null where transport() is.
  PeerWatcher* peer_watcher() const;
  /// Index of the device named `name` (full name or any spec naming exactly one device, e.g. "CPU:0"), or -1.
  int FindDevice(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace actorflow
