// StragglerDetector (client/train/straggler_detector.hpp): a task whose
// smoothed step time reaches the threshold times the median of the last
// step's members is reported, with its ratio, after its warm-up; one slow
// step is smoothed away; a task that left is neither judged nor counted in
// the median.
#include <catch2/catch.hpp>

#include "actorflow/client/train/straggler_detector.hpp"

using namespace actorflow;

TEST_CASE("stragglers: a worker at twice the others' time is reported with its ratio; the others are not") {
  StragglerDetector d({1.5, 21, 10});
  for (int i = 0; i < 9; ++i) d.Add({10, 10, 20});
  CHECK(d.Stragglers().empty());  // warming up
  d.Add({10, 10, 20});
  const auto s = d.Stragglers();
  REQUIRE(s.size() == 1);
  CHECK(s[0].task == 2);
  CHECK(s[0].ratio == Approx(2.0));
  CHECK(d.median_ms() == Approx(10.0));
  CHECK(d.Describe("worker") == "worker:2 at 2.0x the median (20.0 ms, median 10.0 ms)");
  // It speeds up: its smoothed time falls below 1.5x within a few steps, and it is no longer reported.
  int steps = 0;
  while (!d.Stragglers().empty() && steps < 100) {
    d.Add({10, 10, 10});
    ++steps;
  }
  CHECK(steps > 1);  // smoothed: not at the first fast step
  CHECK(steps <= 11);  // once most of its window is fast
  CHECK(d.Describe("worker").empty());
}

TEST_CASE("stragglers: one slow step is smoothed away; a lost worker is neither judged nor in the median") {
  StragglerDetector d({1.5, 21, 10});
  for (int i = 0; i < 20; ++i) d.Add({10, 12, 11});
  d.Add({10, 40, 11});  // hiccups, two in a row
  d.Add({10, 90, 11});
  CHECK(d.Stragglers().empty());
  // Worker 2 lost (0): the median is of workers 0 and 1; worker 2's last time is not judged.
  for (int i = 0; i < 5; ++i) d.Add({10, 12, 0});
  CHECK(d.median_ms() > 10.0);
  CHECK(d.median_ms() < 16.0);
  for (int i = 0; i < 30; ++i) d.Add({10, 30, 0});
  const auto s = d.Stragglers();
  REQUIRE(s.size() == 1);
  CHECK(s[0].task == 1);
  // Before any step, and a vector longer than the tasks seen so far.
  StragglerDetector empty;
  CHECK(empty.median_ms() == 0);
  CHECK(empty.Stragglers().empty());
  CHECK(empty.smoothed_ms(3) == 0);
}

TEST_CASE("stragglers: a ratio of tiny times is noise: a straggler is also min_excess_ms over the median") {
  // 2.4 ms beside 1.5 ms (1.6x): what a chaos run's log flapped on.
  StragglerDetector d({1.5, 21, 10});
  for (int i = 0; i < 30; ++i) d.Add({1.5f, 1.5f, 2.4f});
  CHECK(d.Stragglers().empty());
  CHECK(d.Describe("worker").empty());
  // Without the excess (0 ms), the same times are a straggler.
  StragglerOptions bare{1.5, 21, 10};
  bare.min_excess_ms = 0;
  StragglerDetector e(bare);
  for (int i = 0; i < 30; ++i) e.Add({1.5f, 1.5f, 2.4f});
  REQUIRE(e.Stragglers().size() == 1);
  CHECK(e.Stragglers()[0].task == 2);
  // 20 ms over 10 ms is one either way.
  for (int i = 0; i < 30; ++i) d.Add({10, 10, 20});
  CHECK(d.Stragglers().size() == 1);
}
