#include "actorflow/ops/io/reader_resource.hpp"

#include <utility>

#include "actorflow/core/cancellation.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/queue/queue_access.hpp"

namespace actorflow {

struct ReaderResource::Pending {
  uint64_t id = 0;
  OpKernelContext* ctx = nullptr;  // the op's: valid until done is called
  std::string queue_handle;
  int64_t max_records = 0;
  bool reset = false;
  Done done;
  CancellationManager* cancellation = nullptr;  // set while a callback is registered
  CancellationManager::Token token = 0;
  Result result;
};

ReaderResource::ReaderResource(std::string name, std::unique_ptr<io::FileRecordReader> reader)
    : name_(std::move(name)), reader_(std::move(reader)) {}

void ReaderResource::Read(OpKernelContext* ctx, const std::string& queue_handle, int64_t max_records, Done done) {
  auto p = std::make_shared<Pending>();
  p->ctx = ctx;
  p->queue_handle = queue_handle;
  p->max_records = max_records < 1 ? 1 : max_records;
  p->done = std::move(done);
  Enqueue(std::move(p));
}

void ReaderResource::Reset(OpKernelContext* ctx, Done done) {
  auto p = std::make_shared<Pending>();
  p->ctx = ctx;
  p->reset = true;
  p->done = std::move(done);
  Enqueue(std::move(p));
}

void ReaderResource::Enqueue(PendingPtr p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    p->id = next_id_++;
  }
  // Registered before it can wait: a step cancelled meanwhile fails it.
  if (CancellationManager* cm = p->ctx->cancellation_manager()) {
    p->token = cm->get_token();
    std::weak_ptr<ReaderResource> weak = shared_from_this();
    const uint64_t id = p->id;
    if (!cm->RegisterCallback(p->token, [weak, id] {
          if (auto self = weak.lock()) self->CancelWaiting(id);
        })) {
      Result r;
      r.status = errors::Cancelled(name_, ": the step was cancelled before its read started");
      p->done(r);
      return;
    }
    p->cancellation = cm;
  }
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    start = !busy_;
    if (start) busy_ = true;
    else waiting_.push_back(p);
  }
  if (start) Start(std::move(p));
}

void ReaderResource::Start(PendingPtr p) {
  if (p->reset) {
    CloseFile();
    deferred_ = Status::OK();
    records_produced_.store(0, std::memory_order_relaxed);
    work_finished_.store(0, std::memory_order_relaxed);
    Finish(p, Status::OK());
    return;
  }
  if (!deferred_.ok()) {
    Status s = std::move(deferred_);
    deferred_ = Status::OK();
    Finish(p, s);
    return;
  }
  if (!file_open_) {
    RequestWork(std::move(p));
    return;
  }
  auto self = shared_from_this();
  try {
    p->ctx->device()->compute_pool()->Schedule([self, p] { self->ReadOnPool(p, nullptr); });
  } catch (const std::exception& e) {
    Finish(p, errors::ResourceExhausted(name_, ": cannot start a read: ", e.what()));
  }
}

// The next filename, from the queue (TensorFlow's GetNextWorkLocked).
void ReaderResource::RequestWork(PendingPtr p) {
  QueueAccess* queues = p->ctx->queues();
  if (!queues) {
    Finish(p, errors::Unavailable(name_, ": no queues on this device"));
    return;
  }
  QueueRequest req;
  req.op = static_cast<int32_t>(QueueOp::kDequeue);
  req.step_id = p->ctx->step_id();
  auto self = shared_from_this();
  queues->Request(p->queue_handle, std::move(req), [self, p](QueueResponse& r) {
    Status s = r.status;
    if (s.ok()) {
      if (r.components.size() != 1)
        s = errors::InvalidArgument(self->name_, ": expected a single component queue, got ", r.components.size(),
                                    " components");
      else if (r.components[0].dtype() != DT_STRING)
        s = errors::InvalidArgument(self->name_, ": expected a queue of strings, got ",
                                    DataTypeString(r.components[0].dtype()));
      else if (r.components[0].NumElements() != 1)
        s = errors::InvalidArgument(self->name_, ": expected to dequeue a one-element string tensor, got shape ",
                                    r.components[0].shape().DebugString());
    }
    if (!s.ok()) {
      self->Finish(p, s);
      return;
    }
    std::string filename = r.components[0].data<std::string>()[0];
    try {
      p->ctx->device()->compute_pool()->Schedule(
          [self, p, filename = std::move(filename)] { self->ReadOnPool(p, &filename); });
    } catch (const std::exception& e) {
      self->Finish(p, errors::ResourceExhausted(self->name_, ": cannot start a read: ", e.what()));
    }
  });
}

// On a pool thread: opens `filename` when given, then reads records of the
// open file until the read has its records or the file ends.
void ReaderResource::ReadOnPool(const PendingPtr& p, const std::string* filename) {
  if (filename) {
    Status s = reader_->Open(*filename);
    if (!s.ok()) {  // given up: the next read takes the next file
      Finish(p, s);
      return;
    }
    file_open_ = true;
  }
  std::vector<std::string>& keys = p->result.keys;
  std::vector<std::string>& values = p->result.values;
  Status error;
  bool at_end = false;
  while (static_cast<int64_t>(keys.size()) < p->max_records) {
    std::string key, value;
    Status s = reader_->ReadRecord(&key, &value);
    if (s.ok()) {
      keys.push_back(std::move(key));
      values.push_back(std::move(value));
    } else if (errors::IsOutOfRange(s)) {
      at_end = true;
      break;
    } else {
      error = s;
      break;
    }
  }
  if (at_end || !error.ok()) CloseFile();
  if (!error.ok()) {
    if (keys.empty()) {
      Finish(p, error);
      return;
    }
    deferred_ = error;  // the records read before the damage go out first
  }
  if (!keys.empty()) {
    Finish(p, Status::OK());
    return;
  }
  RequestWork(p);  // the file had no (more) records: the next one
}

void ReaderResource::Finish(const PendingPtr& p, Status s) {
  Result result = std::move(p->result);
  result.status = std::move(s);
  if (result.status.ok()) {
    records_produced_.fetch_add(static_cast<int64_t>(result.keys.size()), std::memory_order_relaxed);
  } else {
    result.keys.clear();
    result.values.clear();
  }
  if (p->cancellation) p->cancellation->DeregisterCallback(p->token);
  Done done = std::move(p->done);
  done(result);  // p->ctx is gone from here
  PendingPtr next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiting_.empty()) {
      busy_ = false;
      return;
    }
    next = std::move(waiting_.front());
    waiting_.pop_front();
  }
  Start(std::move(next));
}

void ReaderResource::CancelWaiting(uint64_t id) {
  PendingPtr p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if ((*it)->id == id) {
        p = std::move(*it);
        waiting_.erase(it);
        break;
      }
    }
  }
  if (!p) return;  // working or done: it ends by itself
  Result r;
  r.status = errors::Cancelled(name_, ": the step was cancelled while its read waited for the reader");
  Done done = std::move(p->done);
  done(r);
}

void ReaderResource::CloseFile() {
  if (!file_open_) return;
  reader_->Close();
  file_open_ = false;
  work_finished_.fetch_add(1, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------

ReaderRegistry* ReaderRegistry::Global() {
  static ReaderRegistry* registry = new ReaderRegistry();
  return registry;
}

const std::string& ReaderRegistry::IdentityLocked(const std::string& handle) {
  auto it = identity_.find(handle);
  if (it == identity_.end()) it = identity_.emplace(handle, ResourceIdentity(handle)).first;
  return it->second;
}

Status ReaderRegistry::LookupOrCreate(const std::string& handle, const std::string& signature,
                                      const std::function<Status(std::shared_ptr<ReaderResource>*)>& make,
                                      std::shared_ptr<ReaderResource>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = IdentityLocked(handle);
  auto it = readers_.find(key);
  if (it != readers_.end()) {
    if (auto existing = it->second.reader.lock()) {
      if (it->second.signature != signature) {
        ResourceHandle h;
        std::string name = ResourceHandle::Decode(handle, &h).ok() ? h.DebugName() : std::string("?");
        return errors::InvalidArgument("shared reader '", name, "' was declared as ", it->second.signature,
                                       ", here as ", signature);
      }
      *out = std::move(existing);
      return Status::OK();
    }
  }
  std::shared_ptr<ReaderResource> made;
  AF_RETURN_IF_ERROR(make(&made));
  // Readers whose kernels are all gone leave stale entries: drop them now.
  for (auto e = readers_.begin(); e != readers_.end();) {
    if (e->second.reader.expired()) e = readers_.erase(e);
    else ++e;
  }
  for (auto e = identity_.begin(); e != identity_.end();) {
    if (e->second != key && !readers_.count(e->second)) e = identity_.erase(e);
    else ++e;
  }
  readers_[key] = Entry{made, signature};
  *out = std::move(made);
  return Status::OK();
}

Status ReaderRegistry::Lookup(const std::string& handle, std::shared_ptr<ReaderResource>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = readers_.find(IdentityLocked(handle));
  if (it != readers_.end()) {
    if (auto r = it->second.reader.lock()) {
      *out = std::move(r);
      return Status::OK();
    }
  }
  ResourceHandle h;
  std::string name = ResourceHandle::Decode(handle, &h).ok() ? h.DebugName() : std::string("?");
  return errors::NotFound("no reader '", name, "' (its reader op has not run, or its session is closed)");
}

}  // namespace actorflow
