#include "actorflow/actors/runtime.hpp"

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/container_actor.hpp"
#include "actorflow/actors/peer_watcher.hpp"
#include "actorflow/actors/device/device_actor.hpp"
#include "actorflow/actors/rendezvous_actor.hpp"
#include "actorflow/actors/step_calls.hpp"
#include "actorflow/actors/worker_session.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/core/ids.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_factory.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/devices/worker_policy.hpp"
#include "actorflow/comm/collective_executor.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/net/rendezvous_key.hpp"

namespace actorflow {

namespace {
int FromEnv(const char* name) {
  const char* env = std::getenv(name);
  return env ? std::max(0, std::atoi(env)) : 0;
}
int ResolveThreads(int requested) {
  if (requested > 0) return requested;
  if (int n = FromEnv("ACTORFLOW_NUM_THREADS")) return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

struct Config : caf::actor_system_config {
  Config(int threads, const RuntimeOptions& o) {
    RegisterMessageTypes(*this);
    load<WorkerCoordinator>();  // CAF work stealing whose polling workers take ParallelFor shards
    if (o.network) {
      load<caf::io::middleman>();
      set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(std::max(1, o.heartbeat_ms))});
      set("middleman.connection-timeout", caf::timespan{std::chrono::milliseconds(std::max(1, o.peer_timeout_ms))});
      if (o.tls.enabled()) {
        load<caf::openssl::manager>();
        set("openssl.certificate", o.tls.cert);
        set("openssl.key", o.tls.key);
        set("openssl.cafile", o.tls.ca);
        if (!o.tls.key_passphrase.empty()) set("openssl.passphrase", o.tls.key_passphrase);
      }
    }
    set("scheduler.max-threads", static_cast<size_t>(threads));
    // An idle worker polls for a few hundred microseconds (the next step or
    // shard usually arrives by then; waking a sleeping thread costs ~50-100 us
    // on these VMs), then sleeps on its condition variable, where work
    // enqueued from outside (client steps, pool jobs) wakes it at once.
    // CAF's default middle phase (500 polls with 50 us naps) would neither
    // sleep nor wake fast; it is cut short here.
    // With 8 threads or more an idle worker polls ten times longer: spare
    // cores make polling cheap, and a step's kernels and shards then find
    // awake workers (at 16 threads of an H100 host's Xeon, a small MLP step
    // ran 10-20% faster; at 2 threads the longer polls took the cores from
    // the working threads: 0.13 -> 0.20 us per node of a chain).
    // ACTORFLOW_POLL_ATTEMPTS sets the polls.
    const int polls = FromEnv("ACTORFLOW_POLL_ATTEMPTS");
    set("work-stealing.aggressive-poll-attempts", size_t(polls > 0 ? polls : threads >= 8 ? 50000 : 5000));
    set("work-stealing.moderate-poll-attempts", size_t{50});
    set("work-stealing.moderate-sleep-duration", caf::timespan{0});
    set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds(1)});
  }
};
}  // namespace

// Checked before the actor system exists: CAF accepts a wrong path at start
// and aborts the process at the first connection.
const RuntimeOptions& CheckedTls(const RuntimeOptions& o) {
  if (o.network && o.tls.enabled()) {
    if (!OpenSslErrorQueueCleared())
      std::fprintf(stderr,
                   "actorflow: warning: libssl precedes libactorflow in this process's symbol lookup, so CAF's TLS "
                   "runs without the error-queue workaround (comm/openssl_error_queue.cpp): a peer leaving may drop "
                   "other peers' connections; link libactorflow before libssl\n");
    const Status s = CheckTlsFiles(o.tls);
    if (!s.ok()) throw std::invalid_argument(s.message());
  }
  return o;
}

struct Runtime::Impl {
  explicit Impl(const RuntimeOptions& o)
      : threads(ResolveThreads(CheckedTls(o).num_threads)),
        task_name("/job:" + o.job + "/replica:" + std::to_string(o.replica) + "/task:" + std::to_string(o.task)),
        incarnation(NewIncarnation()),
        membership(std::make_unique<Membership>(task_name, incarnation)),
        cfg(threads, o),
        system(std::make_unique<caf::actor_system>(cfg)) {
    const int intra = o.intra_op_threads > 0 ? o.intra_op_threads : FromEnv("ACTORFLOW_INTRA_OP_THREADS");
    pool = std::make_unique<ComputePool>(system.get(), threads, std::min(intra > 0 ? intra : threads, threads));
    channels = std::make_unique<ChannelPool>(*system, pool.get());
    if (o.network) {
      TransportOptions to;
      to.task = task_name;
      to.incarnation = incarnation;
      to.membership = membership.get();
      to.bind_host = o.bind_host;
      to.tls = o.tls;
      TransportCallbacks cb;
      // Frames may arrive before the rendezvous actor is set (they cannot:
      // no peer knows the port yet); the lock makes that harmless anyway.
      auto target = [this] {
        std::lock_guard<std::mutex> lock(transport_mu);
        return rendezvous;
      };
      // Two clients of the transport, a channel each: the rendezvous actor
      // (a step id and key as each message's meta, net/rendezvous_key.hpp)
      // and the collective executor (comm/collective_executor.hpp).
      auto coll = [this] {
        std::lock_guard<std::mutex> lock(transport_mu);
        return collectives.get();
      };
      ChannelHandler& rendezvous_channel = cb.handler(Channel::kRendezvous);
      rendezvous_channel.check = [task = task_name](const std::string&, const std::string& meta) {
        return CheckRendezvousMeta(meta, task);
      };
      // A tensor goes to the rendezvous actor, which runs on this thread
      // with what it wakes (devices/inline_delivery.hpp): no worker's wake-up.
      ComputePool* p = pool.get();
      rendezvous_channel.deliver = [target, p](const std::string&, std::string meta, Tensor value, bool dead) {
        int64_t step;
        RendezvousKey key;
        if (DecodeRendezvousMeta(meta, &step, &key).ok()) {  // checked when it began
          DeliverInline(p, target(), nullptr, caf::make_message_id(),
                        caf::make_message(RendezvousSend{step, std::move(key), std::move(value), dead}));
        }
      };
      rendezvous_channel.reject = [target](const std::string&, const std::string& meta, Status s) {
        int64_t step;
        RendezvousKey key;
        if (!DecodeRendezvousMeta(meta, &step, &key).ok()) return;
        caf::anon_send(target(), RendezvousAbort{step, Status(s.code(), s.message() + "; key " + key.str())});
      };
      ChannelHandler& collective_channel = cb.handler(Channel::kCollective);
      collective_channel.check = &CollectiveExecutor::CheckMessage;
      collective_channel.deliver = [coll](const std::string& from, std::string meta, Tensor value, bool) {
        if (CollectiveExecutor* c = coll()) c->Deliver(from, std::move(meta), std::move(value));
      };
      collective_channel.reject = [coll](const std::string&, const std::string&, Status s) {
        if (CollectiveExecutor* c = coll()) c->Rejected(std::move(s));
      };
      // The third: steps of partitions in other processes (actors/step_calls.hpp).
      step_calls = std::make_unique<StepCalls>(*system, pool.get());
      StepCalls* calls = step_calls.get();
      ChannelHandler& control_channel = cb.handler(Channel::kControl);
      control_channel.check = &StepCalls::Check;
      control_channel.deliver = [calls](const std::string& from, std::string meta, Tensor value, bool) {
        calls->Deliver(from, meta, value);
      };
      control_channel.reject = [calls](const std::string& task, const std::string& meta, Status s) {
        calls->Rejected(task, meta, s);
      };
      // The collectives learn a failed peer from the membership (the transport marks it failed there).
      cb.peer_failed = [target, calls](const std::string& task, Status s) {
        calls->PeerFailed(task, s);
        caf::anon_send(target(), RendezvousPeerFailed{task, std::move(s)});
      };
      const Status s = TensorTransport::Start(std::move(to), std::move(cb), &transport);
      if (!s.ok()) throw std::runtime_error(s.ToString());
    }
    {
      CollectiveExecutorOptions co;
      const Status s = CollectiveExecutorOptions::FromEnvironment(&co);  // ACTORFLOW_ALLREDUCE
      if (!s.ok()) throw std::runtime_error(s.ToString());
      auto c = std::make_unique<CollectiveExecutor>(transport.get(), membership.get(), task_name, co);
      std::lock_guard<std::mutex> lock(transport_mu);
      collectives = std::move(c);
    }
    try {
      container = SpawnContainerActor(*system, pool.get());
      {
        std::lock_guard<std::mutex> lock(transport_mu);
        rendezvous = SpawnRendezvousActor(*system, pool.get(), transport.get(), task_name);
      }
      const int n = std::max(1, o.num_cpu_devices);
      for (int i = 0; i < n; ++i) {
        ComputePool* device_pool = pool.get();
        if (o.cpu_device_threads > 0) {
          device_pools.push_back(std::make_unique<ComputePool>(pool.get(), o.cpu_device_threads));
          device_pool = device_pools.back().get();
        }
        Allocator* allocator = cpu_allocator();
        if (o.device_memory_limit_bytes > 0) allocator = MakeBudgetAllocator(allocator, o.device_memory_limit_bytes);
        owned.push_back(std::make_unique<Device>(task_name + "/device:CPU:" + std::to_string(i),
                                                 DEVICE_CPU, allocator, device_pool));
        devices.push_back(owned.back().get());
        actors.push_back(SpawnDeviceActor(*system, devices.back(), container, rendezvous, collectives.get()));
      }
      for (auto& gpu : CreateDevices(DEVICE_GPU, task_name, o.num_gpu_devices, pool.get())) {
        owned.push_back(std::move(gpu));
        devices.push_back(owned.back().get());
        actors.push_back(SpawnDeviceActor(*system, devices.back(), container, rendezvous, collectives.get()));
      }
      device_manager = std::make_unique<DeviceManager>(devices);
      WorkerConfig wc;
      wc.task = task_name;
      for (size_t i = 0; i < devices.size(); ++i)
        wc.devices.push_back({devices[i]->name(), devices[i]->device_type(), actors[i]});
      worker = SpawnWorker(*system, std::move(wc));
      if (o.network) {
        PeerWatcherOptions po;
        po.task = task_name;
        peer_watcher = std::make_unique<PeerWatcher>(*system, membership.get(), po);
      }
      if (step_calls) step_calls->Attach(transport.get(), worker, rendezvous);
    } catch (...) {
      // No destructor runs for a half-built Impl: stop what was started, or
      // ~actor_system would wait for its actors for ever.
      Shutdown();
      throw;
    }
  }
  ~Impl() { Shutdown(); }
  void Shutdown() {
    // First: its actor ended and waited for, no failure or return reaches the
    // membership while the transport and the collectives stop.
    peer_watcher.reset();
    if (worker) caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    worker = caf::actor();
    for (auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    actors.clear();
    if (container) caf::anon_send_exit(container, caf::exit_reason::user_shutdown);
    container = caf::actor();
    if (rendezvous) caf::anon_send_exit(rendezvous, caf::exit_reason::user_shutdown);
    if (step_calls) step_calls->Detach();  // its calls in flight fail; no request reaches the worker
    if (transport) transport->Drain(std::chrono::seconds(2));  // peers finish reading what this task sent
    if (collectives) collectives->Stop();  // fails what waits (its kernels finish)
    if (transport) transport->Stop();  // no callback after this; Sends are dropped
    {
      std::lock_guard<std::mutex> lock(transport_mu);
      rendezvous = caf::actor();
    }
    channels.reset();
    step_calls.reset();  // its companion, while the system exists
    system.reset();  // joins the workers while the devices and the pool still exist
    transport.reset();
  }
  int threads;
  std::string task_name;
  uint64_t incarnation;
  std::unique_ptr<Membership> membership;  // outlives the transport and the collectives
  Config cfg;
  std::unique_ptr<caf::actor_system> system;
  std::unique_ptr<ComputePool> pool;
  std::vector<std::unique_ptr<ComputePool>> device_pools;  // views of `pool`, one per CPU device, when limited
  std::unique_ptr<ChannelPool> channels;
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> devices;
  std::unique_ptr<DeviceManager> device_manager;  // over `devices`
  std::vector<caf::actor> actors;
  caf::actor container;   // the variables of every session of this runtime
  caf::actor rendezvous;  // where partitions of a step hand tensors over
  caf::actor worker;      // the worker sessions of the masters using this task
  std::mutex transport_mu;  // guards `rendezvous` for the transport's callbacks
  std::unique_ptr<TensorTransport> transport;
  std::unique_ptr<CollectiveExecutor> collectives;  // after `transport`: destroyed first
  std::unique_ptr<StepCalls> step_calls;  // a cluster task's steps with other processes (after `transport`)
  std::unique_ptr<PeerWatcher> peer_watcher;  // a cluster task's
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>(options)) {}
Runtime::~Runtime() = default;

Runtime* Runtime::Default(RuntimeOptions options) {
  // Deliberately never destroyed. Tearing CAF 0.17's actor system down from an
  // exit handler dereferences freed memory inside ~actor_system (ASan: SEGV in
  // caf::ref_counted::deref), though the same teardown inside main is clean:
  // state CAF relies on is already gone by then. The process's end stops the
  // threads; runtimes that tests and programs own are destroyed normally.
  static Runtime* rt = new Runtime(options);
  return rt;
}

caf::actor_system& Runtime::system() { return *impl_->system; }
ComputePool* Runtime::compute_pool() { return impl_->pool.get(); }
ChannelPool* Runtime::channels() { return impl_->channels.get(); }
int Runtime::num_threads() const { return impl_->threads; }
const std::string& Runtime::task_name() const { return impl_->task_name; }
uint64_t Runtime::incarnation() const { return impl_->incarnation; }
const std::vector<Device*>& Runtime::devices() const { return impl_->devices; }
const caf::actor& Runtime::device_actor(int i) const { return impl_->actors[i]; }
const caf::actor& Runtime::container_actor() const { return impl_->container; }
CollectiveExecutor* Runtime::collectives() const { return impl_->collectives.get(); }
Membership* Runtime::membership() const { return impl_->membership.get(); }

const caf::actor& Runtime::rendezvous_actor() const { return impl_->rendezvous; }
const caf::actor& Runtime::worker_actor() const { return impl_->worker; }
TensorTransport* Runtime::transport() const { return impl_->transport.get(); }
StepCalls* Runtime::step_calls() const { return impl_->step_calls.get(); }
PeerWatcher* Runtime::peer_watcher() const { return impl_->peer_watcher.get(); }
const DeviceManager& Runtime::device_manager() const { return *impl_->device_manager; }
int Runtime::device_index(const Device* d) const { return impl_->device_manager->IndexOf(d); }

int Runtime::FindDevice(const std::string& name) const {
  Device* d;
  return impl_->device_manager->Lookup(name, &d).ok() ? device_index(d) : -1;
}

}  // namespace actorflow
