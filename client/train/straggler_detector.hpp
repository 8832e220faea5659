// StragglerDetector: which workers of a data-parallel group are slow (issue
// 32). Each step, every member's own time (its work before it waits for the
// others: for an all-reduce, from the step's start to its last gradient
// bucket's start, CollectiveExecutor::last_bucket_started) is gathered by
// task index (a small all-reduce every member runs with the gradients), so
// every member sees the same times. A member knows its time once its step
// is over, so each step gathers the times of the one before (a step run
// again after a resync counts the failed attempt and the sync too). Each
// task's time is smoothed: the
// median of its last `window` steps (a hiccup of a step or two, common on a
// shared machine, moves it not at all); a task whose smoothed time
// is at least `threshold` times the median of the last step's other members,
// and at least `min_excess_ms` over it, after `warmup` steps of its own, is a
// straggler, reported with its ratio. (The excess: steps of a few ms differ
// by half from noise alone; a chaos run's log flapped between "straggler:
// 2.4 ms, median 1.5 ms" and "no straggler" every few steps.)
//
//   StragglerDetector stragglers({/*threshold=*/1.5});
//   stragglers.Add(times_by_task);                 // each step, the gathered vector
//   for (const auto& s : stragglers.Stragglers()) ...   // {task, ms, ratio}
//   std::string line = stragglers.Describe("worker");   // "worker:2 at 2.4x the median (31.0 ms, median 12.9 ms)"
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace actorflow {

struct StragglerOptions {
  double threshold = 1.5;   // a straggler's smoothed time over the median
  int window = 21;          // steps whose median is a task's smoothed time
  int warmup = 10;          // steps of its own before a task is judged
  double min_excess_ms = 5;  // and a straggler is at least this much over the median
};

class StragglerDetector {
 public:
  struct Straggler {
    int task = 0;
    double ms = 0;     // its smoothed time
    double ratio = 0;  // to the median of the others
    double median_ms = 0;  // the others' (the last step's other members)
  };

  explicit StragglerDetector(StragglerOptions options = {});

  /// One step's times by task index, in ms; <= 0 (or absent): the task was
  /// not in that step (not a member, or lost).
  void Add(const std::vector<float>& ms_by_task);

  /// The median of the smoothed times of the last step's members but task
  /// `except` (-1: all of them); 0 when there is none.
  double median_ms(int except = -1) const;
  /// The last step's members at threshold x the median of the others or
  /// more (the others': with two members, the median of all could never be
  /// half the slow one's), slowest first.
  std::vector<Straggler> Stragglers() const;
  /// Task `task`'s smoothed time (0: never seen).
  double smoothed_ms(int task) const;
  /// "JOB:I at Rx the median (M ms, median N ms)" for each straggler, "; "
  /// between them; "" when there is none.
  std::string Describe(const std::string& job) const;

 private:
  struct Task {
    std::vector<float> recent;  // the last `window` times, a ring
    double ms = 0;              // their median
    int64_t steps = 0;
    bool in_last = false;
  };
  StragglerOptions options_;
  std::vector<Task> tasks_;
};

}  // namespace actorflow
