// Coordinator: stops a group of threads together (TensorFlow's
// tf.train.Coordinator, C++ API of tensorflow/cc/training/coordinator.h).
//
// Threads (queue runners, the training loop) check ShouldStop(); any of them
// may RequestStop() or ReportStatus() an error, which also requests a stop.
// Runners registered here are told to stop (RunnerInterface::Stop: a queue
// runner cancels its queue, so enqueues waiting on a full queue return) and
// joined by Join(), which waits at most a grace period for them and then
// returns, reporting those that did not finish, instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

/// What a Coordinator can stop and join.
class RunnerInterface {
 public:
  virtual ~RunnerInterface() = default;
  /// Makes the runner's threads finish soon (never blocks for long).
  virtual void Stop() = 0;
  /// Waits up to `timeout` for the runner's threads; false if some still run.
  virtual bool Join(std::chrono::milliseconds timeout) = 0;
  /// The runner's first error (OK if none).
  virtual Status GetStatus() = 0;
};

class Coordinator {
 public:
  Coordinator();
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  /// The coordinator stops `runner` on a stop request and joins it in Join().
  Status RegisterRunner(std::unique_ptr<RunnerInterface> runner);
  /// Asks every thread to stop; returns at once. Idempotent.
  void RequestStop();
  bool ShouldStop();
  /// Records `s` if it is the first error (OutOfRange, the normal end of
  /// input, is not an error) and requests a stop.
  void ReportStatus(const Status& s);
  /// The first error reported (OK if none).
  Status GetStatus();
  /// Blocks until a stop is requested or `timeout` passes; true if requested.
  bool WaitForStop(std::chrono::milliseconds timeout);
  /// Waits for a stop request, stops every runner and joins them, waiting at
  /// most `grace` in all. Returns the first error reported, else Cancelled
  /// naming how many runners did not finish within the grace period, else OK.
  Status Join(std::chrono::milliseconds grace = std::chrono::seconds(10));

 private:
  void StopRunners();

  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  bool runners_stopped_ = false;
  Status status_;
  std::vector<std::unique_ptr<RunnerInterface>> runners_;
};

}  // namespace actorflow
