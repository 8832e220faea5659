// Steps between processes on the tensor transport (actors/step_calls.hpp):
// a partition in an `actorflow server` process runs from this process's
// master with its RunStepRequest and RunStepResponse on the transport's
// control channel (not CAF's remote messages), results intact; the remote
// worker's own errors come back as they were made; a task the transport has
// no address for is refused at once, nothing left waiting.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/actors/step_calls.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/net/protocol.hpp"
#include "cluster_fixture.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

constexpr char kPsTask[] = "/job:ps/replica:0/task:0";

// This process as worker 0 and one ps process.
struct Cluster : test::ClusterFixture {
  Cluster() : ClusterFixture({{"ps", 0}}) {}
  StepCalls* calls() { return server->runtime()->step_calls(); }
};

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
  Scope root = Scope::NewRootScope();
  ops::Mul(root.WithOpName("z").WithDevice("/job:ps/task:0"), ops::Const(root, 4.f), 2.f);
  Session session(c.Options());
  REQUIRE(session.Create(test::ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {"z:0"}, {}, &out).ok());
  CHECK(out[0].scalar<float>() == 8.f);

  RunStepRequest req;
  req.graph_handle = 987654321;  // never registered there
  req.step_id = 5;
  auto answer = std::make_shared<std::promise<caf::message>>();
  REQUIRE(c.calls()->Call(kPsTask, req, [answer](caf::message m) { answer->set_value(std::move(m)); }).ok());
  auto f = answer->get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  caf::message m = f.get();
  REQUIRE(m.match_elements<RunStepResponse>());
  const Status s = m.get_as<RunStepResponse>(0).status;
  INFO(s.ToString());
  CHECK(errors::IsNotFound(s));
  CHECK(s.message().find("987654321") != std::string::npos);
  CHECK(s.message().find(kPsTask) != std::string::npos);
  CHECK(c.calls()->pending() == 0);

  bool called = false;
  const Status refused =
      c.calls()->Call("/job:nobody/replica:0/task:0", req, [&called](caf::message) { called = true; });
  INFO(refused.ToString());
  CHECK_FALSE(refused.ok());
  CHECK_FALSE(called);
  CHECK(c.calls()->pending() == 0);
}
