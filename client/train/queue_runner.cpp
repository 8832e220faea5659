#include "actorflow/client/train/queue_runner.hpp"

#include "actorflow/client/session.hpp"

namespace actorflow {

Status QueueRunner::New(const QueueRunnerDef& def, std::unique_ptr<QueueRunner>* out) {
  if (def.enqueue_op_names.empty())
    return errors::InvalidArgument("queue runner for '", def.queue_name, "' has no enqueue ops");
  if (def.close_op_name.empty() || def.cancel_op_name.empty())
    return errors::InvalidArgument("queue runner for '", def.queue_name, "' needs a close and a cancel op");
  out->reset(new QueueRunner(def));
  return Status::OK();
}

QueueRunner::~QueueRunner() {
  Stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

Status QueueRunner::Start(Session* session, Coordinator* coord) {
  std::lock_guard<std::mutex> l(mu_);
  if (!threads_.empty()) return errors::FailedPrecondition("queue runner for '", def_.queue_name, "' already started");
  session_ = session;
  coord_ = coord;
  running_ = alive_ = static_cast<int>(def_.enqueue_op_names.size());
  for (const std::string& op : def_.enqueue_op_names) threads_.emplace_back([this, op] { Loop(op); });
  return Status::OK();
}

void QueueRunner::Loop(const std::string& enqueue_op) {
  Status error;
  bool input_over = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) break;
    }
    if (coord_ && coord_->ShouldStop()) break;
    std::vector<Tensor> none;
    Status s = session_->Run({}, {}, {enqueue_op}, &none);
    if (s.ok()) continue;
    if (errors::IsOutOfRange(s) || errors::IsCancelled(s)) input_over = true;  // input over, or queue closed
    else error = s;
    break;
  }
  bool last;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!error.ok() && status_.ok()) status_ = error;
    last = --alive_ == 0;
  }
  if (!error.ok() && coord_) coord_->ReportStatus(error);
  // The last thread whose input ended closes the queue: consumers drain it
  // and then get OutOfRange instead of waiting for more.
  if (last && input_over) {
    std::vector<Tensor> none;
    Status s = session_->Run({}, {}, {def_.close_op_name}, &none);
    if (!s.ok() && !errors::IsCancelled(s)) {
      std::lock_guard<std::mutex> l(mu_);
      if (status_.ok()) status_ = s;
    }
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    --running_;
  }
  done_cv_.notify_all();
}

void QueueRunner::Stop() {
  Session* session;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return;
    stopping_ = true;
    session = session_;
  }
  // Wake enqueues waiting on a full queue (and fail later ones).
  if (session) {
    std::vector<Tensor> none;
    session->Run({}, {}, {def_.cancel_op_name}, &none);  // an error here means the session is gone: nothing waits
  }
}

bool QueueRunner::Join(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  if (!done_cv_.wait_for(l, timeout, [&] { return running_ == 0; })) return false;
  l.unlock();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  return true;
}

Status QueueRunner::GetStatus() {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

Status StartQueueRunners(Session* session, const std::vector<QueueRunnerDef>& defs, Coordinator* coord) {
  for (const QueueRunnerDef& def : defs) {
    std::unique_ptr<QueueRunner> runner;
    AF_RETURN_IF_ERROR(QueueRunner::New(def, &runner));
    AF_RETURN_IF_ERROR(runner->Start(session, coord));
    AF_RETURN_IF_ERROR(coord->RegisterRunner(std::move(runner)));
  }
  return Status::OK();
}

}  // namespace actorflow
