// Injected network faults for tests (test-only): a decorator on the tensor
// transport's send path (comm/tensor_transport.hpp) that delays the messages
// to a peer, drops them, or cuts the connection, as a slow, lossy or broken
// link would: what `tc netem` would do, which this kernel lacks. Off unless a
// test asks for it; off, the transport pays one null-pointer test per Send.
//
// A test asks with TransportOptions::test_faults (in-process endpoints) or,
// for a whole process (a server, a launched program), with the environment:
//
//   ACTORFLOW_TEST_TRANSPORT_FAULTS="delay_ms=20,jitter_ms=5,drop=0.01,cut=0.001,seed=1"
//
// read by every TensorTransport::Start (a malformed value fails Start with
// InvalidArgument naming the variable). FOR TESTS ONLY: never set in
// production; every process that takes it says so on stderr once.
//
// Every message the transport sends (tensors and control messages, every
// channel) meets, in the order of its Sends to that peer:
//   delay_ms, jitter_ms  held delay_ms + uniform(-jitter_ms, +jitter_ms) ms
//                        (at least 0) before it is queued; never reordered: a
//                        message is not released before the one sent to the
//                        same peer before it (a link delays, TCP keeps order);
//   drop=P               with probability P lost without a word: its receiver
//                        never sees it, its sender is not told (a bounded
//                        wait on the receiving side must catch it);
//   cut=P                with probability P the connection to the peer is cut
//                        when it is released: the connection fails as on a
//                        reset (its queued messages and this one are rejected
//                        Unavailable, the peer reported failed; the receiver
//                        sees it closed); the next message opens a new one.
//                        With no connection open, the message is rejected as
//                        if the connect had been refused (its receiver never
//                        hears of it);
//   seed=N               the draws' seed (each transport mixes in its task's
//                        name, so peers do not draw alike).
// The decisions are this process's: CAF's own traffic (heartbeats, actor
// messages) is not touched.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "actorflow/core/status.hpp"

namespace boost {
namespace asio {
class io_context;
}  // namespace asio
}  // namespace boost

namespace actorflow {

/// The name of the environment variable tests set for whole processes.
constexpr char kTransportFaultsVariable[] = "ACTORFLOW_TEST_TRANSPORT_FAULTS";

struct TransportFaults {
  double delay_ms = 0;
  double jitter_ms = 0;
  double drop = 0;  // probability a message is lost
  double cut = 0;   // probability the connection is cut at a message
  uint64_t seed = 1;

  /// Whether any fault is asked for.
  bool enabled() const { return delay_ms > 0 || jitter_ms > 0 || drop > 0 || cut > 0; }
  /// "delay_ms=20,jitter_ms=5,drop=0.01,cut=0,seed=1" (keys in any order,
  /// each optional; empty: none). InvalidArgument naming the item and the rule
  /// (a number; delays >= 0, jitter <= delay; probabilities in [0, 1]).
  static Status Parse(const std::string& spec, TransportFaults* out);
  std::string ToString() const;
};

/// The faults ACTORFLOW_TEST_TRANSPORT_FAULTS asks for (none when unset or
/// empty); InvalidArgument naming the variable when it is malformed.
Status TransportFaultsFromEnvironment(TransportFaults* out);

/// The decorator. Send runs on any thread; the released messages' actions
/// run on `io`'s thread (the transport's), in order per peer.
class FaultInjector {
 public:
  /// `salt` (the transport's task) is mixed into the seed.
  FaultInjector(const TransportFaults& faults, const std::string& salt, boost::asio::io_context& io);
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  /// A message to `task`: after its delay, `deliver` (queue it as usual), or
  /// `cut` (fail the connection, reject the message), or nothing (dropped).
  void Send(const std::string& task, std::function<void()> deliver, std::function<void()> cut);
  /// Drops everything held and runs nothing more (the transport stops); on io's thread.
  void Stop();

  const TransportFaults& faults() const { return faults_; }
  /// Whether no message is held (every one released or dropped).
  bool idle() const;
  uint64_t dropped() const;
  uint64_t cut() const;

 private:
  struct Held {
    std::chrono::steady_clock::time_point release;
    std::function<void()> action;  // deliver or cut
  };
  struct Link;  // one peer's messages in line, and its timer
  void Arm(const std::string& task);
  void Release(const std::string& task);

  const TransportFaults faults_;
  boost::asio::io_context& io_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::map<std::string, std::unique_ptr<Link>> links_;
  uint64_t dropped_ = 0, cut_ = 0;
  bool stopped_ = false;
};

}  // namespace actorflow
