// StepBarrier (master/step_barrier.hpp): the partitions of one step joined by
// one object. Its participants here are scoped actors standing in for the
// rendezvous actors of the processes a step runs in.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <vector>

#include "actorflow/master/step_barrier.hpp"
#include "actorflow/net/rendezvous_service.hpp"

using namespace actorflow;

namespace {

// What one participant received: the aborts' statuses and how many StepDones.
struct Received {
  std::vector<Status> aborts;
  int step_done = 0;
};

Received Drain(caf::scoped_actor& participant, int64_t step_id) {
  Received r;
  bool more = true;
  while (more) {
    participant->receive(
        [&](const RendezvousAbort& a) {
          CHECK(a.step_id == step_id);
          r.aborts.push_back(a.status);
        },
        [&](const RendezvousStepDone& d) {
          CHECK(d.step_id == step_id);
          ++r.step_done;
        },
        caf::after(std::chrono::milliseconds(200)) >> [&] { more = false; });
  }
  return r;
}

}  // namespace

TEST_CASE("step barrier: the first failure aborts every participant once; the root cause is the step's status") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor p0{sys}, p1{sys};
  StepBarrier barrier(42, {caf::actor(p0), caf::actor(p1), caf::actor(p0)});  // p0 twice: one participant
  for (int i = 0; i < 3; ++i) barrier.Started();
  const Status root = errors::InvalidArgument("node 'x' (op 'MatMul'): bad shapes");
  // Another partition's _Recv fails with the abort it caused; it answers first.
  const Status derived = errors::InvalidArgument("node 'recv' (op '_Recv'): ", root.message());
  barrier.PartitionDone(derived);
  barrier.PartitionDone(root);
  barrier.PartitionDone(errors::Cancelled("step 42 was aborted"));
  CHECK(barrier.pending() == 0);
  CHECK(barrier.status() == root);
  REQUIRE(barrier.Finish().ok());
  for (caf::scoped_actor* p : {&p0, &p1}) {
    Received r = Drain(*p, 42);
    REQUIRE(r.aborts.size() == 1);  // once, with the first failure seen
    CHECK(r.aborts[0] == derived);
    CHECK(r.step_done == 1);
  }
}

// A partition whose session its process closed under it (its master taken
// for dead while stopped) answers Aborted, not Cancelled: the others may wait
// for its tensors, so the step must be aborted with it (a Cancelled answer
// never aborts, and the chaos suite's chief waited out its 120 s step
// deadline on its own partition's _Recv).
TEST_CASE("step barrier: a partition dropped with its session (Aborted) aborts the others; a Cancelled one does not") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor p0{sys}, p1{sys};
  StepBarrier barrier(43, {caf::actor(p0), caf::actor(p1)});
  barrier.Started();
  barrier.Started();
  const Status dropped = errors::Aborted("graph deregistered (the master of session s went down) during step 43");
  barrier.PartitionDone(dropped);
  for (caf::scoped_actor* p : {&p0, &p1}) {
    Received r = Drain(*p, 43);
    REQUIRE(r.aborts.size() == 1);
    CHECK(r.aborts[0] == dropped);
  }
  // The waiting partition's _Recv then fails with the abort: derived, the Aborted stays the cause (retryable).
  barrier.PartitionDone(errors::Aborted("node 'x/_recv' (op '_Recv'): ", dropped.message()));
  CHECK(barrier.pending() == 0);
  CHECK(barrier.status() == dropped);
  REQUIRE(barrier.Finish().ok());
  for (caf::scoped_actor* p : {&p0, &p1}) CHECK(Drain(*p, 43).step_done == 1);

  StepBarrier shutdown(44, {caf::actor(p0)});  // a Cancelled answer (a device shut down) aborts nobody
  shutdown.Started();
  shutdown.Started();
  shutdown.PartitionDone(errors::Cancelled("device shut down"));
  CHECK(Drain(p0, 44).aborts.empty());
  shutdown.PartitionDone(errors::Unavailable("node 'r' (op '_Recv'): task ps:0 lost"));
  CHECK(errors::IsUnavailable(shutdown.status()));  // the peer's loss, not the Cancelled, is the step's status
  REQUIRE(shutdown.Finish().ok());
}

TEST_CASE("step barrier: a step whose partitions all succeed aborts nobody; unanswered partitions are an error") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor p{sys};
  {
    StepBarrier barrier(7, {caf::actor(p)});
    barrier.Started();
    barrier.Started();
    barrier.PartitionDone(Status::OK());
    CHECK(barrier.pending() == 1);
    CHECK(errors::IsInternal(barrier.Finish()));
    barrier.PartitionDone(Status::OK());
    CHECK(barrier.status().ok());
    REQUIRE(barrier.Finish().ok());
  }
  Received r = Drain(p, 7);
  CHECK(r.aborts.empty());
  CHECK(r.step_done == 1);
}

TEST_CASE("step barrier: a partition that cannot start fails the step and aborts the started ones") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor p{sys};
  StepBarrier barrier(9, {caf::actor(p)});
  barrier.Started();
  const Status refused = errors::ResourceExhausted("no memory to start a partition");
  barrier.FailedToStart(refused);
  barrier.PartitionDone(errors::Cancelled("aborted"));
  CHECK(barrier.status() == refused);
  REQUIRE(barrier.Finish().ok());
  Received r = Drain(p, 9);
  REQUIRE(r.aborts.size() == 1);
  CHECK(r.aborts[0] == refused);
}
