#include "actorflow/comm/io_poller.hpp"

#include <sched.h>

#include <boost/asio/io_context.hpp>
#include <algorithm>
#include <string>

namespace actorflow {

void RunPolling(boost::asio::io_context& io, std::chrono::microseconds window, PollCounters* counters,
                std::chrono::microseconds preempted) {
  using clock = std::chrono::steady_clock;
  AdaptiveSpin budget(window.count() > 0 ? window : std::chrono::microseconds(0));
  auto quiet_until = clock::time_point::min();  // no spin before then: the thread lost its core spinning
  for (;;) {
    // Everything ready now, then the idle gap begins.
    while (io.poll() > 0) {
    }
    if (io.stopped()) return;  // stopped, or out of work
    const auto idle = clock::now();
    const auto spin_until = idle + budget.budget();
    auto found_at = idle;  // when the poll that found work began (the gap ends there, not after its handlers)
    bool found = false;
    if (budget.budget().count() > 0 && idle >= quiet_until) {
      for (;;) {
        found_at = clock::now();
        if (found_at >= spin_until) break;
        if (io.poll() > 0) {
          found = true;
          break;
        }
        if (io.stopped()) return;
        sched_yield();
        const auto after = clock::now();
        if (after - found_at > preempted) {
          // The yield gave the core to another thread for a while: this
          // machine has none to spare. One more look, then park, and no
          // spin for a while (a thread that yields stays runnable and, on a
          // loaded machine, waits behind whole time slices of others; a
          // sleeper the scheduler wakes does not).
          quiet_until = after + kSpinCooldown;
          if (counters) counters->gave_away.fetch_add(1, std::memory_order_relaxed);
          found_at = after;
          found = io.poll() > 0;
          break;
        }
      }
    }
    if (found) {
      if (counters) counters->found_spinning.fetch_add(1, std::memory_order_relaxed);
    } else {
      if (io.stopped()) return;
      if (io.run_one() == 0) return;  // stopped, or out of work
      found_at = clock::now();  // after the handler: a gap at least this long
      if (counters) counters->woken.fetch_add(1, std::memory_order_relaxed);
    }
    budget.OnGap(std::chrono::duration_cast<std::chrono::microseconds>(found_at - idle));
  }
}

Status SpinWindowFromEnvironment(const EnvironmentReader& env, std::chrono::microseconds* window) {
  const char* v = ReadVariable(env, kTransportSpinVariable);
  if (v == nullptr || *v == '\0') return Status::OK();
  const std::string text(v);
  // Digits only (no sign, space or unit), at most five of them: 0..99999, then the range.
  const bool digits = text.size() <= 5 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long us = digits ? std::stol(text) : -1;
  if (us < 0 || us > kMaxSpinMicros)
    return errors::InvalidArgument(kTransportSpinVariable, "=\"", text, "\": expected microseconds, 0 to ",
                                   kMaxSpinMicros, " (0: never spin)");
  *window = std::chrono::microseconds(us);
  return Status::OK();
}

}  // namespace actorflow
