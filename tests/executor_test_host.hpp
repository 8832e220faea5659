// An ExecutorHost for tests that drive an Executor directly (no device actor):
// it records what the executor asks for, and the completions that pool
// threads deliver wait in a queue until the test's thread hands them back
// (HandBack), as the device actor's mailbox would. `on_delivery`, when set,
// sees each completion on the delivering thread, under the host's lock (a
// test records there what was true at the moment of delivery). Its checks run
// on the test's main thread only.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "actorflow/actors/device/executor.hpp"

namespace actorflow {
namespace test {

class ExecutorTestHost final : public ExecutorHost {
 public:
  void ScheduleResume() override {
    ++resumes_asked;
    resume = true;
  }
  void ArmDeadline(std::chrono::nanoseconds delay) override { deadlines.push_back(delay); }
  caf::mailbox_element_ptr MakeCompletion() override {
    ++completions_made;
    return caf::make_mailbox_element(nullptr, caf::make_message_id(), {}, KernelDone{});
  }
  CompletionSink completion_sink() override { return {&Deliver, this}; }
  void Drained() noexcept override { drained = true; }

  /// Whether a completion waits to be handed back.
  bool HasDelivery() {
    std::lock_guard<std::mutex> lock(mu_);
    return !delivered_.empty();
  }
  /// Hands back one completion, waiting up to 10 ms for it; false if none came.
  bool HandBack(Executor* executor) {
    caf::mailbox_element_ptr msg;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return !delivered_.empty(); })) return false;
      msg = std::move(delivered_.front());
      delivered_.pop_front();
    }
    ++completions_handed_back;
    Executor::RunningScope running(executor, nullptr);
    executor->KernelFinished(msg->content().get_mutable_as<KernelDone>(0));
    executor->Run();
    return true;
  }

  std::function<void(const KernelDone&)> on_delivery;  // set before the first step
  bool resume = false;
  int resumes_asked = 0;
  int completions_made = 0;
  int completions_handed_back = 0;
  bool drained = false;
  std::vector<std::chrono::nanoseconds> deadlines;

 private:
  // From a pool thread: queued for the test's loop (the test outlives every kernel).
  static void Deliver(void* context, caf::mailbox_element_ptr done) noexcept {
    auto* host = static_cast<ExecutorTestHost*>(context);
    std::lock_guard<std::mutex> lock(host->mu_);
    if (host->on_delivery) host->on_delivery(done->content().get_as<KernelDone>(0));
    host->delivered_.push_back(std::move(done));
    host->cv_.notify_one();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<caf::mailbox_element_ptr> delivered_;
};

}  // namespace test
}  // namespace actorflow
