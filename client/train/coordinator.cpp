#include "actorflow/client/train/coordinator.hpp"

namespace actorflow {

Coordinator::Coordinator() = default;

Coordinator::~Coordinator() {
  RequestStop();
  Join(std::chrono::seconds(10));
}

Status Coordinator::RegisterRunner(std::unique_ptr<RunnerInterface> runner) {
  bool stopping;
  {
    std::lock_guard<std::mutex> l(mu_);
    runners_.push_back(std::move(runner));
    stopping = stop_;
  }
  if (stopping) StopRunners();  // registered after the stop: stop it too
  return Status::OK();
}

void Coordinator::RequestStop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
  }
  stop_cv_.notify_all();
  StopRunners();
}

void Coordinator::StopRunners() {
  std::vector<RunnerInterface*> runners;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& r : runners_) runners.push_back(r.get());
    runners_stopped_ = true;
  }
  for (RunnerInterface* r : runners) r->Stop();
}

bool Coordinator::ShouldStop() {
  std::lock_guard<std::mutex> l(mu_);
  return stop_;
}

void Coordinator::ReportStatus(const Status& s) {
  if (!s.ok() && !errors::IsOutOfRange(s)) {
    std::lock_guard<std::mutex> l(mu_);
    if (status_.ok()) status_ = s;
  }
  RequestStop();
}

Status Coordinator::GetStatus() {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

bool Coordinator::WaitForStop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  return stop_cv_.wait_for(l, timeout, [&] { return stop_; });
}

Status Coordinator::Join(std::chrono::milliseconds grace) {
  {
    std::unique_lock<std::mutex> l(mu_);
    stop_cv_.wait(l, [&] { return stop_; });
  }
  std::vector<RunnerInterface*> runners;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& r : runners_) runners.push_back(r.get());
  }
  const auto until = std::chrono::steady_clock::now() + grace;
  int stuck = 0;
  for (RunnerInterface* r : runners) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (!r->Join(std::max(left, std::chrono::milliseconds(0)))) ++stuck;
    Status s = r->GetStatus();
    if (!s.ok() && !errors::IsOutOfRange(s) && !errors::IsCancelled(s)) {
      std::lock_guard<std::mutex> l(mu_);
      if (status_.ok()) status_ = s;
    }
  }
  Status first = GetStatus();
  if (!first.ok()) return first;
  if (stuck > 0)
    return errors::Cancelled(stuck, " runner(s) did not finish within the ", grace.count(), " ms grace period");
  return Status::OK();
}

}  // namespace actorflow
