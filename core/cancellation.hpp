// CancellationManager: per-step registry of callbacks that cancel pending work.
//
// Asynchronous kernels (Recv, queue dequeue) register a callback while they
// wait; aborting a step (error, deadline, session close) runs every callback
// once, so a waiting op ends with Cancelled/DeadlineExceeded instead of
// holding its step forever. Thread-safe: kernels register from pool threads.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace actorflow {

class CancellationManager {
 public:
  using Token = int64_t;
  using Callback = std::function<void()>;

  Token get_token();
  /// False (and the callback is not kept) when cancellation has already started:
  /// the caller must then cancel itself.
  bool RegisterCallback(Token token, Callback cb);
  /// False when the callback has run or is running.
  bool DeregisterCallback(Token token);
  /// Runs all registered callbacks once; later registrations are refused.
  void StartCancel();
  bool IsCancelled() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  Token next_ = 0;
  std::unordered_map<Token, Callback> callbacks_;
};

}  // namespace actorflow
