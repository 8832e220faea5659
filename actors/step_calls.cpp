#include "actorflow/actors/step_calls.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_companion.hpp>
#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_execution_unit.hpp>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/core/ids.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/net/rendezvous_service.hpp"

namespace actorflow {

namespace {

constexpr uint8_t kRequest = 1;
constexpr uint8_t kResponse = 2;
constexpr uint8_t kStepDone = 3;  // no body; the id is the step's
constexpr size_t kMetaBytes = 17;

// `incarnation`: the receiver's that the sender expects (0 in answers).
std::string Meta(uint8_t kind, uint64_t id, uint64_t incarnation) {
  std::string m(kMetaBytes, '\0');
  m[0] = static_cast<char>(kind);
  for (int i = 0; i < 8; ++i) {
    m[1 + i] = static_cast<char>((id >> (8 * i)) & 0xff);
    m[9 + i] = static_cast<char>((incarnation >> (8 * i)) & 0xff);
  }
  return m;
}

void ParseMeta(const std::string& m, uint8_t* kind, uint64_t* id, uint64_t* incarnation) {
  *kind = static_cast<uint8_t>(m[0]);
  *id = 0;
  *incarnation = 0;
  for (int i = 0; i < 8; ++i) {
    *id |= static_cast<uint64_t>(static_cast<uint8_t>(m[1 + i])) << (8 * i);
    *incarnation |= static_cast<uint64_t>(static_cast<uint8_t>(m[9 + i])) << (8 * i);
  }
}

// `x` in CAF's binary format, as a DT_UINT8 vector; an error when it does not serialize.
template <class T>
Status Encode(caf::actor_system& sys, T& x, Tensor* out) {
  std::vector<char> buf;
  caf::binary_serializer sink(sys, buf);
  if (auto err = sink(x)) return errors::Internal("cannot serialize a step message: ", sys.render(err));
  *out = Tensor(DT_UINT8, TensorShape{static_cast<int64_t>(buf.size())});
  if (!buf.empty()) std::memcpy(out->raw_data(), buf.data(), buf.size());
  return Status::OK();
}

template <class T>
Status Decode(caf::actor_system& sys, const Tensor& body, T* x) {
  if (!body.IsInitialized() || body.dtype() != DT_UINT8 || body.dims() != 1)
    return errors::DataLoss("a step message without its body");
  caf::binary_deserializer source(sys, static_cast<const char*>(body.raw_data()), body.TotalBytes());
  if (auto err = source(*x)) return errors::DataLoss("a step message that does not decode: ", sys.render(err));
  return Status::OK();
}

caf::actor_companion* Companion(const caf::strong_actor_ptr& p) {
  return static_cast<caf::actor_companion*>(caf::actor_cast<caf::abstract_actor*>(p));
}

caf::message Failed(Status s) {
  RunStepResponse r;
  r.status = std::move(s);
  return caf::make_message(std::move(r));
}

}  // namespace

struct StepCalls::Impl : std::enable_shared_from_this<StepCalls::Impl> {
  explicit Impl(caf::actor_system& s) : sys(s) {}
  caf::actor_system& sys;
  ComputePool* pool = nullptr;
  caf::strong_actor_ptr companion;  // the sender of the requests this process serves
  std::atomic<uint64_t> answered{0}, served{0}, steps_over{0};

  mutable std::mutex mu;  // guards everything below
  TensorTransport* transport = nullptr;
  caf::actor worker;
  caf::actor rendezvous;
  // Client half: calls sent and not answered, by id.
  struct Pending {
    std::string task;
    std::function<void(caf::message)> done;
  };
  // Random at start: an answer a task sends this task's previous incarnation
  // (same name, restarted) never matches a call of this one.
  uint64_t next_call = NewIncarnation();
  std::unordered_map<uint64_t, Pending> calls;
  // Server half: requests handed to the worker, by the CAF response id their answer carries.
  struct Serving {
    std::string task;
    uint64_t call = 0;
  };
  std::unordered_map<uint64_t, Serving> serving;

  // Takes the call `id` out (to answer it); false when it is not waiting.
  bool Take(uint64_t id, Pending* p) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = calls.find(id);
    if (it == calls.end()) return false;
    *p = std::move(it->second);
    calls.erase(it);
    return true;
  }

  // An answer to `task` that cannot go: its connections with this process
  // are failed, so its StepCalls::PeerFailed answers the call (a master
  // waiting without a deadline would otherwise wait for ever).
  void Unanswerable(TensorTransport* tp, const std::string& task, const Status& why) noexcept {
    try {
      std::fprintf(stderr, "actorflow: cannot answer a step of task %s: %s\n", task.c_str(), why.ToString().c_str());
      if (tp) tp->FailPeer(task, errors::Unavailable("cannot answer a step of task ", task, ": ", why.message()));
    } catch (...) {  // no memory even for that: the connection's failure, or the caller's deadline, ends its wait
    }
  }

  // Answers call `call` of `task` with `resp` (on the answering thread).
  void Answer(const std::string& task, uint64_t call, RunStepResponse& resp) noexcept {
    TensorTransport* tp;
    {
      std::lock_guard<std::mutex> lock(mu);
      tp = transport;
    }
    // No transport: this process stops, its connections close with it.
    if (!tp) return;
    Status sent;
    try {
      Tensor body;
      Status s = Encode(sys, resp, &body);
      if (!s.ok()) {
        RunStepResponse failed;
        failed.status = s;
        if (!Encode(sys, failed, &body).ok()) return Unanswerable(tp, task, s);
      }
      sent = tp->Send(task, Channel::kControl, Meta(kResponse, call, 0), body);
    } catch (const std::exception& e) {
      sent = errors::ResourceExhausted("answering a step: ", e.what());
    } catch (...) {
      sent = errors::Internal("answering a step: an unknown exception");
    }
    if (!sent.ok() && !errors::IsCancelled(sent)) Unanswerable(tp, task, sent);
  }

  // The worker's answer to a request this process serves (the companion's mailbox).
  void OnAnswer(caf::mailbox_element_ptr ptr) noexcept {
    Serving who;
    struct Reply {
      Serving who;
      RunStepResponse resp;
    };
    std::shared_ptr<Reply> reply;  // who is there once it is
    try {
      {
        std::lock_guard<std::mutex> lock(mu);
        auto it = serving.find(ptr->mid.integer_value());
        if (it == serving.end()) return;  // not an answer (a message nobody asked for)
        who = std::move(it->second);
        serving.erase(it);
      }
      caf::message m = ptr->move_content_to_message();
      RunStepResponse resp;
      if (m.match_elements<RunStepResponse>()) resp = std::move(m.get_mutable_as<RunStepResponse>(0));
      else if (m.match_elements<caf::error>())
        resp.status =
            errors::Unavailable("the worker of this task failed to answer: ", sys.render(m.get_as<caf::error>(0)));
      else
        resp.status = errors::Internal("the worker answered a step with ", caf::to_string(m));
      // After the actors running inline on this thread (the step's Sends first).
      auto self = shared_from_this();
      reply = std::make_shared<Reply>();
      reply->who = std::move(who);
      reply->resp = std::move(resp);
      AfterInlineRun([self, reply] { self->Answer(reply->who.task, reply->who.call, reply->resp); });
    } catch (const std::exception& e) {  // no memory: a failed answer, or at least a failed connection
      Failing(reply ? reply->who : who, e.what());
    } catch (...) {
      Failing(reply ? reply->who : who, "an unknown exception");
    }
  }

  void Failing(const Serving& who, const char* what) noexcept {
    if (who.task.empty()) return;
    try {
      RunStepResponse failed;
      failed.status = errors::ResourceExhausted("answering a step of task ", who.task, ": ", what);
      Answer(who.task, who.call, failed);
    } catch (...) {
      TensorTransport* tp;
      {
        std::lock_guard<std::mutex> lock(mu);
        tp = transport;
      }
      Unanswerable(tp, who.task, errors::ResourceExhausted("answering a step: ", what));
    }
  }

  // A request from `from`, sent to this process's incarnation `expected`: to
  // the worker actor, as from the companion.
  void Serve(const std::string& from, uint64_t call, uint64_t expected, const Tensor& body) {
    RunStepRequest req;
    Status s = Decode(sys, body, &req);
    caf::actor w;
    TensorTransport* tp;
    {
      std::lock_guard<std::mutex> lock(mu);
      w = worker;
      tp = transport;
    }
    // Meant for another process of this task (graph handles count from 1 in
    // each): nothing of it runs here.
    if (s.ok() && tp && expected != tp->incarnation()) s = TaskRestartedError(tp->task(), tp->incarnation(), expected);
    if (s.ok() && !w) s = errors::Unavailable("task is shutting down: no worker for steps");
    if (!s.ok()) {
      RunStepResponse resp;
      resp.status = Status(s.code() == Code::kDataLoss ? Code::kInvalidArgument : s.code(), s.message());
      return Answer(from, call, resp);
    }
    // Only the transport's thread makes request ids: one at a time.
    auto mid = Companion(companion)->new_request_id(caf::message_priority::normal);
    {
      std::lock_guard<std::mutex> lock(mu);
      serving[mid.response_id().integer_value()] = Serving{from, call};
    }
    served.fetch_add(1);
    if (DeliverInline(pool, w, companion, mid, caf::make_message(std::move(req)))) return;
    // Not enqueued (no memory for it): answered here, or the master would wait for it.
    {
      std::lock_guard<std::mutex> lock(mu);
      serving.erase(mid.response_id().integer_value());
    }
    RunStepResponse resp;
    resp.status = errors::ResourceExhausted("task ", tp ? tp->task() : std::string("?"),
                                            ": no memory to take a step request");
    Answer(from, call, resp);
  }
};

StepCalls::StepCalls(caf::actor_system& sys, ComputePool* pool) : impl_(std::make_shared<Impl>(sys)) {
  impl_->pool = pool;
  impl_->companion = caf::actor_cast<caf::strong_actor_ptr>(sys.spawn<caf::actor_companion>());
  std::weak_ptr<Impl> weak = impl_;
  Companion(impl_->companion)->on_enqueue([weak](caf::mailbox_element_ptr ptr) {
    if (auto impl = weak.lock()) impl->OnAnswer(std::move(ptr));
  });
}

StepCalls::~StepCalls() {
  Detach();
  caf::scoped_execution_unit unit;
  Companion(impl_->companion)->cleanup(caf::error{}, &unit);
}

void StepCalls::Attach(TensorTransport* transport, caf::actor worker, caf::actor rendezvous) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->transport = transport;
  impl_->worker = std::move(worker);
  impl_->rendezvous = std::move(rendezvous);
}

void StepCalls::Detach() {
  std::unordered_map<uint64_t, Impl::Pending> calls;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->transport = nullptr;
    impl_->worker = caf::actor();
    impl_->rendezvous = caf::actor();
    calls.swap(impl_->calls);
    impl_->serving.clear();
  }
  for (auto& [id, p] : calls) p.done(Failed(errors::Unavailable("step to task ", p.task, ": this process is stopping")));
}

Status StepCalls::Call(const std::string& task, uint64_t incarnation, const RunStepRequest& req,
                       std::function<void(caf::message)> done, uint64_t* id) {
  RunStepRequest copy = req;  // inspect takes a mutable reference
  Tensor body;
  AF_RETURN_IF_ERROR(Encode(impl_->sys, copy, &body));
  std::lock_guard<std::mutex> lock(impl_->mu);  // held across Send: an answer cannot come before the call is known
  if (!impl_->transport) return errors::Unavailable("no tensor transport for a step to task ", task);
  const uint64_t call = impl_->next_call++;
  impl_->calls[call] = Impl::Pending{task, std::move(done)};
  const Status s = impl_->transport->Send(task, Channel::kControl, Meta(kRequest, call, incarnation), body);
  if (!s.ok()) impl_->calls.erase(call);
  else if (id) *id = call;
  return s;
}

void StepCalls::Cancel(uint64_t id) {
  std::function<void(caf::message)> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->calls.find(id);
  if (it == impl_->calls.end()) return;
  dropped = std::move(it->second.done);
  impl_->calls.erase(it);
}

Status StepCalls::StepDone(const std::string& task, uint64_t incarnation, int64_t step_id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->transport) return errors::Unavailable("no tensor transport to task ", task);
  // Written by the transport's thread: the master's caller returns at once.
  SendFlags queued;
  queued.queued = true;
  return impl_->transport->Send(task, Channel::kControl,
                                Meta(kStepDone, static_cast<uint64_t>(step_id), incarnation), Tensor(), queued);
}

Status StepCalls::Check(const std::string& from, const std::string& meta) {
  if (meta.size() != kMetaBytes || meta[0] < kRequest || meta[0] > kStepDone)
    return errors::DataLoss("a step message from ", from, " with a bad header");
  return Status::OK();
}

void StepCalls::Deliver(const std::string& from, const std::string& meta, const Tensor& body) {
  uint8_t kind;
  uint64_t id, incarnation;
  ParseMeta(meta, &kind, &id, &incarnation);  // checked when it began
  if (kind == kRequest) return impl_->Serve(from, id, incarnation, body);
  if (kind == kStepDone) {
    caf::actor rendezvous;
    bool mine = false;  // a step over of this process, not of a previous one of this task
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      rendezvous = impl_->rendezvous;
      mine = impl_->transport && impl_->transport->incarnation() == incarnation;
    }
    impl_->steps_over.fetch_add(1);
    if (rendezvous && mine)
      DeliverInline(impl_->pool, rendezvous, nullptr, caf::make_message_id(),
                    caf::make_message(RendezvousStepDone{static_cast<int64_t>(id)}));
    return;
  }
  Impl::Pending p;
  if (!impl_->Take(id, &p)) return;  // late: its caller stopped waiting
  if (p.task != from) {  // not the task it was sent to: not its answer
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->calls[id] = std::move(p);
    return;
  }
  RunStepResponse resp;
  const Status s = Decode(impl_->sys, body, &resp);
  if (!s.ok()) return p.done(Failed(Status(s.code(), "the answer of task " + from + ": " + s.message())));
  impl_->answered.fetch_add(1);
  p.done(caf::make_message(std::move(resp)));
}

void StepCalls::Rejected(const std::string& task, const std::string& meta, const Status& s) {
  uint8_t kind;
  uint64_t id, incarnation;
  if (!Check(task, meta).ok()) return;
  ParseMeta(meta, &kind, &id, &incarnation);
  if (kind == kStepDone) return;  // the step's tables there go when the task does
  // The handler does not say which way a message went: a call of ours to
  // that task under that id is the one it concerns (our request that could
  // not go, or its answer that could not be taken here).
  Impl::Pending p;
  if (impl_->Take(id, &p)) {
    if (p.task == task)
      return p.done(Failed(Status(errors::IsResourceExhausted(s) ? s.code() : Code::kUnavailable,
                                  "step to task " + task + ": " + s.message())));
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->calls[id] = std::move(p);
  }
  // Else it went the other way. Our answer that could not go (a failed
  // connection, no address): its caller must hear, so our connections with
  // it fail (Unanswerable). Aborted: the task at either end restarted, no one
  // waits. A request here that found no memory is answered so; one whose
  // connection failed, its sender hears from that.
  if (errors::IsAborted(s)) return;
  TensorTransport* tp;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    tp = impl_->transport;
  }
  if (kind == kResponse) {
    if (!errors::IsResourceExhausted(s)) impl_->Unanswerable(tp, task, s);  // not an answer that came here too big
    return;
  }
  if (!errors::IsResourceExhausted(s)) return;
  RunStepResponse resp;
  resp.status = Status(s.code(), "a step from task " + task + " could not be taken: " + s.message());
  impl_->Answer(task, id, resp);
}

void StepCalls::PeerFailed(const std::string& task, const Status& s) {
  std::vector<Impl::Pending> failed;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto it = impl_->calls.begin(); it != impl_->calls.end();) {
      if (it->second.task == task) {
        failed.push_back(std::move(it->second));
        it = impl_->calls.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& p : failed)
    p.done(Failed(errors::Unavailable("step to task ", task, ": connection lost: ", s.message())));
}

uint64_t StepCalls::answered() const { return impl_->answered.load(); }
uint64_t StepCalls::served() const { return impl_->served.load(); }
uint64_t StepCalls::steps_over() const { return impl_->steps_over.load(); }

size_t StepCalls::pending() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->calls.size();
}

}  // namespace actorflow
