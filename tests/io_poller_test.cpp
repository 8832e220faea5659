// The io thread's spin-then-park (comm/io_poller.hpp): the adaptive budget's
// rule; RunPolling runs every handler, finds work that comes within its
// window while spinning and parks after quiet gaps, and returns when its
// io_context stops or runs out of work, from either phase; a spin that lost
// its core ends, and the thread parks for a while; the spin window's variable is checked; and the
// tensor transport's io thread catches a conversation's next message
// spinning (with the spin off, never).
#include <catch2/catch.hpp>

#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <string>
#include <thread>

#include "actorflow/comm/io_poller.hpp"
#include "skip.hpp"
#include "transport_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using namespace actorflow::test;
using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST_CASE("io poller: the budget is the window after a short gap, halves after each long one, down to 0") {
  AdaptiveSpin b(microseconds(50));
  CHECK(b.budget() == microseconds(50));
  b.OnGap(microseconds(10));
  CHECK(b.budget() == microseconds(50));
  b.OnGap(microseconds(51));
  CHECK(b.budget() == microseconds(25));
  b.OnGap(milliseconds(100));
  CHECK(b.budget() == microseconds(12));
  for (int i = 0; i < 4; ++i) b.OnGap(milliseconds(100));
  CHECK(b.budget() == microseconds(0));  // a quiet process parks at once
  b.OnGap(microseconds(50));             // a conversation again: spin for the next reply
  CHECK(b.budget() == microseconds(50));
  AdaptiveSpin off(microseconds(0));
  off.OnGap(microseconds(0));
  CHECK(off.budget() == microseconds(0));
}

namespace {

// An io_context run by RunPolling on its own thread until it stops or runs out of work.
struct Polled {
  boost::asio::io_context io;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work =
      std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(io.get_executor());
  PollCounters counters;
  std::future<void> done;
  // `preempted` very long: a loaded machine (sanitizers, ctest -j) never
  // ends these spins early; the preemption rule has its own case.
  explicit Polled(microseconds window, microseconds preempted = std::chrono::seconds(10)) {
    done = std::async(std::launch::async,
                      [this, window, preempted] { RunPolling(io, window, &counters, preempted); });
  }
  ~Polled() {
    io.stop();
    if (done.valid()) done.wait();
  }
  // Posts `n` handlers, each after the previous one ran (a conversation):
  // with `gap`, that long after it.
  void Converse(int n, milliseconds gap = milliseconds(0)) {
    std::atomic<int> ran{0};
    for (int i = 0; i < n; ++i) {
      boost::asio::post(io, [&ran] { ran.fetch_add(1); });
      REQUIRE(WaitUntil([&] { return ran.load() == i + 1; }, std::chrono::seconds(10), milliseconds(0)));
      if (gap.count() > 0) std::this_thread::sleep_for(gap);  // a quiet period, not an ordering
    }
  }
};

}  // namespace

namespace {
// How a conversation's gaps ended, as PollCounters counted them.
struct Counts {
  uint64_t found_spinning, woken, gave_away;
};
// Runs `converse` (one conversation on a fresh Polled) up to three times
// until `holds` accepts its counts, and returns the last counts: a machine
// that stalls this test's threads for milliseconds (ctest -j beside
// sanitized builds) can turn a few gaps into longer ones, or run a handler
// before the poller's idle gap begins; a broken poller fails every time.
template <class Converse, class Holds>
Counts UpToThreeTimes(Converse converse, Holds holds) {
  Counts c{};
  for (int attempt = 0; attempt < 3; ++attempt) {
    c = converse();
    UNSCOPED_INFO("attempt " << attempt << ": " << c.found_spinning << " found spinning, " << c.woken << " woken, "
                             << c.gave_away << " gave the core away");
    if (holds(c)) break;
  }
  return c;
}
Counts Conversation(microseconds window, microseconds preempted, int n, milliseconds gap) {
  Polled p{window, preempted};
  p.Converse(n, gap);
  return Counts{p.counters.found_spinning.load(), p.counters.woken.load(), p.counters.gave_away.load()};
}
constexpr microseconds kNeverPreempted = std::chrono::seconds(10);
}  // namespace

TEST_CASE("io poller: work that comes within the window is found spinning; quiet gaps park the thread") {
  SECTION("a conversation: the next message within a generous window") {
    // Each next handler is posted 1 ms after the last one ran: inside the
    // 10 ms window, unless this machine stalls the test for that long.
    auto holds = [](const Counts& c) { return c.found_spinning >= 80 && c.woken <= 20; };
    const Counts c =
        UpToThreeTimes([] { return Conversation(microseconds(kMaxSpinMicros), kNeverPreempted, 100, milliseconds(1)); },
                       holds);
    CHECK(c.found_spinning >= 80);
    CHECK(c.woken <= 20);
  }
  SECTION("the same conversation without a spin: a wake-up from the kernel for each") {
    const Counts c = UpToThreeTimes(
        [] { return Conversation(microseconds(0), kNeverPreempted, 100, milliseconds(1)); },
        [](const Counts& c) { return c.found_spinning == 0 && c.woken >= 90; });
    CHECK(c.found_spinning == 0);
    CHECK(c.woken >= 90);
  }
  SECTION("a spin that lost its core ends, and the thread parks for a while") {
    // A window of 10 ms and any iteration deemed preempted: the first spin
    // ends after one more poll, and for kSpinCooldown (100 ms) the thread
    // parks at once: each next handler, 3 ms later, wakes it (without the
    // rule each would be found spinning). One spin gave its core away, then
    // none for 100 ms: about 60 ms of conversation here (without the pause,
    // every gap's spin would: ~20).
    const Counts c = UpToThreeTimes(
        [] { return Conversation(microseconds(kMaxSpinMicros), microseconds(0), 20, milliseconds(3)); },
        [](const Counts& c) { return c.woken >= 18 && c.gave_away >= 1 && c.gave_away <= 3; });
    CHECK(c.woken >= 18);
    CHECK(c.gave_away >= 1);
    CHECK(c.gave_away <= 3);
  }
  SECTION("quiet gaps longer than the window: parked and woken by the kernel") {
    const Counts c = UpToThreeTimes(
        [] { return Conversation(microseconds(200), kNeverPreempted, 20, milliseconds(3)); },
        [](const Counts& c) { return c.woken >= 18; });
    CHECK(c.woken >= 18);
  }
}

TEST_CASE("io poller: returns when its io_context stops or runs out of work, spinning or parked") {
  for (microseconds window : {microseconds(0), microseconds(kMaxSpinMicros)}) {
    {  // stopped while spinning or parked
      Polled p(window);
      p.Converse(3);
      p.io.stop();
      REQUIRE(p.done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    }
    {  // out of work: the guard gone, nothing pending
      Polled p(window);
      p.Converse(3);
      p.work.reset();
      REQUIRE(p.done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
      CHECK(p.io.stopped());
    }
  }
}

TEST_CASE("io poller: ACTORFLOW_TRANSPORT_SPIN_US is microseconds 0..10000; anything else names the variable") {
  auto env = [](std::map<std::string, std::string> vars) {
    return EnvironmentReader([vars = std::move(vars)](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  microseconds w(50);
  REQUIRE(SpinWindowFromEnvironment(env({}), &w).ok());
  CHECK(w == microseconds(50));  // unset: unchanged
  REQUIRE(SpinWindowFromEnvironment(env({{kTransportSpinVariable, "0"}}), &w).ok());
  CHECK(w == microseconds(0));
  REQUIRE(SpinWindowFromEnvironment(env({{kTransportSpinVariable, "10000"}}), &w).ok());
  CHECK(w == microseconds(10000));
  for (const char* bad : {"-1", "10001", "50us", "x", " 5", "99999999999999999999999"}) {
    Status s = SpinWindowFromEnvironment(env({{kTransportSpinVariable, bad}}), &w);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(s.message().find(kTransportSpinVariable) != std::string::npos);
    CHECK(w == microseconds(10000));  // unchanged
  }
}

namespace {

// 100 messages from A to B, each 1 ms after the last arrived (a quiet period
// inside the window, not an ordering); how B's io thread found them.
struct Found {
  uint64_t hits = 0, woken = 0, cooldowns = 0;
};
Found Converse(microseconds spin) {
  const Tensor t = Tensor::Scalar<float>(1.f);
  Pair p(size_t{4} << 20, false, {}, spin);  // set here: ACTORFLOW_TRANSPORT_SPIN_US does not apply
  for (int i = 0; i < 100; ++i) {
    REQUIRE(SendTensor(*p.a, kB, 1, Key("m" + std::to_string(i)), t, false).ok());
    REQUIRE(p.in_b.Next().status.ok());
    std::this_thread::sleep_for(milliseconds(1));
  }
  return Found{p.b->spin_hits(), p.b->parked_wakeups(), p.b->spin_cooldowns()};
}

}  // namespace

TEST_CASE("io poller: without a spin, the transport's io thread sleeps in the kernel for each message") {
  // Up to three conversations (a stalled machine can run a message before
  // the io thread's idle gap begins: neither found nor woken).
  Found f;
  for (int attempt = 0; attempt < 3; ++attempt) {
    f = Converse(microseconds(0));
    UNSCOPED_INFO("attempt " << attempt << ": " << f.hits << " found spinning, " << f.woken << " woken");
    if (f.hits == 0 && f.woken >= 80 && f.cooldowns == 0) break;
  }
  CHECK(f.hits == 0);
  CHECK(f.woken >= 80);
  CHECK(f.cooldowns == 0);
}

TEST_CASE("io poller: with a core to spare, the transport's io thread catches a conversation's next message spinning",
          "[may_skip][spare_core]") {
  // On a loaded machine a spin gives its core away and pauses spinning for
  // 100 ms (kSpinCooldown), as it should: then this cannot be checked. One
  // of three conversations without a cooldown shows it.
  bool had_core = false;
  for (int attempt = 0; attempt < 3 && !had_core; ++attempt) {
    const Found f = Converse(microseconds(kMaxSpinMicros));
    UNSCOPED_INFO("attempt " << attempt << ": " << f.hits << " found spinning, " << f.woken << " woken, "
                             << f.cooldowns << " cooldowns");
    if (f.cooldowns > 0) continue;
    had_core = true;
    CHECK(f.hits >= 80);
    CHECK(f.woken <= 20);
  }
  if (!had_core) AF_SKIP("no core to spare for the spin in 3 tries (this machine is loaded)");
}

TEST_CASE("io poller: a spin window out of range is refused when the transport starts") {
  Membership m(kA, 1);
  TransportOptions o;
  o.task = kA;
  o.incarnation = 1;
  o.membership = &m;
  o.spin = microseconds(kMaxSpinMicros + 1);
  std::unique_ptr<TensorTransport> t2;
  Status s = TensorTransport::Start(o, TransportCallbacks(), &t2);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("spin") != std::string::npos);
}
