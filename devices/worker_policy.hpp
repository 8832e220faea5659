// WorkerPolicy: the CAF scheduling policy of the runtime's workers.
//
// CAF's work stealing (caf/policy/work_stealing.hpp), with one change: a
// worker polling for work (its queue empty, not yet asleep) also takes the
// shards a ParallelFor posted on the coordinator's ShardBoard, and a worker
// asleep is counted on the board, so a ParallelFor wakes one (with a job)
// only for shards the awake workers cannot take. Polling, stealing and
// sleeping are otherwise CAF's (the work-stealing.* settings). Each job a
// worker resumes is marked as an actor's turn (ActorTurnBegins/Ended), so the
// clients its handlers answer are woken after the turn, the actor idle again
// (WakeAfterHandler).
// WorkerCoordinator is the scheduler the runtime loads (actors/runtime.cpp).
#pragma once

#include <mutex>
#include <thread>

#include <caf/policy/work_stealing.hpp>
#include <caf/scheduler/coordinator.hpp>

#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/devices/shard_board.hpp"

namespace actorflow {

class WorkerPolicy : public caf::policy::work_stealing {
 public:
  struct coordinator_data : work_stealing::coordinator_data {
    explicit coordinator_data(caf::scheduler::abstract_coordinator* p) : work_stealing::coordinator_data(p) {}
    ShardBoard board;
  };

  template <class Worker>
  void before_resume(Worker*, caf::resumable*) {
    ActorTurnBegins();
  }
  template <class Worker>
  void after_resume(Worker*, caf::resumable*) {
    ActorTurnEnded();  // after CAF's resume: a mailbox left empty is blocked, the actor idle
  }

  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    auto& data = d(self);
    caf::resumable* job = data.queue.take_head();
    if (job) return job;
    ShardBoard& board = self->parent()->data().board;
    auto& strategies = data.strategies;
    for (size_t k = 0; k < 2; ++k) {  // aggressive, then moderate polling
      for (size_t i = 0; i < strategies[k].attempts; i += strategies[k].step_size) {
        job = data.queue.take_head();
        if (!job && i % strategies[k].steal_interval == 0) job = try_steal(self);
        if (job) return job;
        if (board.Help(self)) i = 0;  // ran shards: poll as long again
        if (strategies[k].sleep_duration.count() > 0) std::this_thread::sleep_for(strategies[k].sleep_duration);
      }
    }
    board.Sleeping(1);  // a ParallelFor now sends a job to wake it
    job = Sleep(self);
    board.Sleeping(-1);
    return job;
  }

 private:
  // CAF's relaxed phase: sleeps on the worker's condition variable (work
  // enqueued from outside wakes it), stealing now and then.
  template <class Worker>
  caf::resumable* Sleep(Worker* self) {
    auto& data = d(self);
    auto& relaxed = data.strategies[2];
    caf::resumable* job = nullptr;
    for (size_t i = 1; job == nullptr; ++i) {
      bool woken;
      {
        std::unique_lock<std::mutex> guard(data.waitdata.lock);
        data.waitdata.sleeping = true;
        woken = data.waitdata.cv.wait_for(guard, relaxed.sleep_duration, [&] { return !data.queue.empty(); });
        data.waitdata.sleeping = false;
      }
      if (woken)
        job = data.queue.take_head();
      else if (i % relaxed.steal_interval == 0)
        job = try_steal(self);
    }
    return job;
  }
};

using WorkerCoordinator = caf::scheduler::coordinator<WorkerPolicy>;

}  // namespace actorflow
