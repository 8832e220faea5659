// IoPoller: runs an Asio io_context on the calling thread with a bounded,
// adaptive spin before it sleeps (spin-then-park, as RDMA and kernel-bypass
// stacks, gRPC's pollers and Linux's busy-poll sockets do for latency).
//
// Why: a reply on loopback or a LAN arrives tens of microseconds after a
// request. A thread asleep in epoll_wait pays a wake-up (scheduler, a core to
// run on: ~5-15 us here) for each; the transport's 4-byte round trip was
// 2.3-2.7x a blocking socket pair's (issue 31).
//
// Contract:
//   - After every burst of handlers the thread polls for ready work (a
//     non-blocking epoll and the handler queue) for at most the current
//     budget; then it blocks in the kernel as io_context::run would. It
//     returns when the io_context stops or runs out of work (as run does); a
//     handler's exception propagates (as run's; calling it again goes on,
//     the budget starting afresh).
//   - The budget adapts (AdaptiveSpin): an idle gap that ended within the
//     window (found spinning, or parked and woken within it) sets it to the
//     window; a gap longer than the window halves it, down to 0 (parks at
//     once). So a message that arrives within the window after the thread's
//     last work, while its process is in a conversation, is read without a
//     wake-up; a process that hears from its peers rarely soon spins not at
//     all. A gap found spinning ends when the poll that found its work
//     began; a woken gap is measured after its first handler ran (an
//     estimate from above: long handlers make the budget shrink sooner).
//   - CPU: at most one window per idle gap, none while handlers run. A peer
//     that talks at intervals just under the window keeps the thread busy
//     (a window of 10 ms: a core, for such a peer).
//   - window 0: never spins: parks as soon as nothing is ready (as
//     io_context::run does), the wake-ups counted.
//   - sched_yield between polls: another runnable thread of this core runs
//     instead of the spin. A yield that gave the core away for longer than
//     `preempted` (200 us by default: another thread had work for it, not a
//     wake-up's brief turn) ends the spin after one more poll, and the thread
//     does not spin for kSpinCooldown (100 ms): a thread that yields stays
//     runnable and, on a loaded machine, waits behind whole time slices of
//     others when its message comes (measured here with a build running:
//     1.4 ms round trips without the cooldown), while a sleeper the
//     scheduler wakes does not. (A handler's exception, which returns from
//     here, forgets the cooldown with the budget.)
//   - Counters count idle gaps, not handlers: work that is ready before the
//     thread runs out of it (a burst; Asio's own readiness events included)
//     ends no gap.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "actorflow/core/environment.hpp"
#include "actorflow/core/status.hpp"

namespace boost::asio {
class io_context;
}

namespace actorflow {

/// The adaptive spin budget (pure: the rule above, for tests).
class AdaptiveSpin {
 public:
  explicit AdaptiveSpin(std::chrono::microseconds window) : window_(window), budget_(window) {}
  /// How long to spin at the next idle gap.
  std::chrono::microseconds budget() const { return budget_; }
  /// An idle gap of `gap` ended (work arrived).
  void OnGap(std::chrono::microseconds gap) {
    if (gap <= window_) budget_ = window_;
    else budget_ = budget_ / 2 < std::chrono::microseconds(2) ? std::chrono::microseconds(0) : budget_ / 2;
  }

 private:
  std::chrono::microseconds window_;
  std::chrono::microseconds budget_;
};

/// What the poller saw (for tests and benchmarks).
struct PollCounters {
  std::atomic<uint64_t> found_spinning{0};  // idle gaps ended by work found while spinning
  std::atomic<uint64_t> woken{0};           // idle gaps ended by a wake-up from the kernel
  std::atomic<uint64_t> gave_away{0};       // spins ended because a yield gave the core away (cooldowns)
};

/// Runs `io` on this thread, spin-then-park with `window` (see above).
void RunPolling(boost::asio::io_context& io, std::chrono::microseconds window, PollCounters* counters,
                std::chrono::microseconds preempted = std::chrono::microseconds(200));
/// How long a thread whose spin gave its core away parks at once.
inline constexpr std::chrono::milliseconds kSpinCooldown{100};

/// The environment variable that sets the transport's spin window, in microseconds.
inline constexpr const char* kTransportSpinVariable = "ACTORFLOW_TRANSPORT_SPIN_US";
/// The tensor transport's window unless told otherwise: a step's cycle. A
/// task serving steps hears its next request one step cycle after it
/// answered the last (the master takes the answer, wakes its caller, which
/// starts the next step): 60-70 us for a 4-byte step between two processes
/// on 2 cores. A window shorter than that (50 us until 2026-11-29) parked the
/// serving thread before every request, and a 2-process step took 79-99 us
/// against 52-61 us with 200 (bench_transport steps; issue 31).
inline constexpr std::chrono::microseconds kDefaultSpin{200};
/// The longest window accepted (10 ms).
inline constexpr int64_t kMaxSpinMicros = 10000;
/// `*window` from ACTORFLOW_TRANSPORT_SPIN_US when it is set (unchanged
/// otherwise); InvalidArgument naming the variable for anything but an
/// integer 0..10000. `env` null: the process's environment.
Status SpinWindowFromEnvironment(const EnvironmentReader& env, std::chrono::microseconds* window);

}  // namespace actorflow
