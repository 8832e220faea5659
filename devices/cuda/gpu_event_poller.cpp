#include "actorflow/devices/cuda/gpu_event_poller.hpp"

#include <sys/prctl.h>

#include <chrono>
#include <cstdio>

#include "actorflow/devices/compute_pool.hpp"

namespace actorflow {

namespace {
// How long the poller sleeps between queries of a pending event: a step's end
// is noticed within about this much (plus the sleep's slack, set to 1 us).
constexpr auto kPollInterval = std::chrono::microseconds(5);
}  // namespace

GpuEventPoller::~GpuEventPoller() {
  std::deque<Pending> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(pending_);
  }
  // Called here, not on the pool: the device goes with its runtime, whose
  // actor system (the pool's threads) may already be gone.
  for (Pending& p : left) {
    const cudaError_t status = cudaEventSynchronize(p.event);
    cudaGetLastError();
    cudaEventDestroy(p.event);
    CallNow(p.fn, status);
  }
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

bool GpuEventPoller::ThenRun(cudaStream_t stream, std::function<void(cudaError_t)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return false;
  cudaEvent_t event = nullptr;
  if (!free_.empty()) {
    event = free_.back();
    free_.pop_back();
  } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (cudaEventRecord(event, stream) != cudaSuccess) {
    cudaGetLastError();
    cudaEventDestroy(event);
    return false;
  }
  try {
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    pending_.emplace_back();  // allocated before fn is taken: a failure leaves it to the caller
  } catch (...) {  // no thread or no memory: the caller waits another way
    cudaEventDestroy(event);
    return false;
  }
  pending_.back().event = event;
  pending_.back().fn = std::move(fn);
  cv_.notify_one();
  return true;
}

void GpuEventPoller::Loop() {
  cudaSetDevice(ordinal_);  // events are queried in their GPU's context
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // sleeps of microseconds, not the default 50
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    const cudaEvent_t oldest = pending_.front().event;  // only this thread pops
    lock.unlock();
    const cudaError_t status = cudaEventQuery(oldest);
    if (status == cudaErrorNotReady) {
      std::this_thread::sleep_for(kPollInterval);
      lock.lock();
      continue;
    }
    if (status != cudaSuccess) cudaGetLastError();
    lock.lock();
    Pending done = std::move(pending_.front());
    pending_.pop_front();
    if (status == cudaSuccess) {
      free_.push_back(done.event);
    } else {
      cudaEventDestroy(done.event);
    }
    lock.unlock();
    Hand(std::move(done.fn), status);
    lock.lock();
  }
}

void GpuEventPoller::CallNow(std::function<void(cudaError_t)>& fn, cudaError_t status) noexcept {
  try {
    fn(status);
  } catch (...) {  // a function that throws must not end the poller's thread (or the process)
    std::fprintf(stderr, "actorflow: a function waiting for a GPU event threw\n");
  }
}

void GpuEventPoller::Hand(std::function<void(cudaError_t)> fn, cudaError_t status) {
  if (pool_ == nullptr) {
    CallNow(fn, status);
    return;
  }
  try {
    pool_->Schedule([fn = std::move(fn), status] { fn(status); });
  } catch (...) {  // no memory for a pool job: the step waiting for it cannot finish
    std::fprintf(stderr, "actorflow: out of memory handing a finished GPU event to the compute pool\n");
  }
}

}  // namespace actorflow
