// ComputePool: the process's one pool of compute threads.
//
// The pool is the CAF scheduler's workers themselves: expensive kernels and the
// shards of a parallel kernel are scheduled as CAF jobs, so actors and kernels
// share one set of threads sized to the cores, and no second pool competes for
// them. ParallelFor is caller-runs: the calling thread claims shards too, so it
// never waits for a shard that no thread has started (no deadlock when every
// worker is itself inside a ParallelFor). Its shards are posted on the
// scheduler's ShardBoard, where workers polling for work take them without a
// job or a wake-up (WorkerPolicy); only for sleeping workers it sends jobs
// (under another CAF scheduler: a board of the pool's own, jobs only).
//
// A device can be given a share of the pool (RuntimeOptions::cpu_device_threads):
// a ComputePool made over another ("a view") runs at most `max_concurrency`
// of its jobs at once on the base pool's threads and splits a kernel into at
// most that many shards, so the device computes like a device with that many
// cores (TensorFlow's virtual CPU devices). Jobs a view's job schedules itself
// (the shards of its ParallelFor, Eigen's tasks) are not held back: a job never
// waits for work queued behind it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "actorflow/devices/shard_board.hpp"

namespace caf {
class actor;
class actor_system;
class execution_unit;
class message;
class resumable;
}

namespace actorflow {

class ComputePool {
 public:
  /// `max_parallelism` caps the shards of one ParallelFor (TensorFlow's
  /// intra-op parallelism); 0 means num_threads.
  ComputePool(caf::actor_system* sys, int num_threads, int max_parallelism = 0);
  /// A view of `base` (which must outlive it) running at most
  /// `max_concurrency` (>= 1) of its own jobs at once.
  ComputePool(ComputePool* base, int max_concurrency);
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  int NumThreads() const { return num_threads_; }
  int MaxParallelism() const { return max_parallelism_; }
  /// Runs `fn` on a scheduler worker. `fn` must not block.
  void Schedule(std::function<void()> fn);
  /// For a view: the most jobs of its own it runs at once; 0 for a base pool.
  int MaxConcurrency() const { return base_ ? max_concurrency_ : 0; }
  /// Calls fn(begin, end) over disjoint ranges covering [0, n), in parallel
  /// when n * cost_per_unit (≈ cycles) is worth splitting; returns when all ran.
  void ParallelFor(int64_t n, int64_t cost_per_unit, const std::function<void(int64_t, int64_t)>& fn);
  /// ParallelFor, but work too small to split runs inline without building a
  /// std::function (kernels call this on every small tensor).
  /// Only work running as a pool job is split: an actor's handler never waits
  /// for shards.
  template <class Fn>
  void For(int64_t n, int64_t cost_per_unit, Fn&& fn) {
    if (max_parallelism_ < 2 || n * cost_per_unit < kMinSplitCost || !InPoolJob() || !Splits(n * cost_per_unit)) {
      if (n > 0) fn(int64_t{0}, n);
      return;
    }
    ParallelFor(n, cost_per_unit, fn);
  }

  /// Where ParallelFor posts shards (never null): the scheduler's, which its
  /// workers poll (WorkerPolicy), or under another scheduler one of the
  /// pool's own, whose shards only jobs take.
  ShardBoard* board() const;

  /// Runs an actor that a thread outside the pool (a client) has just given
  /// a message: on a worker that is awake and free if there is one.
  void ScheduleActivation(caf::resumable* job);
  /// An execution unit whose exec_later is ScheduleActivation: pass it with
  /// a message enqueued from outside the pool (a client thread).
  caf::execution_unit* activation_unit() const { return base_ ? base_->activation_unit() : activation_.get(); }
  /// Sends `msg` to the local actor `dest` as from `sender`. From a pool job
  /// the actor runs next on the same worker (no wake-up, the job's outputs
  /// still in its cache); from elsewhere as ScheduleActivation picks.
  void Deliver(const caf::actor& dest, const caf::actor& sender, caf::message msg);
  /// For a `job` that CAF made runnable (and took a reference for) but whose
  /// scheduling threw for memory (CAF allocates a queue node per job): tries
  /// again, sleeping between tries and giving back the allocator's cache, at
  /// most kRescheduleAttempts times (about a second); then runs the job on
  /// the calling thread (RunHere), which needs no memory to schedule. Without
  /// this an actor whose message sits in its mailbox would never run again.
  /// Holds the calling thread meanwhile: only for that rare case. Always
  /// returns, having given the job to a worker or run it.
  void RescheduleAfterFailure(caf::resumable* job) noexcept;
  /// Tries RescheduleAfterFailure makes before it runs the job itself.
  static constexpr int kRescheduleAttempts = 100;
  /// Whether this thread is running a job RescheduleAfterFailure could not
  /// schedule (inside RunHere): memory has been exhausted for about a second.
  /// An executor handling a kernel's completion then ends that step with
  /// ResourceExhausted (its tensors given back), never carrying on as if the
  /// delivery had been ordinary.
  static bool InFailedScheduleRun();
  /// The execution unit Deliver enqueues with from this thread: pass it to
  /// abstract_actor::enqueue with a mailbox element made in advance (a
  /// completion that must not allocate when it is sent).
  caf::execution_unit* delivery_unit() const;

  /// Marks the worker `eu` as running one of this pool's jobs while alive.
  class JobScope {
   public:
    JobScope(ComputePool* pool, caf::execution_unit* eu);
    ~JobScope();
    JobScope(const JobScope&) = delete;
    JobScope& operator=(const JobScope&) = delete;

   private:
    std::atomic<int>* slot_ = nullptr;
  };

  /// Marks the current thread as running an actor's handler on `worker`
  /// (its execution unit): the first job Schedule gets from it is queued on
  /// that worker, to run as soon as the handler returns.
  class ActorHandlerScope {
   public:
    explicit ActorHandlerScope(caf::execution_unit* worker);
    ~ActorHandlerScope();
    ActorHandlerScope(const ActorHandlerScope&) = delete;
    ActorHandlerScope& operator=(const ActorHandlerScope&) = delete;

   private:
    caf::execution_unit* prev_worker_;
    bool prev_queued_;
  };

  /// True on a thread running a job of some ComputePool.
  static bool InPoolJob();

  /// ≈ cycles of work below which a shard costs more than it saves (the
  /// "fine" shard model's; ACTORFLOW_SHARD_MODEL=fine).
  static constexpr int64_t kMinCostPerShard = 20000;
  /// Below this many cycles no model splits work (For decides inline).
  static constexpr int64_t kMinSplitCost = 2 * kMinCostPerShard;
  /// Whether work of `cost` cycles gets more than one shard under the
  /// shard model in force (ParallelFor's): For runs it inline otherwise,
  /// without building a std::function.
  static bool Splits(int64_t cost);

 private:
  /// Runs `job` (made runnable, not queued) on this thread until it waits
  /// for messages, handing it to a worker when it has more and memory allows.
  void RunHere(caf::resumable* job) noexcept;
  static constexpr size_t kRunHereThroughput = 64;  // messages per resume before it is handed on
  void ScheduleOnBase(std::function<void()> fn);  // Schedule of the base pool
  // The worker this thread runs a job or an actor's handler on, if any.
  static caf::execution_unit* CallerWorker();
  // Jobs that wake up to `count` sleeping workers to help with post `t`.
  void WakeHelpers(int64_t count, ShardBoard* board, ShardBoard::Ticket t);
  void RunViewJob(const std::function<void()>& fn);  // a view's job, then the next one held back

  ComputePool* base_ = nullptr;  // set for a view
  int max_concurrency_ = 0;      // a view's limit
  std::mutex view_mu_;           // guards view_running_ and view_pending_
  int view_running_ = 0;
  std::deque<std::function<void()>> view_pending_;
  caf::actor_system* sys_;
  void* coordinator_;  // the work-stealing coordinator, or null under another policy
  int num_threads_;
  int max_parallelism_;
  std::atomic<size_t> next_worker_{0};
  std::unique_ptr<std::atomic<int>[]> running_;  // per worker id: our jobs it is running
  std::unique_ptr<caf::execution_unit> activation_;  // exec_later -> ScheduleActivation
  std::unique_ptr<ShardBoard> own_board_;  // under another scheduler than WorkerPolicy's
};

}  // namespace actorflow
