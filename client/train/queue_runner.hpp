// QueueRunner: keeps a queue fed (TensorFlow's tf.train.QueueRunner, C++ API
// of tensorflow/cc/training/queue_runner.h).
//
// Start(session) runs each enqueue op of its QueueRunnerDef in a loop, one
// thread per op (the same op may be listed several times: several threads).
// A thread ends when its enqueue fails with OutOfRange (its input is over:
// e.g. a filename producer past num_epochs) or Cancelled (the queue was
// closed); the last one to end runs the close op, so consumers drain the
// queue and then get OutOfRange. Any other error is kept (GetStatus) and
// reported to the Coordinator, which then stops everything. Stop() runs the
// cancel op (close with cancel_pending_enqueues): enqueues waiting on a full
// queue return, and the threads end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/coordinator.hpp"

namespace actorflow {

class Session;

class QueueRunner : public RunnerInterface {
 public:
  /// InvalidArgument for a def without enqueue ops or close/cancel ops.
  static Status New(const QueueRunnerDef& def, std::unique_ptr<QueueRunner>* out);
  ~QueueRunner() override;  // stops and joins its threads

  /// Starts the threads on `session` (which must outlive them); `coord`, if
  /// given, is told of errors and asked ShouldStop between enqueues.
  Status Start(Session* session, Coordinator* coord = nullptr);
  void Stop() override;
  bool Join(std::chrono::milliseconds timeout) override;
  Status GetStatus() override;
  const QueueRunnerDef& def() const { return def_; }

 private:
  explicit QueueRunner(QueueRunnerDef def) : def_(std::move(def)) {}
  void Loop(const std::string& enqueue_op);

  const QueueRunnerDef def_;
  Session* session_ = nullptr;
  Coordinator* coord_ = nullptr;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  int alive_ = 0;         // threads still looping
  int running_ = 0;       // threads not yet done (the last one may be closing the queue)
  bool stopping_ = false;  // Stop() was called
  Status status_;          // the first error other than the end of input
};

/// Starts a QueueRunner for every def in `scope`'s graph (Scope::GetQueueRunners)
/// and registers it with `coord`, which then stops and joins them.
Status StartQueueRunners(Session* session, const std::vector<QueueRunnerDef>& defs, Coordinator* coord);

}  // namespace actorflow
