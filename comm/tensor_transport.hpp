// TensorTransport: the data path for tensor bytes between processes (never
// CAF's remote protocol, whose one multiplexer thread, extra copies and
// missing flow control halve the bandwidth; docs/distributed-design.md
// section 4).
//
// One Boost.Asio thread per process. A process opens one TCP connection to
// each peer task it sends to (TCP_NODELAY), introduces itself with a hello
// frame (task name, incarnation), then writes frames (comm/frame_codec.hpp
// encodes and checks them):
//
//   header  u32 magic "AFT2" | u8 kind | u8 flags | u16 zero | u32 stream | u32 body_len   (16 bytes, LE)
//   kind 1  hello: u64 incarnation | u32 task_len | task [| u32 pid | u64 address | 16 bytes cookie]
//   kind 2  begin: u8 channel | i32 dtype | u32 ndims | u64 payload_len | u32 meta_len | meta | i64 dims[ndims]
//   kind 3  data:  body_len bytes of the stream's payload, at the next offset
//   kind 4  lend:  u64 address: the whole payload lies there in the sender's memory (same host)
//   flags   (begin only) 1 = dead tensor (control flow), 2 = float32 sent as its upper 16 bits
// and the receiver answers on the same connection (empty bodies):
//   kind 5  same host: "I can read your memory" (the hello's proof checked out)
//   kind 7  not the same host: the answer when it did not (every byte then goes over TCP)
//   kind 6  return: the receiver has read lent stream `stream`; the sender lets its tensor go
//
// Neutral verbs: a message goes on a channel (Channel) to a task, with its
// client's meta bytes (opaque here: the rendezvous client puts a step id and
// a rendezvous key there, net/rendezvous_key.hpp; the collective executor a
// binary header, comm/collective_message.hpp) and a tensor, or none (dtype
// DT_INVALID: a control message). The receiver hands it to that channel's
// handler; a channel without one takes nothing (a message for it is a bad
// frame). Every path below (chunks, lending) serves every channel alike.
//
// A tensor is one stream: a begin frame, then its payload in chunks (4 MiB by
// default). The writer takes queued tensors in turn, one chunk each, so a
// small tensor waits at most one chunk behind a huge one. A numeric payload
// is written straight from the tensor's buffer (the frame holds a reference
// until written) and read straight into the new tensor; strings travel as
// u64 length + bytes per element.
//
// Same host (plaintext only): a hello may carry the sender's process proof
// (comm/same_host.hpp); the receiver answers whether it can read the proof's
// bytes from the sender's memory (tensors that could be lent wait for that
// answer; smaller ones do not). When it can, the sender lends numeric
// tensors of 256 KiB and more instead of writing them: a lend frame gives
// the payload's address, the receiver copies it straight into the new tensor
// (one copy, in 4 MiB pieces between its other work, so a small tensor still
// never waits behind a huge one) and returns the stream, and only then does
// the sender drop its reference. Truncated float32 tensors are lent whole and
// truncated on receipt (the same values as on the wire). A peer on another
// host, or one whose memory cannot be read, gets every byte over TCP.
//
// The receiver validates every frame before allocating: magic, kind, a hello
// first, body and meta lengths under caps, a known channel, a supported
// dtype, dims that make a shape, dims x element size = payload length,
// payload under the cap, chunks that fit their stream, and the meta as the
// channel's handler checks it. A bad frame closes the connection with
// DataLoss and reports the peer failed; a message whose sender is not the
// incarnation this process knows for that task (a restarted task) is
// discarded and rejected to its channel with Aborted ("task restarted"); a
// tensor that does not fit in memory is rejected with ResourceExhausted.
// Nothing crashes, nothing allocates what the peer merely claims.
//
// Peers (comm/membership.hpp): the transport keeps no table of its own. It
// reads a task's address and incarnation from the process's membership when
// it connects, and a sender's incarnation when a tensor arrives. It writes
// one thing there: a connection to a task's current incarnation that failed
// (MarkFailed, besides peer_failed), never one of an older incarnation. It
// subscribes: a task replaced (another incarnation or address) or removed
// loses its connection at once (the tensors still queued for it are rejected:
// Aborted "moved or restarted", Unavailable "left the cluster"); a task
// failed changes nothing here (its connection, if it was this transport's,
// is gone already).
//
// With TlsOptions, every connection is TLS 1.3 with certificates on both
// sides, verified against the cluster CA (comm/tls.hpp); a plaintext peer or
// one the CA did not sign fails the handshake and is refused.
//
// The io thread spins for a bounded, adaptive window after its work before it
// sleeps (comm/io_poller.hpp): in a conversation, a message that comes within
// the window after the thread's last work is read without a wake-up; a
// process its peers are quiet with soon spins not at all.
//
// For tests, a decorator on the send path injects delays, losses and cut
// connections (comm/fault_injection.hpp); off, its cost is one pointer test.
//
// Callbacks run on the transport's thread and must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/comm/fault_injection.hpp"
#include "actorflow/comm/tls.hpp"

namespace actorflow {

class Membership;

struct TransportOptions {
  std::string task;  // this process's task ("/job:worker/replica:0/task:0")
  uint64_t incarnation = 0;
  /// The process's membership (required; its self() is `task` at
  /// `incarnation`): where peers are, which incarnation each must be. It
  /// outlives the transport.
  Membership* membership = nullptr;
  std::string bind_host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  size_t chunk_bytes = size_t{4} << 20;
  uint64_t max_payload_bytes = uint64_t{16} << 30;  // one tensor
  uint64_t max_inflight_bytes = uint64_t{32} << 30;  // tensors begun and not complete, per connection
  /// Offer and accept the same-host path (cross-memory reads) on plaintext
  /// connections; off, every byte goes over TCP.
  bool same_host = true;
  /// Mutual TLS 1.3 on every connection (both ends present certificates the
  /// cluster CA signed), when set; the files are checked at Start.
  TlsOptions tls;
  /// How long the io thread polls for more work after its last before it
  /// sleeps (the adaptive spin of comm/io_poller.hpp), 0 to 10 ms; 0: never.
  /// Unset: ACTORFLOW_TRANSPORT_SPIN_US if set (Start checks it), else kDefaultSpin (200 us).
  std::optional<std::chrono::microseconds> spin;
  /// TEST-ONLY: delays, drops and cuts injected into the send path
  /// (comm/fault_injection.hpp). None here: those ACTORFLOW_TEST_TRANSPORT_FAULTS
  /// asks for, if set (malformed: Start fails with InvalidArgument).
  TransportFaults test_faults;
};

/// The clients of the transport, one channel each.
enum class Channel : uint8_t { kRendezvous = 1, kCollective = 2, kControl = 3 };

/// How a tensor travels: `is_dead` (control flow) is delivered with it;
/// `truncate16`: a float32 tensor travels as its upper 16 bits; `queued`:
/// written by the transport's thread, never from the caller's (a one-way
/// notice whose sender should not pay the write: on loopback a write runs
/// the receiver's side and its wake-up in the writer's system call, ~15 us
/// measured on 2 cores).
struct SendFlags {
  bool is_dead = false;
  bool truncate16 = false;
  bool queued = false;
};

/// What one channel's client does with its messages (each optional).
struct ChannelHandler {
  /// Checks a message's meta when it begins, before anything is allocated
  /// for it: not OK (why) is a bad frame: the connection closes with DataLoss.
  std::function<Status(const std::string& from_task, const std::string& meta)> check;
  /// A message arrived whole; `value` is uninitialized for a message without a tensor.
  std::function<void(const std::string& from_task, std::string meta, Tensor value, bool is_dead)> deliver;
  /// A message to or from `task` could not be taken (its sender restarted, no
  /// memory, its connection failed before it was whole or written).
  std::function<void(const std::string& task, const std::string& meta, Status status)> reject;
};

struct TransportCallbacks {
  ChannelHandler handlers[4];  // by Channel; [0] unused
  ChannelHandler& handler(Channel c) { return handlers[static_cast<uint8_t>(c)]; }
  /// A connection with `task` failed (a dead peer, a bad frame); its queued messages are dropped.
  /// Only for the task's current incarnation, which the membership then marks failed too.
  std::function<void(const std::string& task, Status status)> peer_failed;
};

class TensorTransport {
 public:
  /// Binds and starts the thread; InvalidArgument/Unavailable naming the address when it cannot bind,
  /// InvalidArgument without a membership (or one of another task).
  static Status Start(TransportOptions options, TransportCallbacks callbacks, std::unique_ptr<TensorTransport>* out);
  /// Stops the thread and closes every connection; later Sends are dropped. Idempotent.
  void Stop();
  /// Waits, at most `bound`, until every tensor queued has been written and
  /// every lent one returned (a process about to end lets its peers finish
  /// reading what it sent). True when all is out.
  bool Drain(std::chrono::milliseconds bound);
  ~TensorTransport();
  TensorTransport(const TensorTransport&) = delete;
  TensorTransport& operator=(const TensorTransport&) = delete;

  const std::string& host() const;
  uint16_t port() const;
  const std::string& task() const;
  uint64_t incarnation() const;

  /// Queues a message with a tensor for `channel` of `task` (never blocks;
  /// the bytes are written from the tensor's buffer later). An uninitialized
  /// `value` sends none. NotFound when the membership knows no address for
  /// the task (or it is this process's); InvalidArgument for meta over
  /// frame::kMaxMetaBytes, more than 64 dims or a payload over the cap.
  Status Send(const std::string& task, Channel channel, std::string meta, const Tensor& value, SendFlags flags = {});
  /// Queues a message without a tensor (a control message).
  Status SendMessage(const std::string& task, Channel channel, std::string meta);
  /// Fails every connection with `task` (to it and from it) with `why`, as a
  /// reset would: its queued messages are rejected, the peer sees its
  /// connections closed (and reports this task failed), peer_failed runs
  /// here for its current incarnation. For a client that cannot keep a
  /// promise to the peer (an answer that cannot go). Asynchronous; nothing
  /// when stopped.
  void FailPeer(const std::string& task, const Status& why);

  /// Idle gaps of the io thread that ended with work found while it spun,
  /// and those that ended with a wake-up from the kernel (for tests and
  /// benchmarks: whether the spin catches the replies).
  uint64_t spin_hits() const;
  uint64_t parked_wakeups() const;
  /// Spins that ended because the core was wanted elsewhere (each then a
  /// pause in spinning: a loaded machine).
  uint64_t spin_cooldowns() const;
  /// Connections closed because of a bad frame (for tests).
  uint64_t data_loss_count() const;
  /// Connections refused or failed in the TLS handshake (for tests).
  uint64_t tls_refused_count() const;
  /// Tensors this endpoint received by reading the sender's memory (for tests
  /// and benchmarks: which path ran).
  uint64_t same_host_count() const;
  /// Tensors this endpoint lent: read from its memory by their receiver, who
  /// returned them (the sender's side of same_host_count).
  uint64_t lent_count() const;
  /// Tensors this endpoint received whole, by either path (delivered).
  uint64_t received_count() const;
  /// Connections to peers that failed (the peer closed or reset one, or
  /// answered badly) or were dropped because the membership replaced or
  /// removed their task, each counted after its peer_failed report, if it
  /// makes one, has run: a test that sees the count sees the report (for tests).
  uint64_t failed_connection_count() const;

  struct Impl;

 private:
  explicit TensorTransport(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared with the handlers in flight
};


}  // namespace actorflow
