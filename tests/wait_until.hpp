// WaitUntil: how a test waits for what another thread or process does. It
// polls an observable state (a member count, a formed group, a received
// frame, a queue's size, a process's exit) until it holds or `bound` has
// passed, and says which; the caller asserts that on the test's main thread
// (REQUIRE(WaitUntil(...))), so a state that never comes fails the test in
// bounded time. Never a sleep that guesses how long something takes.
#pragma once

#include <chrono>
#include <thread>

namespace actorflow {
namespace test {

/// True as soon as `holds()` is; false when it still does not after `bound`
/// (checked once more at the end). `holds` runs on the calling thread.
template <class Pred>
bool WaitUntil(Pred&& holds, std::chrono::milliseconds bound,
               std::chrono::milliseconds poll = std::chrono::milliseconds(2)) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (!holds()) {
    if (std::chrono::steady_clock::now() >= until) return holds();
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace test
}  // namespace actorflow
