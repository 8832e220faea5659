// Steps between processes on the tensor transport (actors/step_calls.hpp):
// a partition in an `actorflow server` process runs from this process's
// master with its RunStepRequest and RunStepResponse on the transport's
// control channel (not CAF's remote messages), results intact; the remote
// worker's own errors come back as they were made; a task the transport has
// no address for is refused at once, nothing left waiting; a request meant
// for another incarnation of the task runs nothing there (Aborted, "task ...
// restarted"); an answer the remote task cannot send back fails the call
// (its connections fail), never a caller waiting for ever; a call its caller
// cancels is forgotten.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/actors/step_calls.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/comm/fault_injection.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/net/protocol.hpp"
#include "cluster_fixture.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

constexpr char kPsTask[] = "/job:ps/replica:0/task:0";

// This process as worker 0 and one ps process.
struct Cluster : test::ClusterFixture {
  Cluster() : ClusterFixture({{"ps", 0}}) {}
  // The ps's transport meets `faults` (ACTORFLOW_TEST_TRANSPORT_FAULTS in its
  // process's environment only).
  explicit Cluster(const std::string& faults)
      : ClusterFixture(std::vector<test::RemoteTask>{{"ps", 0, {}, {{kTransportFaultsVariable, faults}}}}) {}
  StepCalls* calls() { return server->runtime()->step_calls(); }
  // The ps's incarnation as this process knows it (after a session named it).
  uint64_t PsIncarnation() {
    auto r = server->runtime()->membership()->Find(kPsTask);
    REQUIRE(r);
    REQUIRE(r->incarnation != 0);
    return r->incarnation;
  }
  // A session with a graph on the ps, run once when `run`: both ends then know each other's address.
  void Introduce(Session* session, bool run = true) {
    Scope root = Scope::NewRootScope();
    ops::Mul(root.WithOpName("z").WithDevice("/job:ps/task:0"), ops::Const(root, 4.f), 2.f);
    REQUIRE(session->Create(test::ToDef(root)).ok());
    if (!run) return;
    std::vector<Tensor> out;
    REQUIRE(session->Run({}, {"z:0"}, {}, &out).ok());
    CHECK(out[0].scalar<float>() == 8.f);
  }

};

// Calls `req` on the ps (as incarnation `incarnation`) and waits for its answer, at most 20 s.
Status CallPs(Cluster& c, uint64_t incarnation, const RunStepRequest& req) {
  auto answer = std::make_shared<std::promise<caf::message>>();
  const Status sent =
      c.calls()->Call(kPsTask, incarnation, req, [answer](caf::message m) { answer->set_value(std::move(m)); });
  if (!sent.ok()) return sent;
  auto f = answer->get_future();
  if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready)
    return errors::DeadlineExceeded("no answer from the ps within 20 s");
  caf::message m = f.get();
  if (!m.match_elements<RunStepResponse>()) return errors::Internal("not a RunStepResponse: ", caf::to_string(m));
  return m.get_as<RunStepResponse>(0).status;
}

}  // namespace

TEST_CASE("step calls: a partition in another process runs on the transport's control channel, results intact",
          "[distributed]") {
  Cluster c;
  REQUIRE(c.calls() != nullptr);
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto there = ops::Mul(root.WithOpName("there").WithDevice("/job:ps/task:0"), x, 2.f);
  ops::Add(root.WithOpName("y"), there, 1.f);
  Session session(c.Options());
  REQUIRE(session.Create(test::ToDef(root)).ok());
  const uint64_t answered_before = c.calls()->answered();
  constexpr int kSteps = 20;
  for (int i = 0; i < kSteps; ++i) {
    std::vector<Tensor> out;
    RunOptions ro;
    ro.timeout_in_ms = 30000;  // a lost answer fails the test, never hangs it
    const Status s = session.Run(ro, {{"x", Tensor::Scalar<float>(static_cast<float>(i))}}, {"y:0"}, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(out[0].scalar<float>() == 2.f * i + 1.f);
  }
  // Every step's remote partition was answered here, through the transport.
  CHECK(c.calls()->answered() - answered_before >= static_cast<uint64_t>(kSteps));
  CHECK(c.calls()->pending() == 0);
  CHECK(c.calls()->served() == 0);  // the master asks; the ps serves
}

TEST_CASE("step calls: the remote worker's error crosses intact; a task without an address is refused at once",
          "[distributed]") {
  Cluster c;
  // A session makes the ps's transport address known here (and this task's there).
  Session session(c.Options());
  c.Introduce(&session);

  RunStepRequest req;
  req.graph_handle = 987654321;  // never registered there
  req.step_id = 5;
  const Status s = CallPs(c, c.PsIncarnation(), req);
  INFO(s.ToString());
  CHECK(errors::IsNotFound(s));
  CHECK(s.message().find("987654321") != std::string::npos);
  CHECK(s.message().find(kPsTask) != std::string::npos);
  CHECK(c.calls()->pending() == 0);

  bool called = false;
  const Status refused =
      c.calls()->Call("/job:nobody/replica:0/task:0", 1, req, [&called](caf::message) { called = true; });
  INFO(refused.ToString());
  CHECK_FALSE(refused.ok());
  CHECK_FALSE(called);
  CHECK(c.calls()->pending() == 0);
}

TEST_CASE("step calls: a request meant for another incarnation of the task runs nothing there (Aborted, restarted)",
          "[distributed]") {
  Cluster c;
  Session session(c.Options());
  c.Introduce(&session);
  const uint64_t ps = c.PsIncarnation();
  RunStepRequest req;
  req.graph_handle = 1;  // the first graph registered there: a previous process's handle 1 would run it
  req.step_id = 7;
  const Status s = CallPs(c, ps + 1, req);
  INFO(s.ToString());
  CHECK(errors::IsAborted(s));
  CHECK(s.message().find(kPsTask) != std::string::npos);
  CHECK(s.message().find("restarted") != std::string::npos);
  CHECK(s.message().find(std::to_string(ps)) != std::string::npos);
  CHECK(s.message().find(std::to_string(ps + 1)) != std::string::npos);
  CHECK(c.calls()->pending() == 0);
  // The right incarnation still runs its steps.
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {"z:0"}, {}, &out).ok());
  CHECK(out[0].scalar<float>() == 8.f);
}

TEST_CASE("step calls: an answer the remote task cannot send back fails the call (its connections fail), no hang",
          "[distributed]") {
  // Every message the ps sends is rejected (cut=1 with no connection open:
  // as a refused connect), its step answers included; CAF, and the worker
  // actor the caller monitors there, stay alive.
  Cluster c("cut=1");
  Session session(c.Options());
  c.Introduce(&session, false);  // a step would need the ps's answer
  RunStepRequest req;
  req.graph_handle = 987654321;
  req.step_id = 9;
  const Status s = CallPs(c, c.PsIncarnation(), req);  // no deadline of its own: bounded by the ps's connection
  INFO(s.ToString());
  CHECK(errors::IsUnavailable(s));
  CHECK(s.message().find(kPsTask) != std::string::npos);
  CHECK(c.calls()->pending() == 0);
}

TEST_CASE("step calls: a call its caller gives up on is forgotten (Cancel; a step past its deadline)",
          "[distributed]") {
  Cluster c("drop=1");  // the ps's answers never come
  Session session(c.Options());
  c.Introduce(&session, false);
  RunStepRequest req;
  req.graph_handle = 987654321;
  req.step_id = 11;
  std::atomic<bool> called{false};
  uint64_t id = 0;
  REQUIRE(c.calls()->Call(kPsTask, c.PsIncarnation(), req, [&called](caf::message) { called = true; }, &id).ok());
  CHECK(c.calls()->pending() == 1);
  c.calls()->Cancel(id);
  CHECK(c.calls()->pending() == 0);
  CHECK_FALSE(called.load());
  // A step whose answer does not come within its deadline (and grace): its call goes with it.
  RunOptions ro;
  ro.timeout_in_ms = 200;
  std::vector<Tensor> out;
  const Status s = session.Run(ro, {}, {"z:0"}, {}, &out);
  INFO(s.ToString());
  CHECK(errors::IsDeadlineExceeded(s));
  CHECK(c.calls()->pending() == 0);
}
