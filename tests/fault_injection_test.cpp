// Injected transport faults (comm/fault_injection.hpp, test-only): the spec
// and its errors; a delay holds every message at least that long and jitter
// never reorders the messages to one peer; a cut fails the connection
// (Unavailable, the peer reported failed) and the next message opens a new
// one; and in a real cluster (an `actorflow server` process whose transport
// drops everything it sends, by ACTORFLOW_TEST_TRANSPORT_FAULTS), a
// step that needs its tensors fails at its deadline with a clear error,
// never a hang.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <chrono>
#include <string>
#include <vector>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/comm/fault_injection.hpp"
#include "actorflow/master/server.hpp"
#include "local_cluster.hpp"
#include "test_util.hpp"
#include "transport_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

TransportFaults Faults(const std::string& spec) {
  TransportFaults f;
  Status s = TransportFaults::Parse(spec, &f);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return f;
}

int64_t MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

// A ps process whose transport meets `faults` (by the environment), and this
// process as worker 0: a step computes on the ps and fetches the result here.
struct FaultyPs {
  LocalCluster processes;
  std::unique_ptr<Server> server;
  explicit FaultyPs(const std::string& faults) {
    processes.Start("ps", 0, {}, {{kTransportFaultsVariable, faults}});  // its environment only
    ServerOptions o = processes.WorkerTaskOptions();
    Status s = ClusterSpec::Parse(processes.ClusterJson({{"worker", {"127.0.0.1:1"}}}), &o.cluster);
    REQUIRE(s.ok());
    s = Server::Create(o, &server);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  // Runs y = x * 2 on the ps, fetched here, bounded by `timeout_ms`.
  Status Step(int timeout_ms, int64_t* took_ms) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    ops::Mul(root.WithOpName("y").WithDevice("/job:ps/task:0"), x, 2.f);
    SessionOptions so;
    so.target = server->target();
    so.device_find_timeout_ms = 10000;
    Session session(so);
    proto::GraphDef def;
    REQUIRE(root.ToGraphDef(&def).ok());
    REQUIRE(session.Create(def).ok());
    RunOptions ro;
    ro.timeout_in_ms = timeout_ms;
    std::vector<Tensor> out;
    const auto t0 = std::chrono::steady_clock::now();
    Status s = session.Run(ro, {{"x", Tensor::Scalar<float>(3.f)}}, {"y:0"}, {}, &out);
    *took_ms = MsSince(t0);
    return s;
  }
};

}  // namespace

TEST_CASE("transport faults: a spec parses; a malformed one is InvalidArgument naming the item and the rule") {
  TransportFaults f = Faults("delay_ms=20,jitter_ms=5,drop=0.01,cut=0.001,seed=7");
  CHECK(f.delay_ms == 20);
  CHECK(f.jitter_ms == 5);
  CHECK(f.drop == 0.01);
  CHECK(f.cut == 0.001);
  CHECK(f.seed == 7);
  CHECK(f.enabled());
  CHECK_FALSE(Faults("").enabled());
  CHECK_FALSE(Faults("seed=3").enabled());
  CHECK(Faults(f.ToString()).ToString() == f.ToString());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"delay=20", "unknown key 'delay'"},  {"drop=1.5", "drop is a probability"},
      {"delay_ms=x", "'delay_ms=x' is not KEY=NUMBER"}, {"delay_ms", "not KEY=NUMBER"},
      {"delay_ms=5,jitter_ms=6", "jitter_ms (6) must not exceed delay_ms (5)"}, {"delay_ms=-1", "delay_ms must be"},
      {"seed=1.5", "seed must be a whole number"}};
  for (const auto& [spec, why] : bad) {
    INFO(spec);
    TransportFaults out;
    Status s = TransportFaults::Parse(spec, &out);
    CHECK(errors::IsInvalidArgument(s));
    CHECK(s.message().find(why) != std::string::npos);
  }
}

TEST_CASE("transport faults: a malformed ACTORFLOW_TEST_TRANSPORT_FAULTS fails Start, naming the variable") {
  Membership m("/job:a/replica:0/task:0", 1);
  TransportOptions o;
  o.task = "/job:a/replica:0/task:0";
  o.incarnation = 1;
  o.membership = &m;
  REQUIRE(::setenv(kTransportFaultsVariable, "drop=2", 1) == 0);
  std::unique_ptr<TensorTransport> t;
  Status s = TensorTransport::Start(o, TransportCallbacks(), &t);
  REQUIRE(::unsetenv(kTransportFaultsVariable) == 0);
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("ACTORFLOW_TEST_TRANSPORT_FAULTS=\"drop=2\"") != std::string::npos);
  // Set in the options, the environment is not read: a test's own faults stand.
  o.test_faults = Faults("delay_ms=1");
  REQUIRE(::setenv(kTransportFaultsVariable, "drop=2", 1) == 0);
  s = TensorTransport::Start(o, TransportCallbacks(), &t);
  REQUIRE(::unsetenv(kTransportFaultsVariable) == 0);
  CHECK(s.ok());
}

TEST_CASE("transport faults: a delay holds each message at least that long; jitter never reorders one peer's") {
  SECTION("delay") {
    Pair p(size_t{4} << 20, false, Faults("delay_ms=80"));
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      REQUIRE(SendTensor(*p.a, kB, 1, Key("d" + std::to_string(i)), Tensor::Scalar<float>(1.f), false).ok());
      auto got = p.in_b.Next();
      REQUIRE(got.status.ok());
      CHECK(MsSince(t0) >= 80);  // it cannot come sooner
    }
  }
  SECTION("jitter") {
    Pair p(size_t{4} << 20, false, Faults("delay_ms=20,jitter_ms=20,seed=3"));
    const int n = 60;
    for (int i = 0; i < n; ++i) {
      Tensor t = i % 10 == 0 ? Tensor(DT_FLOAT, TensorShape{1 << 18}) : Tensor::Scalar<float>(static_cast<float>(i));
      REQUIRE(SendTensor(*p.a, kB, 1, Key("j" + std::to_string(i)), t, false).ok());
    }
    for (int i = 0; i < n; ++i) {
      auto got = p.in_b.Next();
      REQUIRE(got.status.ok());
      CHECK(got.key == Key("j" + std::to_string(i)).str());  // in the order sent
    }
    CHECK(p.a->Drain(std::chrono::seconds(10)));
  }
}

TEST_CASE("transport faults: a cut fails the connection (Unavailable, the peer reported failed); drops say nothing") {
  SECTION("cut") {
    Pair p(size_t{4} << 20, false, Faults("cut=1"));
    REQUIRE(SendTensor(*p.a, kB, 5, Key("c"), Tensor::Scalar<float>(1.f), false).ok());
    auto r = p.in_a.Next();  // A's channel hears its message was not taken
    CHECK(r.step == 5);
    CHECK(errors::IsUnavailable(r.status));
    CHECK(r.status.message().find("was cut (injected fault") != std::string::npos);
    std::unique_lock<std::mutex> l(p.in_a.mu);
    CHECK(p.in_a.failures.empty());  // no connection yet: nothing to report failed
  }
  SECTION("cuts at random: each message delivered or rejected, none lost; a cut connection is reported, the next opens anew") {
    Pair p(size_t{4} << 20, false, Faults("cut=0.4,seed=11"));
    int delivered = 0, cut = 0, delivered_after_cut = 0;
    auto any = [&](Inbox& in) {
      std::lock_guard<std::mutex> l(in.mu);
      return !in.items.empty();
    };
    for (int i = 0; i < 24; ++i) {
      REQUIRE(SendTensor(*p.a, kB, i, Key("m" + std::to_string(i)), Tensor::Scalar<float>(1.f), false).ok());
      // Its outcome, one at a time: delivered to B, or rejected to A.
      REQUIRE(WaitUntil([&] { return any(p.in_a) || any(p.in_b); }, std::chrono::seconds(10)));
      if (any(p.in_a)) {
        auto r = p.in_a.Next();
        CHECK(r.step == i);
        CHECK(errors::IsUnavailable(r.status));
        CHECK(r.status.message().find("was cut (injected fault") != std::string::npos);
        ++cut;
      } else {
        auto r = p.in_b.Next();
        CHECK(r.status.ok());
        CHECK(r.step == i);
        ++delivered;
        if (cut > 0) ++delivered_after_cut;
      }
    }
    CHECK(cut > 0);
    CHECK(delivered_after_cut > 0);  // a new connection after a cut
    // A cut connection is a failed one, on both sides (B saw it closed).
    CHECK(WaitUntil([&] {
      std::lock_guard<std::mutex> la(p.in_a.mu), lb(p.in_b.mu);
      return !p.in_a.failures.empty() && !p.in_b.failures.empty();
    }, std::chrono::seconds(10)));
  }
  SECTION("drop=1: nothing arrives, nothing is rejected") {
    Pair p(size_t{4} << 20, false, Faults("drop=1"));
    REQUIRE(SendTensor(*p.a, kB, 1, Key("x"), Tensor::Scalar<float>(1.f), false).ok());
    CHECK(p.a->Drain(std::chrono::seconds(5)));
    CHECK_FALSE(WaitUntil(
        [&] {
          std::lock_guard<std::mutex> a(p.in_a.mu), b(p.in_b.mu);
          return !p.in_a.items.empty() || !p.in_b.items.empty();
        },
        std::chrono::milliseconds(300)));
  }
}

TEST_CASE("transport faults: a ps whose transport drops everything fails the step at its deadline, never a hang",
          "[distributed]") {
  int64_t took = 0;
  {
    FaultyPs c("drop=1");
    Status s = c.Step(3000, &took);
    INFO(s.ToString() << " after " << took << " ms");
    CHECK(errors::IsDeadlineExceeded(s));
    CHECK(s.message().find("deadline") != std::string::npos);
    CHECK(took >= 3000);
    CHECK(took <= 3000 + 5000 * AF_TEST_SLOWDOWN);  // bounded: never a hang
  }
  // Without faults the same step runs (the drops were the injector's).
  FaultyPs clean("");
  Status s = clean.Step(30000, &took);
  INFO(s.ToString());
  CHECK(s.ok());
}
