// Control flow across devices: a loop's body, a nested loop's work and a
// cond's branch on another CPU device than the loop, either way a cond goes;
// loops placed without requests by every strategy, with a variable on
// another device; and a loop whose structure asks for two devices, refused.
#include <catch2/catch.hpp>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "control_flow_util.hpp"
#include "actorflow/graph/graph.hpp"
#include "test_util.hpp"

using namespace actorflow;
// Using-declarations, not `using namespace actorflow::test`: this file's kCpu1
// is a partial device spec ("/device:CPU:1"), not test::kCpu1's full name.
using test::Bool;
using test::NestedLoopWithCond;
using test::NestedLoopWithCondValue;
using test::ToDef;
using test::TwoThreads;

// ---- Loops across devices ------------------------------------------------------

namespace {

struct TwoCpus {
  Runtime rt{TwoThreads(2)};
  PlacementStrategy placement = PlacementStrategy::kCostModel;
  std::vector<Tensor> Run(const Scope& root, const std::vector<Output>& fetches,
                          const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                          const std::vector<std::string>& targets = {}) {
    SessionOptions so;
    so.runtime = &rt;
    so.placement = placement;
    Session session(so);
    Status s = session.Create(ToDef(root));
    INFO(s.ToString());
    REQUIRE(s.ok());
    std::vector<std::string> names;
    for (const auto& f : fetches) names.push_back(f.name());
    RunOptions ro;
    ro.timeout_in_ms = 60000;  // a lost iteration would fail here, not hang
    std::vector<Tensor> out;
    for (const std::string& t : targets) {  // run first, each its own step
      s = session.Run(ro, feeds, {}, {t}, &out);
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
    s = session.Run(ro, feeds, names, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return out;
  }
};

const char* kCpu1 = "/device:CPU:1";

}  // namespace

TEST_CASE("loops across devices: a body on another device than its loop, for any parallel_iterations") {
  for (int64_t parallel : {1, 10}) {
    TwoCpus cpus;
    Scope root = Scope::NewRootScope().WithDevice("/device:CPU:0");
    // The float work runs on CPU:1, the counter on CPU:0.
    OutputList out = test::DoublingLoop(root, ops::Placeholder(root.WithOpName("n"), DT_INT32), kCpu1, parallel);
    for (int iterations : {0, 1, 10}) {
      auto v = cpus.Run(root, out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
      INFO("parallel " << parallel << ", " << iterations << " iterations");
      CHECK(v[0].scalar<int32_t>() == iterations);
      CHECK(v[1].scalar<float>() == static_cast<float>(1 << iterations));
    }
  }
}

TEST_CASE("loops across devices: a nested loop and a cond whose branch is on another device") {
  TwoCpus cpus;
  Scope root = Scope::NewRootScope().WithDevice("/device:CPU:0");
  OutputList out = NestedLoopWithCond(root, ops::Placeholder(root.WithOpName("n"), DT_INT32), kCpu1);
  for (int iterations : {0, 3, 6}) {
    auto v = cpus.Run(root, out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
    INFO(iterations << " outer iterations");
    CHECK(v[1].scalar<float>() == NestedLoopWithCondValue(iterations));
  }
}

TEST_CASE("across devices: a cond in the root frame whose branch runs on another device, either way") {
  for (bool taken : {false, true}) {
    TwoCpus cpus;
    Scope root = Scope::NewRootScope().WithDevice("/device:CPU:0");
    OutputList out = test::DoubleOrNegate(root, kCpu1, "");  // dead on CPU:1 when not taken
    auto v = cpus.Run(root, out, {{"pred", Bool(taken)}, {"x", Tensor::Scalar<float>(3.f)}});
    CHECK(v[0].scalar<float>() == (taken ? 6.f : -3.f));
  }
}

TEST_CASE("across devices: loops placed without requests, by every strategy, and a variable on another device") {
  for (PlacementStrategy strategy : {PlacementStrategy::kCostModel, PlacementStrategy::kRoundRobin}) {
    TwoCpus cpus;
    cpus.placement = strategy;
    Scope root = Scope::NewRootScope();
    auto v = ops::Variable(root.WithOpName("v").WithDevice(kCpu1), PartialTensorShape(std::vector<int64_t>{}), DT_FLOAT);
    ops::Assign(root.WithOpName("init").WithDevice(kCpu1), v, 0.5f);
    auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    OutputList out;
    // while (i < n) { x = x * 2 + v; v += 1 }  (v read by value, updated by reference)
    REQUIRE(ops::WhileLoop(
                root, {ops::Const(root, 0), ops::Const(root, 1.f)},
                [n](const Scope& s, const OutputList& w, Output* pred) {
                  *pred = ops::Less(s, w[0], n);
                  return s.status();
                },
                [&](const Scope& s, const OutputList& w, OutputList* next) {
                  auto x = ops::Add(s, ops::Mul(s, w[1], 2.f), ops::Identity(s, v));
                  auto bumped = ops::AssignAdd(s.WithControlDependencies({x.op()}), v, 1.f);
                  *next = {ops::Add(s.WithControlDependencies({bumped.op()}), w[0], 1), x};
                  return s.status();
                },
                &out, [] {
                  ops::WhileOptions o;
                  o.parallel_iterations = 1;
                  return o;
                }())
                .ok());
    for (int iterations : {0, 4}) {
      auto r = cpus.Run(root, out, {{"n", Tensor::Scalar<int32_t>(iterations)}}, {"init"});
      float x = 1.f, var = 0.5f;
      for (int i = 0; i < iterations; ++i) {
        x = x * 2.f + var;
        var += 1.f;
      }
      INFO(iterations << " iterations, strategy " << static_cast<int>(strategy));
      CHECK(r[1].scalar<float>() == x);
    }
  }
}

TEST_CASE("across devices: a loop whose structure asks for two devices is refused, saying why") {
  TwoCpus cpus;
  Scope root = Scope::NewRootScope().WithDevice("/device:CPU:0");
  OutputList out;
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0), ops::Const(root, 1.f)},
              [](const Scope& s, const OutputList& v, Output* pred) {
                *pred = ops::Less(s, v[0], 3);
                return s.status();
              },
              [](const Scope& s, const OutputList& v, OutputList* next) {
                *next = {ops::Add(s, v[0], 1), ops::Mul(s, v[1], 2.f)};
                return s.status();
              },
              &out)
              .ok());
  root.graph()->FindNode("while/NextIteration_1")->mutable_def()->set_device(kCpu1);
  SessionOptions so;
  so.runtime = &cpus.rt;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> result;
  Status s = session.Run({}, {out[1].name()}, {}, &result);
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("while/NextIteration_1") != std::string::npos);
  CHECK(s.message().find("run on one device") != std::string::npos);
}
