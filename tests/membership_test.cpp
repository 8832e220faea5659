// Membership (comm/membership.hpp): the one record of the cluster's tasks in
// a process. A task added (by name, then with an address), replaced (a new
// incarnation), failed and removed, each a change with the next version;
// subscribers get every change in version order, also from writers on many
// threads; an unsubscribed listener (even one that unsubscribes itself) is
// never called again; this process's own record; CheckIncarnation.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/comm/membership.hpp"

using namespace actorflow;

namespace {

constexpr char kSelf[] = "/job:worker/replica:0/task:0";
constexpr char kPeer[] = "/job:worker/replica:0/task:1";
constexpr char kPs[] = "/job:ps/replica:0/task:0";
using Kind = MembershipChange::Kind;

// What a subscriber saw. Listeners run on the writers' threads, one at a time.
struct Seen {
  std::mutex mu;
  std::vector<MembershipChange> changes;
  Membership::Listener Listener() {
    return [this](const MembershipChange& c) {
      std::lock_guard<std::mutex> l(mu);
      changes.push_back(c);
    };
  }
  std::vector<MembershipChange> Take() {
    std::lock_guard<std::mutex> l(mu);
    return std::move(changes);
  }
  // The one change seen since the last look.
  MembershipChange One() {
    auto c = Take();
    REQUIRE(c.size() == 1);
    return c[0];
  }
};

}  // namespace

TEST_CASE("membership: this process is a member from the start, alive, and only its own incarnation is accepted") {
  Membership m(kSelf, 7);
  Seen seen;
  m.Subscribe(seen.Listener());
  CHECK(m.self() == kSelf);
  CHECK(m.self_incarnation() == 7);
  auto me = m.Find(kSelf);
  REQUIRE(me);
  CHECK(me->incarnation == 7);
  CHECK(me->liveness == TaskRecord::Liveness::kAlive);
  CHECK(me->job() == "/job:worker");
  CHECK_FALSE(m.HasAddress(kSelf));  // its transport's address comes later, if at all
  CHECK(m.CheckIncarnation(kSelf, 7).ok());
  CHECK(m.version() == 0);
  // Another incarnation of this very task is not this process.
  CHECK(m.Update(TaskRecord::At(kSelf, "10.0.0.1", 5000, 8)).code() == Code::kFailedPrecondition);
  // Nothing fails or removes this process from within.
  m.MarkFailed(kSelf, 7, errors::Unavailable("no"));
  m.Remove(kSelf);
  CHECK(m.version() == 0);
  CHECK(seen.Take().empty());
  // Its address, once known: added (with an address), not replaced.
  REQUIRE(m.Update(TaskRecord::At(kSelf, "10.0.0.1", 5000, 7)).ok());
  const MembershipChange c = seen.One();
  CHECK(c.kind == Kind::kAdded);
  CHECK_FALSE(c.Superseded());
  CHECK(m.HasAddress(kSelf));
  CHECK(m.Tasks().size() == 1);
}

TEST_CASE("membership: a task added, replaced, failed and removed; each change has the next version") {
  Membership m(kSelf, 1);
  Seen seen;
  m.Subscribe(seen.Listener());

  // Known by name only (a resolver's cluster description): no address, no incarnation.
  m.AddName(kPeer);
  m.AddName(kPeer);  // nothing new
  MembershipChange c = seen.One();
  CHECK(c.kind == Kind::kAdded);
  CHECK(c.version == 1);
  CHECK(c.task.incarnation == 0);
  CHECK(c.task.liveness == TaskRecord::Liveness::kUnknown);
  CHECK_FALSE(m.HasAddress(kPeer));
  CHECK(m.CheckIncarnation(kPeer, 5).code() == Code::kAborted);

  // What it says of itself: for readers, added with an address.
  REQUIRE(m.Update(TaskRecord::At(kPeer, "10.0.0.2", 6000, 5)).ok());
  REQUIRE(m.Update(TaskRecord::At(kPeer, "10.0.0.2", 6000, 5)).ok());  // nothing new
  c = seen.One();
  CHECK(c.kind == Kind::kAdded);
  CHECK(c.version == 2);
  CHECK(c.previous.incarnation == 0);
  CHECK(c.task.liveness == TaskRecord::Liveness::kAlive);
  CHECK(m.HasAddress(kPeer));
  CHECK(m.CheckIncarnation(kPeer, 5).ok());

  // It restarted: a new incarnation (and port) replaces it.
  REQUIRE(m.Update(TaskRecord::At(kPeer, "10.0.0.2", 6001, 6)).ok());
  c = seen.One();
  CHECK(c.kind == Kind::kReplaced);
  CHECK(c.version == 3);
  CHECK(c.previous.incarnation == 5);
  CHECK(c.task.incarnation == 6);
  CHECK(c.Superseded());
  const Status old = m.CheckIncarnation(kPeer, 5);
  CHECK(old.code() == Code::kAborted);
  CHECK_THAT(old.message(), Catch::Contains(std::string(kPeer) + " restarted (incarnation 6, this session knew 5)"));

  // A failure of the old incarnation is not the task's.
  m.MarkFailed(kPeer, 5, errors::Unavailable("old"));
  CHECK(seen.Take().empty());
  m.MarkFailed(kPeer, 6, errors::Unavailable("connection lost"));
  c = seen.One();
  CHECK(c.kind == Kind::kFailed);
  CHECK(c.version == 4);
  CHECK(c.task.liveness == TaskRecord::Liveness::kFailed);
  CHECK(c.previous.liveness == TaskRecord::Liveness::kAlive);
  CHECK(c.task.failure.message() == "connection lost");
  CHECK_FALSE(c.Superseded());
  // The record stays (a failure is told from a replacement): same incarnation.
  CHECK(m.CheckIncarnation(kPeer, 6).ok());
  m.MarkFailed(kPeer, 0, Status::OK());  // whichever incarnation, no reason given
  c = seen.One();
  CHECK(errors::IsUnavailable(c.task.failure));
  CHECK_THAT(c.task.failure.message(), Catch::Contains(kPeer));

  // Alive again at the same incarnation and address: kReplaced, but nothing of it ended.
  REQUIRE(m.Update(TaskRecord::At(kPeer, "10.0.0.2", 6001, 6)).ok());
  c = seen.One();
  CHECK(c.kind == Kind::kReplaced);
  CHECK(c.task.liveness == TaskRecord::Liveness::kAlive);
  CHECK(c.task.failure.ok());
  CHECK_FALSE(c.Superseded());

  // It left.
  m.Remove(kPeer);
  m.Remove(kPeer);  // nothing left to remove
  c = seen.One();
  CHECK(c.kind == Kind::kRemoved);
  CHECK(c.version == 7);
  CHECK(c.task.incarnation == 6);  // as it was
  CHECK(c.Superseded());
  CHECK_FALSE(m.Find(kPeer));
  CHECK(m.CheckIncarnation(kPeer, 6).code() == Code::kNotFound);
  m.MarkFailed(kPeer, 6, errors::Unavailable("gone"));  // unknown: nothing
  CHECK(m.version() == 7);
  CHECK(seen.Take().empty());

  // Bad records change nothing.
  CHECK(m.Update(TaskRecord::At("", "h", 1, 1)).code() == Code::kInvalidArgument);
  CHECK(m.Update(TaskRecord::At(kPeer, "h", 1, 0)).code() == Code::kInvalidArgument);
  CHECK(m.version() == 7);
  CHECK(std::string(MembershipChangeName(Kind::kReplaced)) == "replaced");
}

TEST_CASE("membership: readers see every task sorted, a job's tasks, addresses; a listener reads the new state") {
  Membership m(kSelf, 1);
  std::vector<std::string> seen_by_listener;
  m.Subscribe([&](const MembershipChange& c) {
    // Called after the lock is released: reading the membership here is fine.
    auto now = m.Find(c.task.name);
    seen_by_listener.push_back(now ? std::to_string(now->incarnation) : "gone");
  });
  REQUIRE(m.Update(TaskRecord::At(kPs, "10.0.0.3", 7000, 9)).ok());
  REQUIRE(m.Update(TaskRecord::At(kPeer, "10.0.0.2", 6000, 5)).ok());
  m.AddName("/job:worker/replica:0/task:2");
  m.Remove(kPs);
  CHECK(seen_by_listener == std::vector<std::string>{"9", "5", "0", "gone"});
  std::vector<std::string> names;
  for (const auto& t : m.Tasks()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{kSelf, kPeer, "/job:worker/replica:0/task:2"});  // sorted by name
  CHECK(m.TasksOfJob("/job:worker") == names);
  CHECK(m.TasksOfJob("/job:ps").empty());
  CHECK(m.HasAddress(kPeer));
  CHECK_FALSE(m.HasAddress("/job:worker/replica:0/task:2"));
}

TEST_CASE("membership: unsubscribed listeners are never called again, also when one unsubscribes inside a listener") {
  Membership m(kSelf, 1);
  int a = 0, b = 0, c = 0;
  uint64_t id_b = 0, id_c = 0;
  // `a` ends itself at its first call; `b`, called before `c`, ends `c` at
  // the second change (so `c` does not get that one).
  const uint64_t id_a = m.Subscribe([&](const MembershipChange&) {
    ++a;
    m.Unsubscribe(id_a);
  });
  id_b = m.Subscribe([&](const MembershipChange& ch) {
    ++b;
    if (ch.version == 2) m.Unsubscribe(id_c);
  });
  id_c = m.Subscribe([&](const MembershipChange&) { ++c; });
  m.AddName("/job:worker/replica:0/task:1");
  m.AddName("/job:worker/replica:0/task:2");
  m.AddName("/job:worker/replica:0/task:3");
  CHECK(a == 1);
  CHECK(b == 3);
  CHECK(c == 1);
  m.Unsubscribe(id_b);
  m.Unsubscribe(id_b);  // twice: nothing
  m.AddName("/job:worker/replica:0/task:4");
  CHECK(b == 3);
  CHECK(m.version() == 4);
}

TEST_CASE("membership: writers on many threads; every subscriber gets each change once, in version order") {
  Membership m(kSelf, 1);
  constexpr int kThreads = 6, kRounds = 300;
  // Listeners run one at a time (in version order): plain vectors suffice.
  std::vector<MembershipChange> first, second;
  m.Subscribe([&](const MembershipChange& c) { first.push_back(c); });
  m.Subscribe([&](const MembershipChange& c) { second.push_back(c); });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&m, t] {
      const std::string task = "/job:worker/replica:0/task:" + std::to_string(t + 1);
      // Each round: a restart (a new incarnation) and a failure of it.
      for (int r = 1; r <= kRounds; ++r) {
        (void)m.Update(TaskRecord::At(task, "127.0.0.1", static_cast<uint16_t>(1000 + t), r));
        m.MarkFailed(task, r, errors::Unavailable("round ", r));
      }
    });
  // Meanwhile a subscriber comes and goes; after Unsubscribe returns it is not running and never runs again.
  std::atomic<int> running{0}, calls{0};
  for (int i = 0; i < 50; ++i) {
    const uint64_t id = m.Subscribe([&](const MembershipChange&) {
      running.fetch_add(1);
      calls.fetch_add(1);
      running.fetch_sub(1);
    });
    m.Unsubscribe(id);
    CHECK(running.load() == 0);
  }
  for (auto& w : writers) w.join();
  const uint64_t total = uint64_t{kThreads} * kRounds * 2;
  CHECK(m.version() == total);
  REQUIRE(first.size() == total);
  REQUIRE(second.size() == total);
  std::map<std::string, std::pair<uint64_t, Kind>> last;  // per task: the incarnation and kind last seen
  uint64_t wrong_order = 0, wrong_sequence = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    const MembershipChange& c = first[i];
    wrong_order += c.version != i + 1 || second[i].version != c.version;
    // Per task, the changes in the order its writer made them.
    auto it = last.find(c.task.name);
    if (it == last.end()) {
      wrong_sequence += c.kind != Kind::kAdded || c.task.incarnation != 1;
    } else if (c.kind == Kind::kFailed) {
      wrong_sequence += it->second.second == Kind::kFailed || c.task.incarnation != it->second.first;
    } else {
      wrong_sequence += c.kind != Kind::kReplaced || it->second.second != Kind::kFailed ||
                        c.task.incarnation != it->second.first + 1;
    }
    last[c.task.name] = {c.task.incarnation, c.kind};
  }
  CHECK(wrong_order == 0);
  CHECK(wrong_sequence == 0);
  for (const auto& [task, state] : last) {
    CHECK(state.first == kRounds);
    CHECK(state.second == Kind::kFailed);
  }
}
