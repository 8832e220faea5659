#include "actorflow/devices/compute_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message.hpp>
#include <caf/ref_counted.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/shard_board.hpp"
#include "actorflow/devices/worker_policy.hpp"

namespace actorflow {

namespace {

// The worker running the current pool job on this thread, if any.
thread_local caf::execution_unit* t_current_worker = nullptr;
// The worker running an actor handler on this thread (ActorHandlerScope), and
// whether that handler has already queued a job on it.
thread_local caf::execution_unit* t_handler_worker = nullptr;
thread_local bool t_handler_queued_local = false;
// The view whose job this thread is running, if any (its nested jobs bypass its limit).
thread_local const ComputePool* t_current_view = nullptr;

// A one-shot function run by a scheduler worker.
class FunctionJob final : public caf::ref_counted, public caf::resumable {
 public:
  FunctionJob(std::function<void()> fn, ComputePool* pool) : fn_(std::move(fn)), pool_(pool) {}
  subtype_t subtype() const override { return function_object; }
  resume_result resume(caf::execution_unit* eu, size_t) override {
    ComputePool::JobScope busy(pool_, eu);
    t_current_worker = eu;
    try {
      fn_();
    } catch (const std::exception& e) {  // callers catch their own; this is the last line of defence
      std::fprintf(stderr, "actorflow: exception escaped a pool job: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "actorflow: exception escaped a pool job\n");
    }
    t_current_worker = nullptr;
    fn_ = nullptr;
    return done;
  }
  void intrusive_ptr_add_ref_impl() override { ref(); }
  void intrusive_ptr_release_impl() override { deref(); }

 private:
  std::function<void()> fn_;
  ComputePool* pool_;
};

using Coordinator = WorkerCoordinator;

// Hands actors made runnable outside the pool to ScheduleActivation.
class ActivationUnit final : public caf::execution_unit {
 public:
  ActivationUnit(caf::actor_system* sys, ComputePool* pool) : caf::execution_unit(sys), pool_(pool) {}
  // Never throws: CAF calls this from an actor's enqueue after the message
  // is in its mailbox and the actor counted as scheduled, so a throw (no
  // memory for a worker's queue node) would leave it never run again.
  void exec_later(caf::resumable* job) override {
    try {
      pool_->ScheduleActivation(job);
    } catch (...) {
      pool_->RescheduleAfterFailure(job);
    }
  }

 private:
  ComputePool* pool_;
};

bool Sleeping(Coordinator::worker_type* w) {
  auto& wait = w->data().waitdata;
  std::lock_guard<std::mutex> l(wait.lock);
  return wait.sleeping;
}

}  // namespace

ComputePool::ComputePool(caf::actor_system* sys, int num_threads, int max_parallelism)
    : sys_(sys),
      coordinator_(dynamic_cast<Coordinator*>(&sys->scheduler())),
      num_threads_(num_threads),
      max_parallelism_(max_parallelism > 0 ? max_parallelism : num_threads),
      running_(std::make_unique<std::atomic<int>[]>(static_cast<size_t>(std::max(1, num_threads)))) {
  for (int i = 0; i < std::max(1, num_threads); ++i) running_[static_cast<size_t>(i)] = 0;
  if (!coordinator_) own_board_ = std::make_unique<ShardBoard>();  // shards then go out as jobs only
  activation_ = std::make_unique<ActivationUnit>(sys, this);
}

ComputePool::ComputePool(ComputePool* base, int max_concurrency)
    : base_(base->base_ ? base->base_ : base),
      max_concurrency_(std::max(1, max_concurrency)),
      sys_(base_->sys_),
      coordinator_(base_->coordinator_),
      num_threads_(base_->num_threads_),
      max_parallelism_(std::min(base_->max_parallelism_, std::max(1, max_concurrency))) {}

ShardBoard* ComputePool::board() const {
  if (base_) return base_->board();
  auto* c = static_cast<Coordinator*>(coordinator_);
  return c ? &c->data().board : own_board_.get();
}

caf::execution_unit* ComputePool::CallerWorker() {
  if (t_current_worker) return t_current_worker;
  // An actor's handler on a worker (not a client's thread running it inline).
  return dynamic_cast<Coordinator::worker_type*>(t_handler_worker);
}

// Each job wakes a different sleeping worker (CAF marks a worker awake only
// once it runs, so two jobs could find the same one asleep), straight on the
// base pool's workers: not held back by a view's limit, nor queued behind
// the calling handler.
void ComputePool::WakeHelpers(int64_t count, ShardBoard* board, ShardBoard::Ticket t) {
  if (base_) return base_->WakeHelpers(count, board, t);
  auto help = [board, t] { board->HelpPost(t, t_current_worker); };
  auto* c = static_cast<Coordinator*>(coordinator_);
  if (!c) {
    for (; count > 0; --count) sys_->scheduler().enqueue(new FunctionJob(help, this));
    return;
  }
  const size_t n = c->num_workers(), start = next_worker_.fetch_add(1, std::memory_order_relaxed);
  caf::execution_unit* caller = CallerWorker();
  for (size_t i = 0; i < n && count > 0; ++i) {
    auto* w = c->worker_by_id((start + i) % n);
    if (w == caller || !Sleeping(w)) continue;
    w->external_enqueue(new FunctionJob(help, this));
    --count;
  }
}

caf::execution_unit* ComputePool::delivery_unit() const {
  if (base_) return base_->delivery_unit();
  return t_current_worker ? t_current_worker : activation_.get();
}

void ComputePool::Deliver(const caf::actor& dest, const caf::actor& sender, caf::message msg) {
  if (base_) return base_->Deliver(dest, sender, std::move(msg));
  caf::execution_unit* eu = delivery_unit();
  caf::actor_cast<caf::abstract_actor*>(dest)->enqueue(
      caf::make_mailbox_element(caf::actor_cast<caf::strong_actor_ptr>(sender), caf::make_message_id(), {},
                                std::move(msg)),
      eu);
}

ComputePool::~ComputePool() = default;

ComputePool::JobScope::JobScope(ComputePool* pool, caf::execution_unit* eu) {
  if (pool->base_) pool = pool->base_;
  auto* c = static_cast<Coordinator*>(pool->coordinator_);
  if (!c || !eu) return;
  const size_t id = static_cast<Coordinator::worker_type*>(eu)->id();
  if (id >= static_cast<size_t>(pool->num_threads_)) return;
  slot_ = &pool->running_[id];
  slot_->fetch_add(1, std::memory_order_relaxed);
}

ComputePool::JobScope::~JobScope() {
  if (slot_) slot_->fetch_sub(1, std::memory_order_relaxed);
}

// Bounded: memory that does not come back within kRescheduleAttempts tries
// (about a second) never made the job wait for ever (a pool thread looped
// here while a failed Fill's output held the address space). The job then
// runs on this thread, which needs no queue node: its mailbox is handled (a
// kernel's completion handled so ends its step with ResourceExhausted:
// InFailedScheduleRun, Executor::KernelFinished), and it is rescheduled, or
// runs here again, until it waits for messages.
void ComputePool::RescheduleAfterFailure(caf::resumable* job) noexcept {
  auto pause = std::chrono::microseconds(50);
  for (int attempt = 1;; ++attempt) {
    try {
      ScheduleActivation(job);
      return;
    } catch (...) {  // still no memory: wait for some to be given back
    }
    if (attempt == kRescheduleAttempts) break;
    cpu_allocator()->ReleaseCache();  // freed tensors kept for reuse are memory too
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
  RunHere(job);
}

namespace {
thread_local bool in_failed_schedule_run = false;
}  // namespace

bool ComputePool::InFailedScheduleRun() { return in_failed_schedule_run; }

void ComputePool::RunHere(caf::resumable* job) noexcept {
  caf::execution_unit* eu = delivery_unit();
  for (;;) {
    caf::resumable::resume_result r;
    const bool outer = in_failed_schedule_run;
    in_failed_schedule_run = true;
    try {
      r = job->resume(eu, kRunHereThroughput);
    } catch (...) {  // CAF handles a handler's exceptions; this is the last line of defence
      std::fprintf(stderr, "actorflow: exception escaped an actor run after a failed schedule\n");
      r = caf::resumable::done;
    }
    in_failed_schedule_run = outer;
    if (r != caf::resumable::resume_later) {
      caf::intrusive_ptr_release(job);  // the reference CAF took when it made the job runnable
      return;
    }
    try {  // more messages: to a worker if there is memory for it now
      ScheduleActivation(job);
      return;
    } catch (...) {
    }
  }
}

// For an actor a client woke: an awake worker with no job of ours (polling
// for work, it starts at once, no futex), else a sleeping one (woken), else
// round-robin. CAF's own choice from outside the scheduler is round-robin, so
// every other step went to a sleeping worker and paid its wake-up.
void ComputePool::ScheduleActivation(caf::resumable* job) {
  if (base_) return base_->ScheduleActivation(job);
  auto* c = static_cast<Coordinator*>(coordinator_);
  if (!c) {
    sys_->scheduler().enqueue(job);
    return;
  }
  const size_t n = c->num_workers();
  Coordinator::worker_type* sleeping = nullptr;
  for (size_t i = 0; i < n; ++i) {
    auto* w = c->worker_by_id(i);
    // Free: running none of our jobs and with nothing queued (two actors a
    // client wakes back to back, e.g. the partitions of one step, then go to
    // two workers rather than one after the other on the same).
    const bool idle = i >= static_cast<size_t>(num_threads_) ||
                      (running_[i].load(std::memory_order_relaxed) == 0 && w->data().queue.empty());
    if (!idle) continue;
    if (!Sleeping(w)) {
      w->external_enqueue(job);
      return;
    }
    if (!sleeping) sleeping = w;
  }
  if (sleeping) {
    sleeping->external_enqueue(job);
    return;
  }
  c->worker_by_id(next_worker_.fetch_add(1, std::memory_order_relaxed) % n)->external_enqueue(job);
}

bool ComputePool::InPoolJob() { return t_current_worker != nullptr; }

// CAF's own enqueue from outside picks workers round-robin: a kernel may queue
// behind a busy worker while another is idle. Prefer a sleeping worker (wake
// it), else any worker but the one running the caller (a shard queued behind
// its own caller would run after it, not beside it).
ComputePool::ActorHandlerScope::ActorHandlerScope(caf::execution_unit* worker)
    : prev_worker_(t_handler_worker), prev_queued_(t_handler_queued_local) {
  t_handler_worker = worker;
  t_handler_queued_local = false;
}

ComputePool::ActorHandlerScope::~ActorHandlerScope() {
  t_handler_worker = prev_worker_;
  t_handler_queued_local = prev_queued_;
}

void ComputePool::Schedule(std::function<void()> fn) {
  if (!base_) return ScheduleOnBase(std::move(fn));
  if (t_current_view == this) {  // a job of this view splitting its work: never held back
    base_->ScheduleOnBase([this, fn = std::move(fn)] {
      const ComputePool* prev = t_current_view;
      t_current_view = this;
      fn();
      t_current_view = prev;
    });
    return;
  }
  {
    std::lock_guard<std::mutex> l(view_mu_);
    if (view_running_ >= max_concurrency_) {
      view_pending_.push_back(std::move(fn));
      return;
    }
    ++view_running_;
  }
  try {
    base_->ScheduleOnBase([this, fn = std::move(fn)] { RunViewJob(fn); });
  } catch (...) {  // not queued: give the slot back, the caller fails the job
    std::lock_guard<std::mutex> l(view_mu_);
    --view_running_;
    throw;
  }
}

void ComputePool::RunViewJob(const std::function<void()>& fn) {
  const ComputePool* prev = t_current_view;
  t_current_view = this;
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();  // rethrown once the slot is passed on
  }
  t_current_view = prev;
  std::function<void()> next;
  {
    std::lock_guard<std::mutex> l(view_mu_);
    if (!view_pending_.empty()) {
      next = std::move(view_pending_.front());
      view_pending_.pop_front();
    } else {
      --view_running_;
    }
  }
  // The slot passes to the next job held back; with no memory to queue it,
  // it runs here and now (dropped, its kernel would never finish).
  if (next) {
    try {
      base_->ScheduleOnBase([this, next] { RunViewJob(next); });
    } catch (...) {
      RunViewJob(next);
    }
  }
  if (error) std::rethrow_exception(error);
}

void ComputePool::ScheduleOnBase(std::function<void()> fn) {
  auto* job = new FunctionJob(std::move(fn), this);  // reference count 1, released by the worker when done
  // The first job an actor's handler starts runs next on that handler's own
  // worker: no wake-up (40 us here), the inputs in its cache. Further jobs of
  // the same handler go to other workers, so independent kernels overlap.
  if (t_handler_worker && !t_handler_queued_local && coordinator_) {
    t_handler_queued_local = true;
    t_handler_worker->exec_later(job);
    return;
  }
  if (auto* c = static_cast<Coordinator*>(coordinator_)) {
    const size_t n = c->num_workers();
    const size_t start = next_worker_.fetch_add(1, std::memory_order_relaxed);
    Coordinator::worker_type* other = nullptr;
    for (size_t i = 0; i < n; ++i) {
      auto* w = c->worker_by_id((start + i) % n);
      if (w == t_current_worker) continue;
      if (Sleeping(w)) {
        w->external_enqueue(job);
        return;
      }
      if (!other) other = w;
    }
    (other ? other : c->worker_by_id(start % n))->external_enqueue(job);
    return;
  }
  sys_->scheduler().enqueue(job);
}

namespace {
// How many shards a ParallelFor of `cost` cycles gets (before the caps):
// Eigen's TensorCostModel, about 100k cycles to start a parallel section and
// 100k more per further thread, so work of less than ~200k cycles (tens of
// microseconds) runs on the caller. Waking a sleeping worker costs tens of
// microseconds on these VMs: with one shard per 20k cycles, the element-wise
// kernels of a small training step split 3 to 6 ways and ran slower at 16
// threads than at 2 (Relu of 64k floats: 44 us against 15, an H100 host's 16
// Xeon cores); Eigen's model gave that step 5-8% more at 16 threads and the
// same at 2. ACTORFLOW_SHARD_MODEL=fine restores one shard per kMinCostPerShard.
int64_t ShardsFor(double cost) {
  cost = std::min(cost, 1e18);  // converted to int64_t below
  static const bool fine = [] {
    const char* v = std::getenv("ACTORFLOW_SHARD_MODEL");
    return v != nullptr && std::string(v) == "fine";
  }();
  if (fine) return static_cast<int64_t>(cost / ComputePool::kMinCostPerShard);
  return static_cast<int64_t>((cost - 1e5) / 1e5 + 0.9);
}
}  // namespace

bool ComputePool::Splits(int64_t cost) { return ShardsFor(static_cast<double>(cost)) >= 2; }

void ComputePool::ParallelFor(int64_t n, int64_t cost_per_unit,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const double cost = static_cast<double>(n) * static_cast<double>(cost_per_unit);
  int64_t shards = std::min<int64_t>(max_parallelism_, std::max<int64_t>(1, ShardsFor(cost)));
  shards = std::min({shards, n, ShardBoard::kMaxShards});
  if (shards <= 1) {
    fn(0, n);
    return;
  }
  ShardBoard* const board = this->board();
  // Shards run by a worker run as a job of this pool (and of the caller's
  // view: what they schedule is not held back by its limit).
  struct Ctx {
    const std::function<void(int64_t, int64_t)>* fn;
    ComputePool* base;
    const ComputePool* view;
  } ctx{&fn, base_ ? base_ : this, t_current_view};
  auto run = [](void* p, int64_t begin, int64_t end, caf::execution_unit* eu) {
    const Ctx& x = *static_cast<Ctx*>(p);
    if (!eu) return (*x.fn)(begin, end);
    JobScope busy(x.base, eu);
    struct Restore {
      caf::execution_unit* worker = t_current_worker;
      const ComputePool* view = t_current_view;
      ~Restore() {
        t_current_worker = worker;
        t_current_view = view;
      }
    } restore;
    t_current_worker = eu;
    t_current_view = x.view;
    (*x.fn)(begin, end);
  };
  // Shard 0 is the caller's, claimed before any helper can start: the same
  // range runs on the same thread step after step (so, as long as the OS
  // keeps that thread on its core, its bytes stay in that core's cache), as
  // with TBB's static partitioner. Left to the race, a helper that starts
  // first takes it and the halves swap cores: a plain TBB loop whose two
  // halves swapped every other step ran 22% slower (0.8 MB, 2 threads, a
  // 2-core VM with 1 MB of L2 per core).
  const ShardBoard::Ticket t = board->Post(n, shards, run, &ctx);
  if (!t) {  // every slot taken by other callers: the pool is busy anyway
    fn(0, n);
    return;
  }
  // Awake workers take the other shards from the board: at once when
  // polling, else when their job ends. For each shard more than they can
  // take, a job that wakes a sleeping worker to help. (Waking one for a shard
  // an awake worker would take soon cost the caller the wake-up, 3-5 us here,
  // and often put the woken worker on the caller's core.) Under a scheduler
  // without the board's polling workers, a job for every other shard.
  const bool polled = coordinator_ != nullptr;  // the board is the scheduler's (board())
  const int64_t awake = polled ? num_threads_ - board->Asleep() - (CallerWorker() ? 1 : 0) : 0;
  try {
    WakeHelpers(shards - 1 - std::max<int64_t>(awake, 0), board, t);
  } catch (...) {
    // Those not sent: their shards run here.
  }
  board->Finish(t);
}

}  // namespace actorflow
