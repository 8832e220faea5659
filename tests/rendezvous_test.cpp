// The rendezvous actor (actors/rendezvous_actor.hpp) spoken to directly, then
// Recv cancellation through sessions: a step whose sending partition fails
// ends with that partition's error, a Recv that is never satisfied ends with
// the step's deadline, and the session and its devices keep working.
// Every wait is bounded: requests carry timeouts, steps carry deadlines.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <future>
#include <mutex>
#include <thread>

#include "actorflow/actors/rendezvous_actor.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"
#include "actorflow/ops/sendrecv/sendrecv_common.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Cpus;
using test::MakeTensor;
using test::ToDef;
using test::Values;

namespace {

constexpr auto kAnswerWithin = std::chrono::seconds(30);  // a bound, never reached when things work

// A rendezvous actor of its own on the runtime's system, stopped at the end.
struct Rendezvous {
  explicit Rendezvous(Runtime* rt) : actor(SpawnRendezvousActor(rt->system())), self(rt->system()) {}
  ~Rendezvous() { caf::anon_send_exit(actor, caf::exit_reason::user_shutdown); }

  void Send(int64_t step, const std::string& key, const Tensor& value) {
    self->send(actor, RendezvousSend{step, key, value, false});
  }
  void Abort(int64_t step, const Status& s) { self->send(actor, RendezvousAbort{step, s}); }
  void StepDone(int64_t step) { self->send(actor, RendezvousStepDone{step}); }
  // Sends a Recv now; Answer() waits for the answers in the order asked.
  void AskRecv(int64_t step, const std::string& key) {
    pending.push_back(self->request(actor, kAnswerWithin, RendezvousRecv{step, key}));
  }
  // The answer to the oldest Recv still unanswered.
  RendezvousRecvResponse Answer() {
    REQUIRE(!pending.empty());
    auto handle = std::move(pending.front());
    pending.erase(pending.begin());
    return Wait(handle);
  }
  // Asks and waits for the answer (Recvs asked earlier may stay unanswered).
  RendezvousRecvResponse Recv(int64_t step, const std::string& key) {
    auto handle = self->request(actor, kAnswerWithin, RendezvousRecv{step, key});
    return Wait(handle);
  }
  // Returns once every message sent before has been handled.
  void Barrier() {
    Send(-1, "barrier", Tensor::Scalar<float>(0));
    REQUIRE(Recv(-1, "barrier").status.ok());
  }

  caf::actor actor;
  caf::scoped_actor self;
  using Handle = decltype(self->request(actor, kAnswerWithin, RendezvousRecv{}));
  std::vector<Handle> pending;

 private:
  static RendezvousRecvResponse Wait(Handle& handle) {
    RendezvousRecvResponse out;
    out.status = errors::Internal("no answer");
    handle.receive([&](RendezvousRecvResponse& r) { out = std::move(r); },
                   [&](caf::error& e) { out.status = errors::Internal("request failed: ", caf::to_string(e)); });
    return out;
  }
};

// TestHold: an asynchronous identity that, while holding is on, keeps its
// `done` until Release(): a kernel that never finishes on its own, so the
// _Send after it never runs. The test releases it before the runtime goes.
AF_REGISTER_OP("TestHold").Input("x: float").Output("y: float").SetIsStateful();
AF_REGISTER_NO_GRADIENT("TestHold");

std::mutex g_hold_mu;
bool g_holding = false;                                // guarded by g_hold_mu
std::vector<AsyncOpKernel::DoneCallback> g_held;       // guarded by g_hold_mu

class TestHoldOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ctx->set_output(0, ctx->input(0));
    std::unique_lock<std::mutex> l(g_hold_mu);
    if (g_holding) {
      g_held.push_back(std::move(done));
      return;
    }
    l.unlock();
    done();
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("TestHold").Device(DEVICE_CPU), TestHoldOp);

// Holds TestHold kernels while alive; releases them all when it goes.
struct HoldKernels {
  HoldKernels() {
    std::lock_guard<std::mutex> l(g_hold_mu);
    g_holding = true;
  }
  ~HoldKernels() { Release(); }
  static size_t NumHeld() {
    std::lock_guard<std::mutex> l(g_hold_mu);
    return g_held.size();
  }
  static void Release() {
    std::vector<AsyncOpKernel::DoneCallback> held;
    {
      std::lock_guard<std::mutex> l(g_hold_mu);
      g_holding = false;
      held.swap(g_held);
    }
    for (auto& done : held) done();
  }
};

// A _Recv-like kernel that takes its tensor through RendezvousAccess::Recv's
// callback, as kernels the device actor does not serve directly do (the GPU's
// _Recv); CPU _Recv nodes are served directly (DirectRecvKernel).
AF_REGISTER_OP("TestCallbackRecv")
    .Output("tensor: tensor_type")
    .Attr("tensor_type: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .SetIsStateful();
AF_REGISTER_NO_GRADIENT("TestCallbackRecv");

class TestCallbackRecvOp : public AsyncOpKernel {
 public:
  explicit TestCallbackRecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(RendezvousKeyFromAttrs(c)) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ctx->rendezvous()->Recv(ctx->step_id(), key_, [ctx, done](const Status& s, Tensor value, bool is_dead) {
      if (s.ok() && !is_dead) ctx->set_output(0, std::move(value));
      else ctx->SetStatus(s.ok() ? errors::Internal("dead") : s);
      done();
    });
  }

 private:
  const RendezvousKey key_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("TestCallbackRecv").Device(DEVICE_CPU), TestCallbackRecvOp);

Session* NewSession(Runtime* rt, std::unique_ptr<Session>* holder, const proto::GraphDef& def) {
  SessionOptions so;
  so.runtime = rt;
  *holder = std::make_unique<Session>(so);
  REQUIRE((*holder)->Create(def).ok());
  return holder->get();
}

}  // namespace

TEST_CASE("rendezvous: Send before Recv and Recv before Send both deliver the sender's buffer, uncopied") {
  Runtime rt(Cpus(1));
  Rendezvous rv(&rt);
  const Tensor t = MakeTensor<float>({1, 2, 3}, {3});
  rv.Send(1, "a", t);
  auto r = rv.Recv(1, "a");
  REQUIRE(r.status.ok());
  REQUIRE_FALSE(r.is_dead);
  REQUIRE(r.value.SharesBufferWith(t));
  REQUIRE(Values<float>(r.value) == std::vector<float>{1, 2, 3});

  const Tensor u = MakeTensor<float>({4}, {1});
  rv.AskRecv(1, "b");  // waits
  rv.Send(1, "b", u);
  r = rv.Answer();
  REQUIRE(r.status.ok());
  REQUIRE(r.value.SharesBufferWith(u));

  // Taken once: the entry is gone, so the key may be used again in the step.
  rv.Send(1, "a", u);
  REQUIRE(rv.Recv(1, "a").value.SharesBufferWith(u));
}

TEST_CASE("rendezvous: steps are independent") {
  Runtime rt(Cpus(1));
  Rendezvous rv(&rt);
  const Tensor t10 = Tensor::Scalar<float>(10), t11 = Tensor::Scalar<float>(11);
  rv.Send(10, "k", t10);
  rv.Send(11, "k", t11);
  rv.AskRecv(12, "k");  // the same key in another step: waits
  rv.Abort(13, errors::InvalidArgument("step 13 failed"));
  auto r11 = rv.Recv(11, "k");
  auto r10 = rv.Recv(10, "k");
  REQUIRE(r11.value.SharesBufferWith(t11));
  REQUIRE(r10.value.SharesBufferWith(t10));
  rv.Abort(12, errors::Aborted("stop waiting"));
  auto r12 = rv.Answer();
  REQUIRE(r12.status.code() == Code::kAborted);
  REQUIRE_FALSE(r12.value.IsInitialized());
  // Step 13's abort touched only step 13.
  rv.Send(14, "k", t10);
  REQUIRE(rv.Recv(14, "k").status.ok());
  REQUIRE(rv.Recv(13, "k").status.code() == Code::kInvalidArgument);
}

TEST_CASE("rendezvous: an abort answers waiting Recvs with its status, and later Recvs too") {
  Runtime rt(Cpus(1));
  Rendezvous rv(&rt);
  rv.AskRecv(7, "a");
  rv.AskRecv(7, "b");
  rv.Send(7, "sent", Tensor::Scalar<float>(1));  // sent but not taken: dropped by the abort
  rv.Abort(7, errors::InvalidArgument("node 'r' (op 'Reshape'): boom"));
  for (int i = 0; i < 2; ++i) {
    auto r = rv.Answer();
    REQUIRE(r.status.code() == Code::kInvalidArgument);
    REQUIRE_THAT(r.status.message(), Catch::Contains("boom"));
  }
  REQUIRE(rv.Recv(7, "sent").status.code() == Code::kInvalidArgument);
  REQUIRE(rv.Recv(7, "c").status.code() == Code::kInvalidArgument);
  // A later Send is dropped; a second abort does not replace the first status.
  rv.Send(7, "d", Tensor::Scalar<float>(1));
  rv.Abort(7, errors::Cancelled("second"));
  auto r = rv.Recv(7, "d");
  REQUIRE(r.status.code() == Code::kInvalidArgument);
  REQUIRE_THAT(r.status.message(), Catch::Contains("boom"));
  // An abort without a status cancels.
  rv.AskRecv(8, "a");
  rv.Abort(8, Status::OK());
  REQUIRE(rv.Answer().status.code() == Code::kCancelled);
}

TEST_CASE("rendezvous: StepDone drops the step's entries and answers what still waits") {
  Runtime rt(Cpus(1));
  Rendezvous rv(&rt);
  Tensor t = MakeTensor<float>({1, 2}, {2});
  rv.Send(3, "left", t);
  rv.Barrier();
  REQUIRE_FALSE(t.RefCountIsOne());  // the rendezvous holds it
  rv.AskRecv(3, "waiting");
  rv.StepDone(3);
  auto waiting = rv.Answer();
  REQUIRE(waiting.status.code() == Code::kCancelled);
  rv.Barrier();
  REQUIRE(t.RefCountIsOne());  // dropped
  // The step is over: a late Send (from a partition whose client gave up) is
  // dropped, not kept in a table nothing would drop again, and a late Recv is
  // answered at once.
  Tensor late = MakeTensor<float>({5}, {1});
  rv.Send(3, "late", late);
  rv.Barrier();
  REQUIRE(late.RefCountIsOne());
  auto r = rv.Recv(3, "left");
  REQUIRE(r.status.code() == Code::kCancelled);
  REQUIRE_THAT(r.status.message(), Catch::Contains("step 3 is over"));
  REQUIRE_FALSE(r.value.IsInitialized());
  // Other steps are unaffected.
  rv.Send(4, "left", t);
  REQUIRE(rv.Recv(4, "left").status.ok());
}

TEST_CASE("rendezvous: a key sent or received twice in one step is an internal error, not a hang") {
  Runtime rt(Cpus(1));
  Rendezvous rv(&rt);
  rv.AskRecv(5, "other");  // waits for another key of the step
  rv.Send(5, "k", Tensor::Scalar<float>(1));
  rv.Send(5, "k", Tensor::Scalar<float>(2));
  auto r = rv.Recv(5, "k");
  REQUIRE(r.status.code() == Code::kInternal);
  REQUIRE_THAT(r.status.message(), Catch::Contains("sent twice"));
  // The step is aborted: what waits learns of it rather than waiting for its step to end.
  auto other = rv.Answer();
  REQUIRE(other.status.code() == Code::kInternal);
  REQUIRE_THAT(other.status.message(), Catch::Contains("sent twice"));
  rv.AskRecv(6, "k");  // waits
  rv.AskRecv(6, "k");  // answered at once
  rv.Abort(6, errors::Cancelled("end"));
  REQUIRE(rv.Answer().status.code() == Code::kCancelled);
  auto second = rv.Answer();
  REQUIRE(second.status.code() == Code::kInternal);
  REQUIRE_THAT(second.status.message(), Catch::Contains("received twice"));
}

TEST_CASE("rendezvous: shutting down answers waiting Recvs") {
  Runtime rt(Cpus(1));
  Rendezvous rv(&rt);
  rv.AskRecv(1, "never");
  caf::anon_send_exit(rv.actor, caf::exit_reason::user_shutdown);
  auto r = rv.Answer();
  REQUIRE_FALSE(r.status.ok());
}

TEST_CASE("a step whose sending partition fails ends with that error, not Cancelled, and never hangs") {
  Runtime rt(Cpus(2));
  for (const std::string sender : {"CPU:0", "CPU:1"}) {
    const std::string receiver = sender == "CPU:0" ? "CPU:1" : "CPU:0";
    INFO("sender " << sender);
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto bad = ops::Reshape(root.WithOpName("bad").WithDevice(sender), x, {4, 4});  // 6 elements: fails
    auto fine = ops::Square(root.WithOpName("fine").WithDevice(receiver), x);
    Scope on_receiver = root.WithDevice(receiver);
    ops::Add(root.WithOpName("y").WithDevice(receiver), ops::Sum(on_receiver, ops::Neg(on_receiver, bad), {0, 1}),
             ops::Sum(on_receiver, fine, 0));
    std::unique_ptr<Session> holder;
    Session* session = NewSession(&rt, &holder, ToDef(root));
    RunOptions opts;
    opts.timeout_in_ms = 20000;  // a bound: the error comes long before
    std::vector<Tensor> out;
    const Tensor six = MakeTensor<float>({1, 2, 3, 4, 5, 6}, {6});
    for (int attempt = 0; attempt < 3; ++attempt) {
      Status s = session->Run(opts, {{"x", six}}, {"y"}, {}, &out);
      INFO(s.ToString());
      REQUIRE(s.code() == Code::kInvalidArgument);
      REQUIRE_THAT(s.message(), Catch::StartsWith("node 'bad' (op 'Reshape')"));
      REQUIRE(out.empty());
    }
    REQUIRE(session->LastPlacement().at("bad") != session->LastPlacement().at("y"));
    // The same signature works with a good feed, and so does another one.
    Status s = session->Run(opts, {{"x", MakeTensor<float>(std::vector<float>(16, 1.f), {16})}}, {"y"}, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(out[0].scalar<float>() == 0.f);
    REQUIRE(session->Run(opts, {{"x", six}}, {"fine"}, {}, &out).ok());
  }
}

TEST_CASE("a step with a Recv that is never satisfied ends at its deadline; the session keeps working") {
  Runtime rt(Cpus(2));
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto held = root.WithOpName("held").WithDevice("CPU:0").AddOp("TestHold", {{x}});
  ops::Neg(root.WithOpName("y").WithDevice("CPU:1"), Output(held.node(), 0));
  ops::Square(root.WithOpName("z").WithDevice("CPU:1"), x);
  std::unique_ptr<Session> holder;
  Session* session = NewSession(&rt, &holder, ToDef(root));
  std::vector<Tensor> out;
  {
    HoldKernels hold;
    RunOptions opts;
    opts.timeout_in_ms = 200;
    Status s = session->Run(opts, {{"x", Tensor::Scalar<float>(3)}}, {"y", "z"}, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.code() == Code::kDeadlineExceeded);
    REQUIRE(out.empty());
    REQUIRE(HoldKernels::NumHeld() == 1);  // the _Send never ran: the Recv could not have been satisfied
  }  // released: its step on CPU:0 winds down
  RunOptions opts;
  opts.timeout_in_ms = 20000;
  Status s = session->Run(opts, {{"x", Tensor::Scalar<float>(3)}}, {"y", "z"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].scalar<float>() == -3.f);
  REQUIRE(out[1].scalar<float>() == 9.f);
  // Another session on the same devices too.
  Scope other = Scope::NewRootScope();
  auto a = ops::Const(other.WithOpName("a").WithDevice("CPU:1"), 2.f);
  ops::Mul(other.WithOpName("b").WithDevice("CPU:0"), a, a);
  std::unique_ptr<Session> holder2;
  REQUIRE(NewSession(&rt, &holder2, ToDef(other))->Run(opts, {}, {"b"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == 4.f);
}

TEST_CASE("a multi-partition step that a device rejects before it starts is aborted at the rendezvous") {
  // Another partition of the step may already wait in a Recv for a tensor this one would have sent.
  Runtime rt(Cpus(2));
  caf::scoped_actor self{rt.system()};
  const int64_t step = 424242;
  auto waiting = self->request(rt.rendezvous_actor(), kAnswerWithin, RendezvousRecv{step, "from the rejected one"});
  RunStepRequest req;
  req.graph_handle = 987654;  // never registered
  req.step_id = step;
  req.multi_partition = true;
  Status rejected = errors::Internal("no answer");
  self->request(rt.device_actor(1), kAnswerWithin, std::move(req))
      .receive([&](RunStepResponse& r) { rejected = r.status; },
               [&](caf::error& e) { rejected = errors::Internal(caf::to_string(e)); });
  REQUIRE(rejected.code() == Code::kNotFound);
  Status recv = errors::Internal("no answer");
  waiting.receive([&](RendezvousRecvResponse& r) { recv = r.status; },
                  [&](caf::error& e) { recv = errors::Internal("request failed: ", caf::to_string(e)); });
  REQUIRE(recv == rejected);
  caf::anon_send(rt.rendezvous_actor(), RendezvousStepDone{step});
}

TEST_CASE("closing the session ends a step that waits in a Recv") {
  Runtime rt(Cpus(2));
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto held = root.WithOpName("held").WithDevice("CPU:0").AddOp("TestHold", {{x}});
  ops::Neg(root.WithOpName("y").WithDevice("CPU:1"), Output(held.node(), 0));
  std::unique_ptr<Session> holder;
  Session* session = NewSession(&rt, &holder, ToDef(root));
  HoldKernels hold;
  auto step = std::async(std::launch::async, [&] {
    RunOptions opts;
    opts.timeout_in_ms = 20000;  // a bound: Close ends it long before
    std::vector<Tensor> out;
    return session->Run(opts, {{"x", Tensor::Scalar<float>(1)}}, {"y"}, {}, &out);
  });
  for (int i = 0; i < 2000 && HoldKernels::NumHeld() == 0; ++i)  // bounded: 20 s at most
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(HoldKernels::NumHeld() == 1);
  REQUIRE(session->Close().ok());
  Status s = step.get();
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kCancelled);
}

TEST_CASE("a Recv kernel answered through its callback gets the sent tensor, or the step's deadline") {
  Runtime rt(Cpus(2));
  const std::string cpu0 = rt.devices()[0]->name(), cpu1 = rt.devices()[1]->name();
  // A hand-made pair: a _Send on CPU:0 and a callback Recv of the same key on CPU:1.
  auto build = [&](bool with_send) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x").WithDevice("CPU:0"), DT_FLOAT);
    if (with_send)
      root.WithOpName("send")
          .WithDevice("CPU:0")
          .AddOp("_Send", {{x}},
                 {{"T", AttrType(DT_FLOAT)}, {"tensor_name", AttrString("x:0")}, {"send_device", AttrString(cpu0)},
                  {"send_device_incarnation", AttrInt(7)}, {"recv_device", AttrString(cpu1)}});
    auto recv = root.WithOpName("recv").WithDevice("CPU:1").AddOp(
        "TestCallbackRecv", {},
        {{"tensor_type", AttrType(DT_FLOAT)}, {"tensor_name", AttrString("x:0")}, {"send_device", AttrString(cpu0)},
         {"send_device_incarnation", AttrInt(7)}, {"recv_device", AttrString(cpu1)}});
    ops::Neg(root.WithOpName("y").WithDevice("CPU:1"), Output(recv.node(), 0));
    ops::Square(root.WithOpName("x2").WithDevice("CPU:0"), x);
    return ToDef(root);
  };
  std::unique_ptr<Session> holder;
  Session* session = NewSession(&rt, &holder, build(true));
  std::vector<Tensor> out;
  RunOptions opts;
  opts.timeout_in_ms = 20000;
  for (float v : {3.f, -4.f}) {  // the second step reuses the freed ticket
    Status s = session->Run(opts, {{"x", Tensor::Scalar<float>(v)}}, {"y"}, {"send"}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(out[0].scalar<float>() == -v);
  }
  // Nobody sends: the waiting callback is answered by the step's deadline.
  std::unique_ptr<Session> holder2;
  Session* lonely = NewSession(&rt, &holder2, build(false));
  opts.timeout_in_ms = 200;
  Status s = lonely->Run(opts, {{"x", Tensor::Scalar<float>(1)}}, {"y", "x2"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kDeadlineExceeded);
  // The first session still works.
  opts.timeout_in_ms = 20000;
  s = session->Run(opts, {{"x", Tensor::Scalar<float>(5)}}, {"y"}, {"send"}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].scalar<float>() == -5.f);
}
