#include "actorflow/actors/client_channel.hpp"

#include "actorflow/actors/device/device_actor.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/net/worker_service.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_companion.hpp>
#include <caf/actor_system.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_execution_unit.hpp>

#include <atomic>
#include <condition_variable>
#include <thread>

#include <caf/system_messages.hpp>

namespace actorflow {

namespace {
// Spin iterations (each a CPU pause, ~10-40 ns) before the caller sleeps:
// long enough to catch a quick step, short enough not to take a core from
// the workers (measured on 2 cores: 4000 halved MatMul throughput).
constexpr int kSpinIterations = 300;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// The slot whose request this thread is delivering inline (DeliverHere).
thread_local const void* t_starting = nullptr;

caf::actor_companion* Companion(const caf::strong_actor_ptr& p) {
  return static_cast<caf::actor_companion*>(caf::actor_cast<caf::abstract_actor*>(p));
}
}  // namespace

struct ClientChannel::Slot final : StepReplySink, std::enable_shared_from_this<ClientChannel::Slot> {
  // Response id of the request in flight, 0 once claimed (or not armed): the
  // one delivery that counts (an answer and a down_msg may reach the callback
  // on two threads at once) takes it with one compare-and-swap of the id it
  // is for, so a delivery for an earlier request never claims a later one.
  std::atomic<uint64_t> expected{0};
  std::atomic<uint64_t> callee{0};       // actor id of its receiver
  std::atomic<bool> ready{false};

  // Claims request `token` (its response id); false when it is not the one in flight or taken.
  bool Claim(uint64_t token) {
    return token != 0 && expected.compare_exchange_strong(token, 0, std::memory_order_acq_rel);
  }
  caf::message reply;  // written before `ready` is set
  RunStepResponse step;   // likewise: a device's answer through Reply (has_step)
  bool has_step = false;
  std::chrono::steady_clock::time_point answered;  // likewise
  std::mutex mu;
  std::condition_variable cv;
  // Whether the caller sleeps (or is about to) on cv: set under mu, then
  // `ready` checked; the delivery sets `ready`, then checks this (both
  // sequentially consistent: one of the two sees the other's write), and
  // takes mu only to wake a sleeper.
  std::atomic<bool> sleeping{false};
  // Set by Start before the request leaves; read by the delivery before it
  // sets `ready` (after which the caller may Start again and replace it).
  std::shared_ptr<ReplyNotifier> notifier;

  // A device's answer to a step started by StartHereStep, kept as it is:
  // no message is made, so no allocation can fail between the claim and the
  // delivery (that would leave the request unanswerable, even by its
  // callee's down_msg) or lose the answer of a step out of memory.
  void Reply(uint64_t token, RunStepResponse&& answer) override {
    if (!Claim(token)) return;
    step = std::move(answer);
    has_step = true;
    Deliver(caf::message());
  }

  void Deliver(caf::message m) {
    std::shared_ptr<ReplyNotifier> n = notifier;
    reply = std::move(m);
    // The answer to the request this thread is starting inline (StartHere)
    // comes within its start: no clock read (answered_at says "not taken").
    // Another channel's answer that this thread's run delivers is timed.
    answered = t_starting == this ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now();
    ready.store(true, std::memory_order_seq_cst);
    // A caller not asleep now never sleeps for this answer (it checks
    // `ready` after saying it sleeps): nothing to wake. A sleeper is woken
    // once the turn of the actor answering is over (WakeAfterHandler): after
    // the handler's remaining work, the actor idle again, so the client's
    // next step finds it free to run as a turn of its own.
    const bool asleep = sleeping.load(std::memory_order_seq_cst);
    if (!asleep && !n) return;
    auto wake = [slot = shared_from_this(), n, asleep] {
      if (asleep) {
        std::lock_guard<std::mutex> l(slot->mu);  // the sleeper is in its wait, or past its last check of `ready`
        slot->cv.notify_one();
      }
      if (n) {
        {
          std::lock_guard<std::mutex> l(n->mu);
          ++n->replies;
        }
        n->cv.notify_all();
      }
    };
    std::function<void()> later;
    try {
      later = wake;
    } catch (...) {  // no memory to keep it: the sleeper is woken now (a delivery never fails)
      wake();
      return;
    }
    WakeAfterHandler(std::move(later));
  }
};

ClientChannel::ClientChannel(caf::actor_system& sys, ComputePool* pool)
    : slot_(std::make_shared<Slot>()),
      pool_(pool),
      activation_(pool ? pool->activation_unit() : nullptr) {
  companion_ = caf::actor_cast<caf::strong_actor_ptr>(sys.spawn<caf::actor_companion>());
  std::weak_ptr<Slot> weak = slot_;
  // Only the answer to the request in flight, or the callee going down, counts.
  Companion(companion_)->on_enqueue([weak](caf::mailbox_element_ptr ptr) {
    auto slot = weak.lock();
    if (!slot) return;
    // The answer claims its own request; a down_msg the request armed when
    // it saw its callee (Arm writes `callee` before `expected`).
    uint64_t token = ptr->mid.integer_value();
    if (ptr->content().match_elements<caf::down_msg>()) {
      const uint64_t armed = slot->expected.load(std::memory_order_acquire);
      if (ptr->content().get_as<caf::down_msg>(0).source.id() == slot->callee.load(std::memory_order_acquire))
        token = armed;
    }
    if (slot->Claim(token)) slot->Deliver(ptr->move_content_to_message());
  });
}

ClientChannel::~ClientChannel() {
  caf::scoped_execution_unit unit;
  Companion(companion_)->cleanup(caf::error{}, &unit);
}

Status ClientChannel::Ask(const caf::actor& dest, caf::message msg, std::chrono::milliseconds timeout,
                          caf::message* reply, std::chrono::nanoseconds spin) {
  AF_RETURN_IF_ERROR(Start(dest, std::move(msg)));
  return Wait(timeout, reply, spin);
}

bool ClientChannel::Ready() const { return slot_->ready.load(std::memory_order_acquire); }

caf::message_id ClientChannel::Arm(const caf::actor& dest, std::shared_ptr<ReplyNotifier> notifier, bool monitor) {
  Slot& s = *slot_;
  // Nothing claims while the slot is readied (a request that was not sent leaves its id armed).
  s.expected.store(0, std::memory_order_release);
  cancel_ = nullptr;
  s.notifier = std::move(notifier);
  s.has_step = false;
  s.ready.store(false, std::memory_order_relaxed);
  auto* companion = Companion(companion_);
  auto mid = companion->new_request_id(caf::message_priority::normal);
  s.callee.store(dest.id(), std::memory_order_release);
  // Last: a down_msg that sees this id sees this callee.
  s.expected.store(mid.response_id().integer_value(), std::memory_order_release);
  monitored_ = monitor;
  if (monitor) {
    callee_ = dest;
    companion->monitor(dest);  // a callee that dies answers with a down_msg
  }
  return mid;
}

Status ClientChannel::Start(const caf::actor& dest, caf::message msg, std::shared_ptr<ReplyNotifier> notifier) {
  if (!dest) return errors::Unavailable("no actor to ask");
  const caf::message_id mid = Arm(dest, std::move(notifier));
  // A remote callee's proxy forwards the message itself: no activation there.
  // With the pool's activation unit, the callee runs on an awake, free worker
  // if there is one (CAF's own choice from outside is round-robin).
  caf::execution_unit* unit = activation_ && dest->node() == companion_->node() ? activation_ : nullptr;
  caf::actor_cast<caf::abstract_actor*>(dest)->enqueue(caf::make_mailbox_element(companion_, mid, {}, std::move(msg)),
                                                      unit);
  return Status::OK();
}

bool ClientChannel::RunsHere(const caf::actor& dest) const {
  // A thread already running actors (inline, or as a pool worker) would only
  // queue the callee behind its own run, which it then waits in: a worker runs it.
  return pool_ && dest->node() == companion_->node() && !InInlineDelivery() && !ComputePool::InPoolJob();
}

Status ClientChannel::DeliverHere(const caf::actor& dest, caf::message_id mid, caf::message msg) {
  {
    ClientDeliveryScope client;  // this thread waits for the answer: it may compute
    const void* outer = t_starting;
    t_starting = slot_.get();
    const bool delivered = DeliverInline(pool_, dest, companion_, mid, std::move(msg));
    t_starting = outer;
    if (!delivered) return errors::ResourceExhausted("no memory to send a request to ", to_string(dest->address()));
  }
  WatchUnlessReady(dest);
  return Status::OK();
}

void ClientChannel::WatchUnlessReady(const caf::actor& dest) {
  // Monitored only when the answer is not there by the time the inline run
  // returns (a short step's usually is: no monitor to attach and detach);
  // a callee that ended before is reported at once by CAF's monitor.
  if (!Ready()) {
    callee_ = dest;
    Companion(companion_)->monitor(dest);
    monitored_ = true;
  }
}

Status ClientChannel::StartHere(const caf::actor& dest, caf::message msg, std::shared_ptr<ReplyNotifier> notifier) {
  if (!dest) return errors::Unavailable("no actor to ask");
  if (!RunsHere(dest)) return Start(dest, std::move(msg), std::move(notifier));
  const caf::message_id mid = Arm(dest, std::move(notifier), /*monitor=*/false);
  return DeliverHere(dest, mid, std::move(msg));
}

Status ClientChannel::StartHereStep(const caf::actor& dest, RunStepRequest&& req,
                                   std::shared_ptr<ReplyNotifier> notifier) {
  if (!dest) return errors::Unavailable("no actor to ask");
  if (!RunsHere(dest)) return Start(dest, caf::make_message(std::move(req)), std::move(notifier));
  req.reply_token = Arm(dest, std::move(notifier), /*monitor=*/false).response_id().integer_value();
  req.reply_sink = slot_;
  // An idle device actor runs the step as a turn on this thread, with no
  // message (RunStepHere); a busy one gets a plain message: the answer comes
  // through the sink either way (a request would also get CAF's empty reply
  // to a handler that returns nothing).
  bool ran;
  {
    ClientDeliveryScope client;
    const void* outer = t_starting;
    t_starting = slot_.get();
    ran = RunStepHere(pool_, dest, req);
    t_starting = outer;
  }
  if (ran) {
    WatchUnlessReady(dest);
    return Status::OK();
  }
  return DeliverHere(dest, caf::make_message_id(), caf::make_message(std::move(req)));
}

Status ClientChannel::StartVia(const caf::actor& dest, const std::function<Status(ReplyFn, CancelFn*)>& send,
                               std::shared_ptr<ReplyNotifier> notifier) {
  if (!dest) return errors::Unavailable("no actor to ask");
  // The request's id, which no CAF message carries: the answer is taken only
  // while the channel still waits for this request.
  const uint64_t token = Arm(dest, std::move(notifier)).response_id().integer_value();
  std::weak_ptr<Slot> weak = slot_;
  Status s = send(
      [weak, token](caf::message m) {
        auto slot = weak.lock();
        if (slot && slot->Claim(token)) slot->Deliver(std::move(m));
      },
      &cancel_);
  if (!s.ok()) {  // nothing in flight: the channel is free again
    // Unless a delivery claimed the request meanwhile (the callee's down_msg,
    // its monitor fired at once): it may still be writing the slot, which
    // the caller's next Arm (a fallback Start) would write too. Wait for its
    // end (ready), a few instructions away.
    if (slot_->expected.exchange(0, std::memory_order_acq_rel) == 0)
      while (!slot_->ready.load(std::memory_order_acquire)) CpuRelax();
    Companion(companion_)->demonitor(dest);
    monitored_ = false;
    callee_ = caf::actor();
    cancel_ = nullptr;
  }
  return s;
}

Status ClientChannel::Wait(std::chrono::milliseconds timeout, caf::message* reply, std::chrono::nanoseconds spin) {
  Slot& s = *slot_;
  auto* companion = Companion(companion_);
  for (int i = 0; i < kSpinIterations && !s.ready.load(std::memory_order_acquire); ++i) CpuRelax();
  if (spin.count() > 0 && !s.ready.load(std::memory_order_acquire)) {
    const auto until = std::chrono::steady_clock::now() + spin;
    for (int i = 1; !s.ready.load(std::memory_order_acquire); ++i) {
      CpuRelax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
    }
  }
  if (!s.ready.load(std::memory_order_acquire)) {
    std::unique_lock<std::mutex> l(s.mu);
    s.sleeping.store(true, std::memory_order_seq_cst);
    auto done = [&] { return s.ready.load(std::memory_order_seq_cst); };
    bool ok = true;
    if (timeout.count() > 0) ok = s.cv.wait_for(l, timeout, done);
    else s.cv.wait(l, done);
    s.sleeping.store(false, std::memory_order_relaxed);
    if (!ok) {
      if (cancel_) cancel_();  // the request's sender forgets it
      cancel_ = nullptr;
      return errors::DeadlineExceeded("no answer within ", timeout.count(), " ms");
    }
  }
  cancel_ = nullptr;
  if (monitored_) {
    companion->demonitor(callee_);
    callee_ = caf::actor();
  }
  monitored_ = false;
  *reply = std::move(s.reply);
  answered_at_ = s.answered;
  return Status::OK();
}

Status ClientChannel::TakeStepResponse(caf::message& reply, RunStepResponse* resp) {
  Slot& s = *slot_;
  if (!s.has_step) return ReplyAs(reply, resp);
  *resp = std::move(s.step);
  s.step = RunStepResponse();
  s.has_step = false;
  return Status::OK();
}

ChannelPool::~ChannelPool() { delete spare_.exchange(nullptr); }

std::unique_ptr<ClientChannel> ChannelPool::Acquire() {
  if (ClientChannel* ch = spare_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<ClientChannel>(ch);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!free_.empty()) {
      auto ch = std::move(free_.back());
      free_.pop_back();
      return ch;
    }
  }
  return std::make_unique<ClientChannel>(sys_, pool_);
}

void ChannelPool::Release(std::unique_ptr<ClientChannel> ch) {
  ClientChannel* none = nullptr;
  if (spare_.compare_exchange_strong(none, ch.get(), std::memory_order_release, std::memory_order_relaxed)) {
    ch.release();
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  free_.push_back(std::move(ch));
}

}  // namespace actorflow
