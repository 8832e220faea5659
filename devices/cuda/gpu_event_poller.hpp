// GpuEventPoller: calls functions once a GPU has run a stream's work so far,
// without stopping the stream for the host (TensorFlow's EventMgr).
//
// ThenRun records a CUDA event on the stream and queues it with its function;
// one thread per GPU queries the oldest pending event every few microseconds
// while any is pending (and sleeps on a condition variable otherwise), and
// hands each finished event's function to the compute pool, with cudaSuccess
// or the error a faulting kernel left (every later query reports it too, so a
// failed step still ends).
//
// Why not a stream callback (cudaStreamAddCallback): the stream cannot go on
// until the driver's thread has run the callback, so every one costs the GPU
// a host round trip. A GPU step used several (releasing staging buffers, the
// step's Sync): the GPU sat idle at each of them.
//
// Thread-safety: ThenRun from any thread. Events are recorded and queued under
// one lock, so the queue is in stream order.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace actorflow {

class ComputePool;

class GpuEventPoller {
 public:
  GpuEventPoller(int ordinal, ComputePool* pool) : ordinal_(ordinal), pool_(pool) {}
  GpuEventPoller(const GpuEventPoller&) = delete;
  GpuEventPoller& operator=(const GpuEventPoller&) = delete;
  /// Stops the thread; functions still pending are called here once their
  /// events completed (the caller has synchronized the streams): the pool's
  /// threads may be gone with the runtime by now.
  ~GpuEventPoller();

  /// Queues `fn` behind the work enqueued on `stream` so far and returns true,
  /// having taken `fn`; false (fn left as it was) when CUDA refused an event.
  bool ThenRun(cudaStream_t stream, std::function<void(cudaError_t)>& fn);

 private:
  struct Pending {
    cudaEvent_t event;
    std::function<void(cudaError_t)> fn;
  };
  void Loop();
  void Hand(std::function<void(cudaError_t)> fn, cudaError_t status);
  static void CallNow(std::function<void(cudaError_t)>& fn, cudaError_t status) noexcept;

  const int ordinal_;
  ComputePool* const pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;         // guarded by mu_; in stream order
  std::vector<cudaEvent_t> free_;       // guarded by mu_; completed events, for reuse
  bool stop_ = false;                   // guarded by mu_
  std::thread thread_;                  // started by the first ThenRun
};

}  // namespace actorflow
