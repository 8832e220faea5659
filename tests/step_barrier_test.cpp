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

// A partition its own process cancelled (its session closed there: its master
// was taken for dead while stopped) answers Cancelled first: the others may
// wait for its tensors, so the step is aborted with it (before, a Cancelled
// answer never aborted, and the chaos suite's chief waited out its 120 s
// step deadline on its own partition's _Recv).
TEST_CASE("step barrier: a partition cancelled by its own process aborts the others") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor p0{sys}, p1{sys};
  StepBarrier barrier(43, {caf::actor(p0), caf::actor(p1)});
  barrier.Started();
  barrier.Started();
  barrier.PartitionDone(errors::Cancelled("graph deregistered (session closed) during step 43"));
  for (caf::scoped_actor* p : {&p0, &p1}) {
    Received r = Drain(*p, 43);
    REQUIRE(r.aborts.size() == 1);
    CHECK(errors::IsCancelled(r.aborts[0]));
  }
  // The waiting partition's _Recv then fails with the abort: its answer is derived, the Cancelled stays the cause.
  barrier.PartitionDone(errors::Cancelled("node 'x/_recv' (op '_Recv'): aborted"));
  CHECK(barrier.pending() == 0);
  CHECK(errors::IsCancelled(barrier.status()));
  REQUIRE(barrier.Finish().ok());
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
