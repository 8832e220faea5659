// The tensor transport's state (comm/tensor_transport.hpp), shared by its two
// halves: tensor_transport.cpp (the outgoing side, starting and stopping, the
// API) and tensor_transport_receive.cpp (the incoming side: frames, checks,
// reads from the socket and from a same-host sender's memory). Internal to
// comm/; the wire format is described in the public header, its codec is
// comm/frame_codec.hpp.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/comm/fault_injection.hpp"
#include "actorflow/comm/frame_codec.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/same_host.hpp"
#include "actorflow/comm/io_poller.hpp"
#include "actorflow/comm/tensor_transport.hpp"

namespace actorflow {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace transport_internal {

using frame::kHeaderBytes;
using frame::kFlagDead;
using frame::kFlagTruncate16;
constexpr uint64_t kLendMinBytes = 256 << 10;   // same host: tensors lent rather than written
constexpr auto kHelloTimeout = std::chrono::seconds(10);  // a connection that never introduces itself is closed
constexpr uint64_t kBegunBudget = uint64_t{1} << 30;  // sender: bytes of tensors begun and not finished
// A float32 stream sent as 16 bits goes in chunks of this many wire bytes
// (twice as many float32 bytes): each is encoded and then written while it is
// still in the cache. Measured here, 64 MiB effective: 6.4-6.7 GB/s with
// 512 KiB on the wire, 5.2-5.3 with 256 KiB, 4.5 with 4 MiB.
constexpr uint64_t kTruncatedChunk = 512 << 10;
constexpr size_t kMaxGather = 64;  // streams' chunks in one gather write (IOV_MAX is 1024)
constexpr uint64_t kDirectMaxBytes = 64 << 10;  // payloads Send may write from the caller's thread
constexpr size_t kBulkBytes = 256 << 10;  // plaintext chunks at least this long are read by ReadBulk
constexpr size_t kBulkWake = 256 << 10;   // ... which wakes when this much (or the rest) has arrived
constexpr size_t kReadBuffer = 128 << 10;  // per plaintext connection: frames up to the longest begin body

// A frame's header alone (a data frame's, an answer's).
inline std::string Header(uint8_t kind, uint8_t flags, uint32_t stream, uint32_t body_len) {
  std::string h;
  frame::AppendHeader(&h, frame::Header{kind, flags, stream, body_len});
  return h;
}

// One message on its way out.
struct OutStream {
  uint32_t id = 0;
  Channel channel = Channel::kControl;
  std::string meta;   // for its channel's reject
  std::string begin;  // header + begin body
  Tensor tensor;      // keeps the payload alive while it is written
  std::shared_ptr<std::string> encoded;  // the payload, when not the tensor's own bytes
  const char* payload = nullptr;
  uint64_t payload_len = 0;
  uint64_t offset = 0;
  bool begun = false;
  bool truncate16 = false;  // payload: the upper halves of `tensor`'s float32s, made chunk by chunk
};

// The upper 16 bits of each float32 (TensorFlow's truncation), and back.
inline void Truncate16(const uint32_t* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint16_t>(in[i] >> 16);
}
inline void Expand16(const uint16_t* in, size_t n, uint32_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint32_t>(in[i]) << 16;
}

}  // namespace transport_internal

using namespace transport_internal;  // internal to the two halves

struct TensorTransport::Impl : std::enable_shared_from_this<TensorTransport::Impl> {
  TransportOptions options;
  TransportCallbacks callbacks;
  asio::io_context io;
  std::unique_ptr<FaultInjector> faults;  // test-only (comm/fault_injection.hpp); null: off. After io (its timers)
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{io};
  std::thread thread;
  uint16_t port = 0;
  std::atomic<uint64_t> data_loss{0};
  std::atomic<uint64_t> tls_refused{0};
  std::atomic<uint64_t> same_host_reads{0};
  std::atomic<uint64_t> out_failures{0};  // connections to peers that failed (for tests)
  std::atomic<uint64_t> lent_returned{0};     // tensors of this process a receiver read and returned
  std::atomic<uint64_t> tensors_received{0};  // tensors delivered whole, by either path
  std::unique_ptr<asio::ssl::context> ssl;  // mutual TLS 1.3 (comm/tls.hpp), when configured
  std::atomic<bool> stopped{false};
  PollCounters poll;  // the io thread's spin (comm/io_poller.hpp)

  // Where a connection goes: the membership's record of its task when it was made.
  struct Peer {
    std::string host;
    uint16_t port = 0;
    uint64_t incarnation = 0;
  };
  mutable std::mutex mu;  // guards `direct`
  uint64_t subscription = 0;  // to options.membership's changes (Start to Stop)

  // --- the membership ------------------------------------------------------
  // Whether `incarnation` is the one the membership knows for `task` (a peer, not this process).
  bool Current(const std::string& task, uint64_t incarnation) const {
    return task != options.task && options.membership->CheckIncarnation(task, incarnation).ok();
  }
  // Whether `peer` is where the membership has `task` now.
  bool Addresses(const std::string& task, const Peer& peer) const {
    auto r = options.membership->Find(task);
    return r && r->host == peer.host && r->port == peer.port && r->incarnation == peer.incarnation;
  }
  // A connection with `task` (of `incarnation`) failed: reported, with
  // peer_failed and to the membership, when that is the task's current
  // incarnation (not a stale one, not a stranger).
  void ReportFailed(const std::string& task, uint64_t incarnation, const Status& s);
  // A membership change (on the writer's thread): a task replaced or removed loses its connection.
  void OnMembershipChange(const MembershipChange& change);
  // The io thread's half: `task`'s connection, unless the membership has it there again, closes.
  void DropOut(const std::string& task, const Status& why);

  // --- outgoing: the io thread, and Send's direct writes ---------------------
  //
  // A small tensor sent on an idle plaintext connection is written by the
  // caller itself (one non-blocking sendmsg, no hand-over to the io thread:
  // it halves the hop's latency on few cores). `wmu` serialises those writes
  // with the io thread's: the fields marked (w) change only under it, so the
  // io thread reads them freely and Send reads them under it.
  struct Out : std::enable_shared_from_this<Out> {
    explicit Out(asio::io_context& io) : socket(io) {}
    std::string task;
    Peer peer;
    tcp::socket socket;  // (w) closed only under wmu: a direct write never meets a reused descriptor
    std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
    std::mutex wmu;
    bool connected = false, writing = false, dead = false;  // (w)
    std::deque<std::shared_ptr<OutStream>> queue;            // (w)
    std::string pending;          // (w) what a direct write left unsent: written before anything else
    bool writing_pending = false;  // the write in progress is `pending`
    bool hello_sent = false;
    std::string hello;
    char probe = 0;
    uint32_t next_stream = 1;  // (w)
    uint64_t begun_bytes = 0;  // of streams begun and not finished
    std::vector<asio::const_buffer> buffers;
    std::deque<std::string> chunk_headers;  // of the write in progress (a deque: buffers point into it)
    std::vector<std::shared_ptr<OutStream>> in_write;  // the streams the write in progress carries
    std::vector<uint16_t> encoded;  // the chunk being written of a truncated stream (one write at a time)
    // Same host (io thread only): the receiver reads lent tensors from this
    // process's memory; each stays here, alive, until it is returned.
    bool offered = false;   // the hello carried this process's proof
    bool answered = false;  // the receiver said whether it can read this process's memory
    bool same_host = false;  // ... and it can
    std::unordered_map<uint32_t, std::shared_ptr<OutStream>> lent;
    uint64_t lent_bytes = 0;
    char control[kHeaderBytes];  // the receiver's frame being read
  };
  std::unordered_map<std::string, std::shared_ptr<Out>> outs;
  // Plaintext connections past their hello, for Send's direct writes (under
  // mu): only to where the membership has the task now (a change that
  // supersedes it takes it out at once, under mu too).
  std::unordered_map<std::string, std::shared_ptr<Out>> direct;
  // Streams handed to the io thread and not yet in their connection's queue,
  // per task (under mu): while any are, Send writes none directly, so a
  // message never overtakes one sent before it from the same thread.
  std::unordered_map<std::string, int64_t> posted;
  void SetDirect(const std::shared_ptr<Out>& out, bool on) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = direct.find(out->task);
    if (on) {
      if (Addresses(out->task, out->peer)) direct[out->task] = out;
    } else if (it != direct.end() && it->second == out) {
      direct.erase(it);
    }
  }

  // --- incoming: io thread only -------------------------------------------
  struct InStream {
    Channel channel = Channel::kControl;
    std::string meta;
    DataType dtype = DT_INVALID;
    TensorShape shape;
    uint8_t flags = 0;
    uint64_t payload_len = 0, received = 0;
    Tensor tensor;        // numeric, read into directly
    std::string staging;  // a string tensor's payload, decoded once whole
    bool discard = false;  // read and thrown away (rejected)
    uint64_t extra = 0;    // bytes beyond the payload it holds (string objects), counted in flight
    bool lent = false;     // being read from the sender's memory
  };
  struct In : std::enable_shared_from_this<In> {
    explicit In(asio::io_context& io) : socket(io) {}
    tcp::socket socket;
    std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
    char header[kHeaderBytes];
    std::vector<char> body;
    std::vector<char> scratch;
    std::vector<uint16_t> halves;  // a chunk of a truncated stream, expanded into its tensor once read
    std::string task;  // from the hello
    uint64_t incarnation = 0;
    bool hello = false;
    std::unordered_map<uint32_t, InStream> streams;
    uint64_t inflight = 0;
    bool closed = false;
    std::unique_ptr<asio::steady_timer> hello_deadline;  // a connection says who it is within kHelloTimeout
    int low_water = 1;  // SO_RCVLOWAT (ReadBulk)
    std::unique_ptr<char[]> rbuf;  // plaintext: bytes received and not yet parsed, [rpos, rend)
    size_t rpos = 0, rend = 0;
    int depth = 0;  // frames handled in one chain of calls (Continue)
    std::unique_ptr<PeerMemory> peer_memory;  // same host: the sender's memory, readable
    std::string control_queue, control_writing;  // frames to the sender, and those being written
  };
  std::vector<std::shared_ptr<In>> ins;

  template <class C, class B, class H>
  // Reads and writes through TLS when the connection has it.
  static void Read(C& c, const B& b, H&& h) {
    if (c.tls) asio::async_read(*c.tls, b, std::forward<H>(h));
    else asio::async_read(c.socket, b, std::forward<H>(h));
  }
  template <class C, class B, class H>
  static void Write(C& c, const B& b, H&& h) {
    if (c.tls) asio::async_write(*c.tls, b, std::forward<H>(h));
    else asio::async_write(c.socket, b, std::forward<H>(h));
  }

  // ---------------------------------------------------------------------
  void Accept();

  void CloseIn(const std::shared_ptr<In>& in, const Status& s, bool is_data_loss);

  void Bad(const std::shared_ptr<In>& in, const std::string& why);

  void ReadHeader(const std::shared_ptr<In>& in);

  void OnHeader(const std::shared_ptr<In>& in);

  // Reads exactly `n` bytes into `dest` from connection `in`, then calls
  // h(ec, size). A plaintext connection reads through its buffer: one recv
  // takes all the frames of a small tensor (header, begin, data, payload)
  // rather than one recv (and one reactor round) each; what is left of a
  // long payload is read straight into its place (ReadBulk from 256 KiB).
  template <class H>
  void ReadIn(const std::shared_ptr<In>& in, char* dest, size_t n, H h);

  // What one non-blocking recv on a plaintext connection takes: the bytes
  // read, 0 when none are there yet; the end of the stream or a failure in *ec.
  static size_t RecvNow(In& in, char* buf, size_t len, boost::system::error_code* ec);

  // Calls cont(ec) once `need` bytes (at most kReadBuffer) are buffered.
  template <class Cont>
  void Fill(const std::shared_ptr<In>& in, size_t need, Cont cont);

  // Runs `f` now, unless a chain of frames already buffered has nested this
  // deep: then from the io loop (the stack stays bounded whatever the peer sends).
  template <class F>
  void Continue(const std::shared_ptr<In>& in, F f);

  // Reads `len` bytes into `dest` from a plaintext connection, the thread
  // woken only when a good share of them has arrived: SO_RCVLOWAT at up to
  // kBulkWake bytes (never more than the rest, which the peer is writing).
  // An async_read wakes for every segment loopback delivers (64 KiB), and
  // each wake costs an epoll round and a handler. Measured here, against raw
  // Asio at 4-64 MiB: 256 KiB marks gave 0.95-1.29, 1 MiB marks 0.58-0.91
  // (the sender stalls on a window the reader drains late), 128 KiB about
  // as 256. The low mark is back at 1 byte before any header is awaited.
  template <class Done>
  void ReadBulk(const std::shared_ptr<In>& in, char* dest, size_t len, Done done);

  static void SetLowWater(const std::shared_ptr<In>& in, size_t bytes);

  void ReadDiscard(const std::shared_ptr<In>& in, uint32_t stream, uint64_t left, size_t n);

  void OnHello(const std::shared_ptr<In>& in);

  // Queues a frame for the sender of `in` (same-host answers), written in order.
  void SendControl(const std::shared_ptr<In>& in, uint8_t kind, uint32_t stream);
  void WriteControl(const std::shared_ptr<In>& in);

  // A lend frame: the payload of `stream` lies at `address` in the sender's memory.
  void OnLend(const std::shared_ptr<In>& in, uint32_t stream, uint64_t address);

  void ReadLent(const std::shared_ptr<In>& in, uint32_t stream, uint64_t address, uint64_t offset);

  void OnBegin(const std::shared_ptr<In>& in, uint8_t flags, uint32_t stream);

  void Complete(const std::shared_ptr<In>& in, std::unordered_map<uint32_t, InStream>::iterator it);

  // --- outgoing -----------------------------------------------------------
  // Marks `out` dead and closes it; returns the tensors it still held.
  std::deque<std::shared_ptr<OutStream>> CloseOut(const std::shared_ptr<Out>& out);

  void FailOut(const std::shared_ptr<Out>& out, const Status& s);

  std::shared_ptr<Out> OutFor(const std::string& task, const Peer& peer);

  void Connected(const std::shared_ptr<Out>& out);

  // A plaintext connection's answers from the receiver (same host, returns);
  // the end of the stream means the receiver closed it (or died).
  void ReadControl(const std::shared_ptr<Out>& out);

  void Wrote(const std::shared_ptr<Out>& out, const boost::system::error_code& ec);

  // Starts the next write, if any; under out->wmu.
  void WriteNext(const std::shared_ptr<Out>& out);

  // Whether `st` may be lent to the receiver of `out` rather than written: a
  // same-host receiver, a numeric payload of kLendMinBytes or more, and the
  // tensors lent and not yet returned under the sender's budget.
  static bool Lendable(const Out& out, const OutStream& st);

  // Writes `st` now, from the caller's thread, when its task's connection is
  // plaintext, past its hello, current and idle (nothing queued or being
  // written). One non-blocking sendmsg; what the socket did not take is
  // written by the io thread before anything else. False: queue it instead.
  bool WriteDirect(const std::string& task, const std::shared_ptr<OutStream>& st);

  void Enqueue(const std::string& task, std::shared_ptr<OutStream> st);

  // Test-only: `st` to `task` through the fault injector (delayed, dropped, or its connection cut).
  void SendFaulty(const std::string& task, std::shared_ptr<OutStream> st);
  // The io thread's half of a cut: `task`'s connection fails, `st` is rejected.
  void Cut(const std::string& task, const std::shared_ptr<OutStream>& st);

  // The handler of a message's channel.
  ChannelHandler& HandlerOf(Channel c) { return callbacks.handler(c); }
  // Tells `st`'s channel that its message from the sender of `in` could not be taken.
  void Reject(const std::shared_ptr<In>& in, const InStream& st, const Status& s) {
    auto& h = HandlerOf(st.channel);
    if (h.reject) h.reject(in->task, st.meta, s);
  }
  // Tells `st`'s channel that its message to `task` could not go.
  void RejectOut(const std::string& task, const OutStream& st, const Status& s) {
    auto& h = HandlerOf(st.channel);
    if (h.reject) h.reject(task, st.meta, s);
  }};

}  // namespace actorflow
