#include "net/tensor_transport.hpp"

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

#include "core/tensor_shape.hpp"
#include "net/same_host.hpp"

namespace actorflow {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr uint32_t kMagic = 0x31544641;  // "AFT1" little endian
constexpr size_t kHeaderBytes = 16;
constexpr uint8_t kHello = 1, kBegin = 2, kData = 3, kLend = 4;
constexpr uint8_t kSameHost = 5, kReturn = 6, kNotSameHost = 7;  // receiver to sender
constexpr size_t kProofBytes = 4 + 8 + 16;      // the hello's optional tail: pid, address, cookie
constexpr uint64_t kLendMinBytes = 256 << 10;   // same host: tensors lent rather than written
constexpr uint8_t kFlagDead = 1, kFlagTruncate16 = 2;
constexpr uint32_t kMaxBodyBytes = 64 << 10;  // hello and begin bodies
constexpr uint32_t kMaxKeyBytes = 8 << 10;
constexpr uint32_t kMaxTaskBytes = 1024;
constexpr uint32_t kMaxDims = 64;
constexpr uint32_t kMaxDataBody = 64 << 20;  // one chunk
constexpr size_t kBeginFixed = 8 + 4 + 4 + 8 + 4;
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

template <class T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out->append(b, sizeof(T));
}
template <class T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string Header(uint8_t kind, uint8_t flags, uint32_t stream, uint32_t body_len) {
  std::string h;
  h.reserve(kHeaderBytes);
  Put<uint32_t>(&h, kMagic);
  Put<uint8_t>(&h, kind);
  Put<uint8_t>(&h, flags);
  Put<uint16_t>(&h, 0);
  Put<uint32_t>(&h, stream);
  Put<uint32_t>(&h, body_len);
  return h;
}

// One tensor on its way out.
struct OutStream {
  uint32_t id = 0;
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
void Truncate16(const uint32_t* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint16_t>(in[i] >> 16);
}
void Expand16(const uint16_t* in, size_t n, uint32_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint32_t>(in[i]) << 16;
}

}  // namespace

struct TensorTransport::Impl : std::enable_shared_from_this<TensorTransport::Impl> {
  TransportOptions options;
  TransportCallbacks callbacks;
  asio::io_context io;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{io};
  std::thread thread;
  uint16_t port = 0;
  std::atomic<uint64_t> data_loss{0};
  std::atomic<uint64_t> tls_refused{0};
  std::atomic<uint64_t> same_host_reads{0};
  std::unique_ptr<asio::ssl::context> ssl;  // mutual TLS 1.3 (net/tls.hpp), when configured
  std::atomic<bool> stopped{false};

  struct Peer {
    std::string host;
    uint16_t port = 0;
    uint64_t incarnation = 0;
  };
  mutable std::mutex mu;                // guards peers (read by the io thread, written by callers)
  std::map<std::string, Peer> peers;

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
  // Plaintext connections past their hello, for Send's direct writes (under mu).
  std::unordered_map<std::string, std::shared_ptr<Out>> direct;
  void SetDirect(const std::shared_ptr<Out>& out, bool on) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = direct.find(out->task);
    if (on) direct[out->task] = out;
    else if (it != direct.end() && it->second == out) direct.erase(it);
  }

  // --- incoming: io thread only -------------------------------------------
  struct InStream {
    int64_t step_id = 0;
    RendezvousKey key;
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

  // Reads and writes through TLS when the connection has it.
  template <class C, class B, class H>
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
  void Accept() {
    auto in = std::make_shared<In>(io);
    acceptor.async_accept(in->socket, [self = shared_from_this(), in](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!ec) {
        boost::system::error_code ignore;
        in->socket.set_option(tcp::no_delay(true), ignore);
        self->ins.push_back(in);
        in->hello_deadline = std::make_unique<asio::steady_timer>(self->io, kHelloTimeout);
        in->hello_deadline->async_wait([self, in](const boost::system::error_code& ec) {
          if (ec || in->closed || in->hello) return;
          self->CloseIn(in, errors::DeadlineExceeded("tensor transport: no hello within the deadline"), false);
        });
        if (self->ssl) {
          // Mutual TLS: the peer's certificate must verify against the cluster CA.
          in->tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(in->socket, *self->ssl);
          in->tls->async_handshake(asio::ssl::stream_base::server,
                                   [self, in](const boost::system::error_code& ec) {
                                     if (in->closed) return;
                                     if (ec) {
                                       self->tls_refused.fetch_add(1);
                                       std::fprintf(stderr, "actorflow: %s: refused a tensor connection: %s\n",
                                                    self->options.task.c_str(), ec.message().c_str());
                                       return self->CloseIn(in, errors::Unauthenticated("TLS: ", ec.message()),
                                                            false);
                                     }
                                     self->ReadHeader(in);
                                   });
        } else {
          self->ReadHeader(in);
        }
        self->Accept();
        return;
      }
      // Out of descriptors (or memory): try again shortly rather than spin.
      auto timer = std::make_shared<asio::steady_timer>(self->io, std::chrono::milliseconds(100));
      timer->async_wait([self, timer](const boost::system::error_code&) {
        if (self->acceptor.is_open()) self->Accept();
      });
    });
  }

  void CloseIn(const std::shared_ptr<In>& in, const Status& s, bool is_data_loss) {
    if (in->closed) return;
    in->closed = true;
    if (in->hello_deadline) in->hello_deadline->cancel();
    if (is_data_loss) data_loss.fetch_add(1);
    boost::system::error_code ignore;
    in->socket.shutdown(tcp::socket::shutdown_both, ignore);
    in->socket.close(ignore);
    for (auto it = ins.begin(); it != ins.end(); ++it)
      if (*it == in) {
        ins.erase(it);
        break;
      }
    // Tensors begun on this connection will never complete: their steps fail.
    for (auto& [id, st] : in->streams)
      if (!st.discard && callbacks.reject) callbacks.reject(st.step_id, s);
    in->streams.clear();
    if (!in->task.empty() && callbacks.peer_failed) {
      bool current;
      {
        std::lock_guard<std::mutex> lock(mu);
        auto it = peers.find(in->task);
        current = it != peers.end() && it->second.incarnation == in->incarnation;
      }
      if (current) callbacks.peer_failed(in->task, s);  // not for a stale incarnation or a stranger
    }
  }

  void Bad(const std::shared_ptr<In>& in, const std::string& why) {
    CloseIn(in, errors::DataLoss("tensor transport: bad frame from ", in->task.empty() ? "an unknown peer" : in->task,
                                 ": ", why, "; connection closed"),
            true);
  }

  void ReadHeader(const std::shared_ptr<In>& in) {
    ReadIn(in, in->header, kHeaderBytes,
                     [self = shared_from_this(), in](const boost::system::error_code& ec, size_t) {
                       if (in->closed) return;
                       if (ec) {
                         // EOF between frames is a peer going away; mid-stream it loses tensors.
                         self->CloseIn(in, errors::Unavailable("tensor transport: connection from ",
                                                               in->task.empty() ? "a peer" : in->task,
                                                               " lost: ", ec.message()),
                                       false);
                         return;
                       }
                       self->OnHeader(in);
                     });
  }

  void OnHeader(const std::shared_ptr<In>& in) {
    const char* h = in->header;
    if (Get<uint32_t>(h) != kMagic) return Bad(in, "bad magic");
    const uint8_t kind = Get<uint8_t>(h + 4), flags = Get<uint8_t>(h + 5);
    const uint32_t stream = Get<uint32_t>(h + 8), body_len = Get<uint32_t>(h + 12);
    if (Get<uint16_t>(h + 6) != 0 || (flags & ~(kFlagDead | kFlagTruncate16))) return Bad(in, "unknown flags");
    if (!in->hello && kind != kHello) return Bad(in, "a frame before the hello");
    if (kind == kHello || kind == kBegin) {
      if (in->hello && kind == kHello) return Bad(in, "a second hello");
      if (body_len > kMaxBodyBytes) return Bad(in, "header body too long");
      in->body.resize(body_len);
      ReadIn(in, in->body.data(), body_len,
                       [self = shared_from_this(), in, kind, flags, stream](const boost::system::error_code& ec,
                                                                            size_t) {
                         if (in->closed) return;
                         if (ec) return self->Bad(in, "truncated frame: " + ec.message());
                         if (kind == kHello) self->OnHello(in);
                         else self->OnBegin(in, flags, stream);
                       });
      return;
    }
    if (kind == kLend) {
      if (body_len != 8) return Bad(in, "a lend frame of " + std::to_string(body_len) + " bytes");
      in->body.resize(8);
      ReadIn(in, in->body.data(), 8, [self = shared_from_this(), in, stream](const boost::system::error_code& ec, size_t) {
        if (in->closed) return;
        if (ec) return self->Bad(in, "truncated frame: " + ec.message());
        self->OnLend(in, stream, Get<uint64_t>(in->body.data()));
      });
      return;
    }
    if (kind != kData) return Bad(in, "unknown frame kind " + std::to_string(kind));
    auto it = in->streams.find(stream);
    if (it == in->streams.end()) return Bad(in, "data for unknown stream " + std::to_string(stream));
    InStream& st = it->second;
    if (st.lent) return Bad(in, "data for a lent stream");
    if (body_len == 0 || body_len > kMaxDataBody || body_len > st.payload_len - st.received)
      return Bad(in, "chunk of " + std::to_string(body_len) + " bytes does not fit its tensor");
    char* dest;
    if (st.discard) {
      in->scratch.resize(std::min<size_t>(body_len, size_t{1} << 20));
      // Read and dropped in scratch-sized pieces.
      const size_t n = std::min<size_t>(body_len, in->scratch.size());
      ReadDiscard(in, stream, body_len, n);
      return;
    }
    const bool halves = st.flags & kFlagTruncate16;
    if (halves) {
      if (body_len % 2 != 0 || st.received % 2 != 0) return Bad(in, "a chunk of 16-bit values of odd length");
      in->halves.resize(body_len / 2);
      dest = reinterpret_cast<char*>(in->halves.data());
    } else if (DataTypeIsStringLike(st.dtype)) {
      dest = st.staging.data() + st.received;
    } else {
      dest = static_cast<char*>(st.tensor.raw_data()) + st.received;
    }
    auto on_read = [self = shared_from_this(), in, stream, body_len, halves](const boost::system::error_code& ec,
                                                                             size_t) {
                       if (in->closed) return;
                       if (ec) return self->Bad(in, "truncated chunk: " + ec.message());
                       auto it = in->streams.find(stream);
                       if (it == in->streams.end()) return self->ReadHeader(in);
                       if (halves)
                         Expand16(in->halves.data(), body_len / 2,
                                  static_cast<uint32_t*>(it->second.tensor.raw_data()) + it->second.received / 2);
                       it->second.received += body_len;
                       if (it->second.received == it->second.payload_len) self->Complete(in, it);
                       self->ReadHeader(in);
                     };
    ReadIn(in, dest, body_len, std::move(on_read));
  }

  // Reads exactly `n` bytes into `dest` from connection `in`, then calls
  // h(ec, size). A plaintext connection reads through its buffer: one recv
  // takes all the frames of a small tensor (header, begin, data, payload)
  // rather than one recv (and one reactor round) each; what is left of a
  // long payload is read straight into its place (ReadBulk from 256 KiB).
  template <class H>
  void ReadIn(const std::shared_ptr<In>& in, char* dest, size_t n, H h) {
    if (in->tls) return Read(*in, asio::buffer(dest, n), std::move(h));
    const size_t have = std::min(n, in->rend - in->rpos);
    if (have > 0) std::memcpy(dest, in->rbuf.get() + in->rpos, have);
    in->rpos += have;
    if (have == n) return Continue(in, [h = std::move(h), n]() mutable { h(boost::system::error_code(), n); });
    dest += have;
    n -= have;
    in->rpos = in->rend = 0;  // drained
    if (n >= kBulkBytes) return ReadBulk(in, dest, n, std::move(h));
    if (n >= kReadBuffer / 2) return asio::async_read(in->socket, asio::buffer(dest, n), std::move(h));
    Fill(in, n, [in, dest, n, h = std::move(h)](const boost::system::error_code& ec) mutable {
      if (ec) return h(ec, 0);
      std::memcpy(dest, in->rbuf.get() + in->rpos, n);
      in->rpos += n;
      h(ec, n);
    });
  }

  // What one non-blocking recv on a plaintext connection takes: the bytes
  // read, 0 when none are there yet; the end of the stream or a failure in *ec.
  static size_t RecvNow(In& in, char* buf, size_t len, boost::system::error_code* ec) {
    for (;;) {
      const ssize_t n = ::recv(in.socket.native_handle(), buf, len, MSG_DONTWAIT);
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) *ec = asio::error::eof;
      else if (errno == EINTR) continue;
      else if (errno != EAGAIN && errno != EWOULDBLOCK) *ec = boost::system::error_code(errno, boost::system::system_category());
      return 0;
    }
  }

  // Calls cont(ec) once `need` bytes (at most kReadBuffer) are buffered.
  template <class Cont>
  void Fill(const std::shared_ptr<In>& in, size_t need, Cont cont) {
    if (!in->rbuf) in->rbuf.reset(new char[kReadBuffer]);
    for (;;) {
      if (in->rend - in->rpos >= need) return Continue(in, [cont = std::move(cont)]() mutable { cont({}); });
      if (in->rpos > 0) {
        std::memmove(in->rbuf.get(), in->rbuf.get() + in->rpos, in->rend - in->rpos);
        in->rend -= in->rpos;
        in->rpos = 0;
      }
      boost::system::error_code ec;
      const size_t got = RecvNow(*in, in->rbuf.get() + in->rend, kReadBuffer - in->rend, &ec);
      if (ec) return cont(ec);
      if (got > 0) {
        in->rend += got;
        continue;
      }
      in->socket.async_wait(tcp::socket::wait_read, [self = shared_from_this(), in, need, cont = std::move(cont)](
                                                        const boost::system::error_code& ec) mutable {
        if (in->closed) return;
        if (ec) return cont(ec);
        self->Fill(in, need, std::move(cont));
      });
      return;
    }
  }

  // Runs `f` now, unless a chain of frames already buffered has nested this
  // deep: then from the io loop (the stack stays bounded whatever the peer sends).
  template <class F>
  void Continue(const std::shared_ptr<In>& in, F f) {
    if (in->depth < 16) {
      ++in->depth;
      f();
      --in->depth;
      return;
    }
    asio::post(io, [in, f = std::move(f)]() mutable {
      if (!in->closed) f();
    });
  }

  // Reads `len` bytes into `dest` from a plaintext connection, the thread
  // woken only when a good share of them has arrived: SO_RCVLOWAT at up to
  // kBulkWake bytes (never more than the rest, which the peer is writing).
  // An async_read wakes for every segment loopback delivers (64 KiB), and
  // each wake costs an epoll round and a handler. Measured here, against raw
  // Asio at 4-64 MiB: 256 KiB marks gave 0.95-1.29, 1 MiB marks 0.58-0.91
  // (the sender stalls on a window the reader drains late), 128 KiB about
  // as 256. The low mark is back at 1 byte before any header is awaited.
  template <class Done>
  void ReadBulk(const std::shared_ptr<In>& in, char* dest, size_t len, Done done) {
    while (len > 0) {
      boost::system::error_code ec;
      const size_t n = RecvNow(*in, dest, len, &ec);
      if (ec) return done(ec, 0);
      if (n > 0) {
        dest += n;
        len -= n;
        continue;
      }
      SetLowWater(in, std::min(len, kBulkWake));
      in->socket.async_wait(tcp::socket::wait_read, [self = shared_from_this(), in, dest, len,
                                                     done = std::move(done)](const boost::system::error_code& ec) mutable {
        if (in->closed) return;
        if (ec) return done(ec, 0);
        self->ReadBulk(in, dest, len, std::move(done));
      });
      return;
    }
    SetLowWater(in, 1);
    done(boost::system::error_code(), 0);
  }

  static void SetLowWater(const std::shared_ptr<In>& in, size_t bytes) {
    const int v = static_cast<int>(bytes);
    if (in->low_water == v) return;
    if (::setsockopt(in->socket.native_handle(), SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0) in->low_water = v;
  }

  void ReadDiscard(const std::shared_ptr<In>& in, uint32_t stream, uint64_t left, size_t n) {
    ReadIn(in, in->scratch.data(), n,
                     [self = shared_from_this(), in, stream, left, n](const boost::system::error_code& ec, size_t) {
                       if (in->closed) return;
                       if (ec) return self->Bad(in, "truncated chunk: " + ec.message());
                       auto it = in->streams.find(stream);
                       if (it != in->streams.end()) it->second.received += n;
                       if (left > n) return self->ReadDiscard(in, stream, left - n, std::min<size_t>(left - n, n));
                       if (it != in->streams.end() && it->second.received == it->second.payload_len) {
                         in->streams.erase(it);
                       }
                       self->ReadHeader(in);
                     });
  }

  void OnHello(const std::shared_ptr<In>& in) {
    const auto& b = in->body;
    if (b.size() < 12) return Bad(in, "short hello");
    const uint64_t incarnation = Get<uint64_t>(b.data());
    const uint32_t len = Get<uint32_t>(b.data() + 8);
    if (len == 0 || len > kMaxTaskBytes || (b.size() != 12 + len && b.size() != 12 + len + kProofBytes))
      return Bad(in, "bad hello");
    in->task.assign(b.data() + 12, len);
    in->incarnation = incarnation;
    in->hello = true;
    if (in->hello_deadline) in->hello_deadline->cancel();
    if (b.size() > 12 + len && options.same_host && !in->tls) {
      // The sender offers its memory: take it if this process can read the proof there.
      const char* q = b.data() + 12 + len;
      ProcessProof proof;
      proof.pid = Get<uint32_t>(q);
      proof.address = Get<uint64_t>(q + 4);
      std::memcpy(proof.cookie.data(), q + 12, proof.cookie.size());
      in->peer_memory = PeerMemory::Attach(proof);
    }
    if (b.size() > 12 + len && !in->tls) SendControl(in, in->peer_memory ? kSameHost : kNotSameHost, 0);
    ReadHeader(in);
  }

  // Queues a frame for the sender of `in` (same-host answers), written in order.
  void SendControl(const std::shared_ptr<In>& in, uint8_t kind, uint32_t stream) {
    in->control_queue += Header(kind, 0, stream, 0);
    if (!in->control_writing.empty()) return;
    WriteControl(in);
  }
  void WriteControl(const std::shared_ptr<In>& in) {
    in->control_writing.swap(in->control_queue);
    in->control_queue.clear();
    if (in->control_writing.empty()) return;
    asio::async_write(in->socket, asio::buffer(in->control_writing),
                      [self = shared_from_this(), in](const boost::system::error_code& ec, size_t) {
                        in->control_writing.clear();
                        if (in->closed || ec) return;  // a failed connection shows on the reading side
                        self->WriteControl(in);
                      });
  }

  // A lend frame: the payload of `stream` lies at `address` in the sender's memory.
  void OnLend(const std::shared_ptr<In>& in, uint32_t stream, uint64_t address) {
    if (!in->peer_memory) return Bad(in, "a lent tensor from a peer whose memory this process cannot read");
    auto it = in->streams.find(stream);
    if (it == in->streams.end()) return Bad(in, "a lend for unknown stream " + std::to_string(stream));
    InStream& st = it->second;
    if (st.lent || st.received != 0 || st.payload_len == 0 || DataTypeIsStringLike(st.dtype))
      return Bad(in, "a lend for stream " + std::to_string(stream) + " that cannot take one");
    if (st.discard) {  // rejected at its begin: nothing to read, the sender may let it go
      in->streams.erase(it);
      SendControl(in, kReturn, stream);
      return ReadHeader(in);
    }
    st.lent = true;
    // Read in pieces from the io loop, between this and other connections' frames.
    asio::post(io, [self = shared_from_this(), in, stream, address] { self->ReadLent(in, stream, address, 0); });
    ReadHeader(in);
  }

  void ReadLent(const std::shared_ptr<In>& in, uint32_t stream, uint64_t address, uint64_t offset) {
    if (in->closed) return;
    auto it = in->streams.find(stream);
    if (it == in->streams.end()) return;
    InStream& st = it->second;
    // A truncated float32 is lent whole (4 bytes a value) and truncated here.
    const bool halves = st.flags & kFlagTruncate16;
    const uint64_t total = halves ? st.payload_len * 2 : st.payload_len;
    const uint64_t n = std::min<uint64_t>(options.chunk_bytes, total - offset);
    char* dest = static_cast<char*>(st.tensor.raw_data()) + offset;
    Status s = in->peer_memory->Read(address + offset, dest, n);
    if (!s.ok()) {
      const bool bad = s.code() == Code::kDataLoss;
      return CloseIn(in,
                     Status(s.code(), "tensor transport: reading a tensor from the memory of " + in->task + ": " +
                                          s.message() + (bad ? "; connection closed" : "")),
                     bad);
    }
    if (halves) {
      uint32_t* v = reinterpret_cast<uint32_t*>(dest);
      for (uint64_t i = 0; i < n / 4; ++i) v[i] &= 0xffff0000u;
    }
    offset += n;
    if (offset < total) {
      asio::post(io, [self = shared_from_this(), in, stream, address, offset] {
        self->ReadLent(in, stream, address, offset);
      });
      return;
    }
    // Read while the sender was alive: the bytes were its own (a pid can be reused after it exits).
    if (in->peer_memory->Exited())
      return CloseIn(in, errors::Unavailable("tensor transport: task ", in->task, " exited while its tensor was read"),
                     false);
    st.received = st.payload_len;
    same_host_reads.fetch_add(1);
    SendControl(in, kReturn, stream);
    Complete(in, it);
  }

  void OnBegin(const std::shared_ptr<In>& in, uint8_t flags, uint32_t stream) {
    const auto& b = in->body;
    if (b.size() < kBeginFixed) return Bad(in, "short begin frame");
    const char* p = b.data();
    InStream st;
    st.step_id = Get<int64_t>(p);
    st.dtype = static_cast<DataType>(Get<int32_t>(p + 8));
    const uint32_t ndims = Get<uint32_t>(p + 12);
    st.payload_len = Get<uint64_t>(p + 16);
    const uint32_t key_len = Get<uint32_t>(p + 24);
    st.flags = flags;
    if (ndims > kMaxDims || key_len == 0 || key_len > kMaxKeyBytes ||
        b.size() != kBeginFixed + key_len + size_t{8} * ndims)
      return Bad(in, "begin frame lengths disagree");
    if (in->streams.count(stream)) return Bad(in, "stream " + std::to_string(stream) + " begun twice");
    if (static_cast<int32_t>(st.dtype) <= 0 || static_cast<int32_t>(st.dtype) >= 100 || !DataTypeIsSupported(st.dtype))
      return Bad(in, "unsupported dtype " + std::to_string(st.dtype));
    std::vector<int64_t> dims(ndims);
    if (ndims > 0) std::memcpy(dims.data(), p + kBeginFixed + key_len, size_t{8} * ndims);
    if (!TensorShape::FromDims(dims, &st.shape).ok()) return Bad(in, "invalid dims");
    if (st.payload_len > options.max_payload_bytes) return Bad(in, "payload over the cap");
    const bool is_string = DataTypeIsStringLike(st.dtype);
    const bool truncated = flags & kFlagTruncate16;
    if (truncated && st.dtype != DT_FLOAT) return Bad(in, "16-bit truncation of a non-float32 tensor");
    const uint64_t n = static_cast<uint64_t>(st.shape.num_elements());
    if (is_string) {
      if (n > st.payload_len / 8) return Bad(in, "string payload shorter than its lengths");
      st.extra = n * sizeof(std::string);
    } else {
      const uint64_t elem = truncated ? 2 : DataTypeSize(st.dtype);
      if (elem == 0 || (n != 0 && n > st.payload_len / elem) || n * elem != st.payload_len)
        return Bad(in, "dims x element size != payload length");
    }
    st.key = RendezvousKey(std::string(p + kBeginFixed, key_len));
    // A tensor for another task is not this process's to take (never forwarded).
    if (RecvTaskOfKey(st.key.str()) != options.task) return Bad(in, "a tensor for another task (key " + st.key.str() + ")");
    // The sender must be the incarnation this process knows for its task.
    uint64_t known = 0;
    bool found;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = peers.find(in->task);
      found = it != peers.end();
      if (found) known = it->second.incarnation;
    }
    Status reject;
    if (in->inflight + st.payload_len + st.extra > options.max_inflight_bytes)
      reject = errors::ResourceExhausted("tensor transport: more than ", options.max_inflight_bytes,
                                         " bytes in flight from ", in->task, "; key ", st.key.str());
    else if (!found || known != in->incarnation)
      reject = errors::Aborted("tensor from task ", in->task, " with incarnation ", in->incarnation,
                               found ? " after the task restarted (this session knows incarnation " +
                                           std::to_string(known) + ")"
                                     : " that this process does not know as a peer",
                               "; key ", st.key.str());
    if (reject.ok()) {
      try {
        if (is_string) {
          st.staging.resize(st.payload_len);
          st.tensor = Tensor(st.dtype, st.shape);
        } else {
          reject = Tensor::Create(nullptr, st.dtype, st.shape, &st.tensor);
        }
      } catch (...) {
        reject = errors::ResourceExhausted("no memory for a tensor of ", st.payload_len, " bytes from ", in->task,
                                           "; key ", st.key.str());
      }
    }
    if (!reject.ok()) {
      st.discard = true;
      st.tensor = Tensor();
      std::string().swap(st.staging);
      if (callbacks.reject) callbacks.reject(st.step_id, reject);
    }
    if (!st.discard) in->inflight += st.payload_len + st.extra;
    auto it = in->streams.emplace(stream, std::move(st)).first;
    if (it->second.payload_len == 0) {
      if (it->second.discard) {
        in->streams.erase(it);
      } else {
        Complete(in, it);
      }
    }
    ReadHeader(in);
  }

  void Complete(const std::shared_ptr<In>& in, std::unordered_map<uint32_t, InStream>::iterator it) {
    InStream st = std::move(it->second);
    if (!st.discard) in->inflight -= st.payload_len + st.extra;
    in->streams.erase(it);
    if (st.discard) return;
    // A bad string payload fails its step as well as the connection.
    auto bad = [&](const std::string& why) {
      if (callbacks.reject)
        callbacks.reject(st.step_id, errors::DataLoss("tensor transport: bad string tensor from ", in->task, ": ", why));
      Bad(in, why);
    };
    if (DataTypeIsStringLike(st.dtype)) {
      const char* p = st.staging.data();
      uint64_t left = st.payload_len;
      std::string* out = st.tensor.data<std::string>();
      for (int64_t i = 0; i < st.shape.num_elements(); ++i) {
        if (left < 8) return bad("string payload truncated");
        const uint64_t len = Get<uint64_t>(p);
        p += 8;
        left -= 8;
        if (len > left) return bad("string element longer than its payload");
        out[i].assign(p, len);
        p += len;
        left -= len;
      }
      if (left != 0) return bad("string payload longer than its elements");
    }
    if (callbacks.deliver) callbacks.deliver(st.step_id, std::move(st.key), std::move(st.tensor), st.flags & kFlagDead);
  }

  // --- outgoing -----------------------------------------------------------
  // Marks `out` dead and closes it; returns the tensors it still held.
  std::deque<std::shared_ptr<OutStream>> CloseOut(const std::shared_ptr<Out>& out) {
    SetDirect(out, false);
    std::lock_guard<std::mutex> lock(out->wmu);
    out->dead = true;
    boost::system::error_code ignore;
    out->socket.close(ignore);
    out->pending.clear();
    out->lent.clear();  // the receiver reads no more: their tensors go
    out->lent_bytes = 0;
    return std::move(out->queue);
  }

  void FailOut(const std::shared_ptr<Out>& out, const Status& s) {
    if (out->dead) return;
    auto it = outs.find(out->task);
    if (it != outs.end() && it->second == out) outs.erase(it);
    for (auto& st : CloseOut(out))
      if (callbacks.reject) callbacks.reject(Get<int64_t>(st->begin.data() + kHeaderBytes), s);
    if (callbacks.peer_failed) callbacks.peer_failed(out->task, s);
  }

  std::shared_ptr<Out> OutFor(const std::string& task, const Peer& peer) {
    auto it = outs.find(task);
    if (it != outs.end()) {
      auto& o = it->second;
      if (o->peer.host == peer.host && o->peer.port == peer.port && o->peer.incarnation == peer.incarnation) return o;
      // The task moved or restarted: the old connection goes.
      auto old = o;
      outs.erase(it);
      for (auto& st : CloseOut(old))
        if (callbacks.reject)
          callbacks.reject(Get<int64_t>(st->begin.data() + kHeaderBytes),
                           errors::Aborted("tensor transport: task ", task, " moved or restarted"));
    }
    auto out = std::make_shared<Out>(io);
    out->task = task;
    out->peer = peer;
    const bool offer = options.same_host && !ssl;  // the same-host path: plaintext connections only
    out->hello = Header(kHello, 0, 0, static_cast<uint32_t>(12 + options.task.size() + (offer ? kProofBytes : 0)));
    Put<uint64_t>(&out->hello, options.incarnation);
    Put<uint32_t>(&out->hello, static_cast<uint32_t>(options.task.size()));
    out->hello += options.task;
    out->offered = offer;
    if (offer) {
      const ProcessProof& proof = ThisProcessProof();
      Put<uint32_t>(&out->hello, proof.pid);
      Put<uint64_t>(&out->hello, proof.address);
      out->hello.append(reinterpret_cast<const char*>(proof.cookie.data()), proof.cookie.size());
    }
    outs[task] = out;
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(peer.host, ec);
    if (ec) {
      // A host name: resolve it (rare; clusters name addresses).
      tcp::resolver resolver(io);
      auto results = resolver.resolve(peer.host, std::to_string(peer.port), ec);
      if (ec || results.empty()) {
        FailOut(out, errors::Unavailable("tensor transport: cannot resolve ", peer.host, " of task ", task, ": ",
                                         ec.message()));
        return nullptr;
      }
      addr = results.begin()->endpoint().address();
    }
    out->socket.async_connect(tcp::endpoint(addr, peer.port), [self = shared_from_this(), out](
                                                                  const boost::system::error_code& ec) {
      if (out->dead) return;
      if (ec)
        return self->FailOut(out, errors::Unavailable("tensor transport: cannot connect to task ", out->task, " at ",
                                                      out->peer.host, ":", out->peer.port, ": ", ec.message()));
      boost::system::error_code ignore;
      out->socket.set_option(tcp::no_delay(true), ignore);
      if (!self->ssl) return self->Connected(out);
      out->tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(out->socket, *self->ssl);
      out->tls->async_handshake(asio::ssl::stream_base::client, [self, out](const boost::system::error_code& ec) {
        if (out->dead) return;
        if (ec) {
          self->tls_refused.fetch_add(1);
          return self->FailOut(out, errors::Unauthenticated("tensor transport: TLS with task ", out->task, " at ",
                                                            out->peer.host, ":", out->peer.port,
                                                            " failed: ", ec.message()));
        }
        self->Connected(out);
      });
    });
    return out;
  }

  void Connected(const std::shared_ptr<Out>& out) {
    std::lock_guard<std::mutex> lock(out->wmu);
    out->connected = true;
    out->writing = true;
    Write(*out, asio::buffer(out->hello),
          [self = shared_from_this(), out](const boost::system::error_code& ec, size_t) { self->Wrote(out, ec); });
    if (!out->tls) return ReadControl(out);
    // Over TLS the peer never writes on this connection: a read completing means it closed (or died).
    auto probe = [self = shared_from_this(), out](const boost::system::error_code& ec, size_t) {
      if (out->dead) return;
      // In TLS 1.3 the server judges the client's certificate after the client's handshake: a refusal comes here.
      if (ec && ec.category() == asio::error::get_ssl_category()) {
        self->tls_refused.fetch_add(1);
        return self->FailOut(out, errors::Unauthenticated("tensor transport: task ", out->task,
                                                          " refused this task's certificate: ", ec.message()));
      }
      self->FailOut(out, errors::Unavailable("tensor transport: task ", out->task, " closed the connection",
                                             ec ? ": " + ec.message() : std::string()));
    };
    out->tls->async_read_some(asio::buffer(&out->probe, 1), probe);
  }

  // A plaintext connection's answers from the receiver (same host, returns);
  // the end of the stream means the receiver closed it (or died).
  void ReadControl(const std::shared_ptr<Out>& out) {
    asio::async_read(out->socket, asio::buffer(out->control), [self = shared_from_this(), out](
                                                                  const boost::system::error_code& ec, size_t) {
      if (out->dead) return;
      if (ec)
        return self->FailOut(out, errors::Unavailable("tensor transport: task ", out->task, " closed the connection: ",
                                                      ec.message()));
      const char* h = out->control;
      const uint8_t kind = Get<uint8_t>(h + 4);
      const uint32_t stream = Get<uint32_t>(h + 8);
      if (Get<uint32_t>(h) != kMagic || Get<uint32_t>(h + 12) != 0 ||
          (kind != kSameHost && kind != kNotSameHost && kind != kReturn)) {
        self->data_loss.fetch_add(1);
        return self->FailOut(out, errors::DataLoss("tensor transport: a bad answer from task ", out->task,
                                                   "; connection closed"));
      }
      if (kind == kSameHost || kind == kNotSameHost) {
        std::lock_guard<std::mutex> lock(out->wmu);
        out->answered = true;
        out->same_host = kind == kSameHost;
        self->WriteNext(out);  // tensors held for the answer go now
      } else {
        auto it = out->lent.find(stream);
        if (it != out->lent.end()) {
          out->lent_bytes -= it->second->payload_len;
          out->lent.erase(it);  // read: its tensor may go
        }
      }
      self->ReadControl(out);
    });
  }

  void Wrote(const std::shared_ptr<Out>& out, const boost::system::error_code& ec) {
    {
      std::lock_guard<std::mutex> lock(out->wmu);
      const bool hello = !out->hello_sent;
      out->hello_sent = true;
      out->writing = false;
      out->in_write.clear();  // their tensors are written: let them go
      if (out->writing_pending) out->pending.clear();
      out->writing_pending = false;
      if (out->dead) return;
      if (!ec) {
        if (hello && !ssl) SetDirect(out, true);  // past its hello: Send may write directly
        return WriteNext(out);
      }
    }
    FailOut(out, errors::Unavailable("tensor transport: writing to task ", out->task, " failed: ", ec.message()));
  }

  // Starts the next write, if any; under out->wmu.
  void WriteNext(const std::shared_ptr<Out>& out) {
    if (out->writing || !out->connected || out->dead) return;
    if (!out->pending.empty()) {
      out->writing = out->writing_pending = true;
      Write(*out, asio::buffer(out->pending),
            [self = shared_from_this(), out](const boost::system::error_code& ec, size_t) { self->Wrote(out, ec); });
      return;
    }
    if (out->queue.empty()) return;
    out->buffers.clear();
    out->chunk_headers.clear();
    out->in_write.clear();
    // Chunks of streams in turn, one gather write: while what is gathered is
    // small (small tensors queued behind each other go in one sendmsg, not
    // one write and one reactor round each), up to one chunk's worth.
    uint64_t gathered = 0;
    while (!out->queue.empty() && out->in_write.size() < kMaxGather && gathered < options.chunk_bytes) {
      // The next stream in turn that may go: a new one begins only while the
      // tensors begun and not finished stay under a budget (the receiver holds
      // them whole), and one that could be lent waits for the receiver's
      // answer to this process's same-host offer (one round trip, once).
      auto pick = std::find_if(out->queue.begin(), out->queue.end(), [&](const std::shared_ptr<OutStream>& s) {
        if (s->begun) return true;
        if (out->offered && !out->answered && s->tensor.IsInitialized() && s->tensor.TotalBytes() >= kLendMinBytes)
          return false;
        return out->begun_bytes == 0 || out->begun_bytes + s->payload_len <= kBegunBudget;
      });
      if (pick == out->queue.end()) break;
      std::shared_ptr<OutStream> st = *pick;
      const bool lend = !st->begun && Lendable(*out, *st);
      if (st->truncate16 && !lend && !out->in_write.empty()) break;  // its encoded chunk goes in a write of its own
      out->queue.erase(pick);
      if (lend) {
        // Same host: the receiver reads the payload from this process's memory.
        out->buffers.push_back(asio::buffer(st->begin));
        out->chunk_headers.push_back(Header(kLend, 0, st->id, 8));
        Put<uint64_t>(&out->chunk_headers.back(), reinterpret_cast<uint64_t>(st->tensor.raw_data()));
        out->buffers.push_back(asio::buffer(out->chunk_headers.back()));
        gathered += st->begin.size() + kHeaderBytes + 8;
        st->begun = true;
        st->offset = st->payload_len;
        out->lent_bytes += st->payload_len;
        out->lent[st->id] = st;  // alive until the receiver returns it
        out->in_write.push_back(st);
        continue;
      }
      if (!st->begun) {
        out->begun_bytes += st->payload_len;
        out->buffers.push_back(asio::buffer(st->begin));
        gathered += st->begin.size();
        st->begun = true;
      }
      const uint64_t n = std::min<uint64_t>(st->truncate16 ? std::min<uint64_t>(options.chunk_bytes, kTruncatedChunk)
                                                           : options.chunk_bytes,
                                            st->payload_len - st->offset);
      if (n > 0) {
        out->chunk_headers.push_back(Header(kData, 0, st->id, static_cast<uint32_t>(n)));
        out->buffers.push_back(asio::buffer(out->chunk_headers.back()));
        if (st->truncate16) {
          out->encoded.resize(n / 2);
          Truncate16(static_cast<const uint32_t*>(st->tensor.raw_data()) + st->offset / 2, n / 2,
                     out->encoded.data());
          out->buffers.push_back(asio::buffer(out->encoded.data(), n));
        } else {
          out->buffers.push_back(asio::buffer(st->payload + st->offset, n));
        }
        st->offset += n;
        gathered += n;
      }
      out->in_write.push_back(st);  // alive until written
      // Taken in turn: a stream with more to send goes behind the others.
      if (st->offset < st->payload_len) out->queue.push_back(st);
      else out->begun_bytes -= st->payload_len;
      if (st->truncate16) break;
    }
    if (out->buffers.empty()) return;
    out->writing = true;
    Write(*out, out->buffers,
          [self = shared_from_this(), out](const boost::system::error_code& ec, size_t) { self->Wrote(out, ec); });
  }

  // Whether `st` may be lent to the receiver of `out` rather than written: a
  // same-host receiver, a numeric payload of kLendMinBytes or more, and the
  // tensors lent and not yet returned under the sender's budget.
  static bool Lendable(const Out& out, const OutStream& st) {
    return out.same_host && !st.encoded && st.tensor.IsInitialized() && st.tensor.TotalBytes() >= kLendMinBytes &&
           out.lent_bytes + st.payload_len <= kBegunBudget;
  }

  // Writes `st` now, from the caller's thread, when its task's connection is
  // plaintext, past its hello, current and idle (nothing queued or being
  // written). One non-blocking sendmsg; what the socket did not take is
  // written by the io thread before anything else. False: queue it instead.
  bool WriteDirect(const std::string& task, const std::shared_ptr<OutStream>& st) {
    std::shared_ptr<Out> out;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = direct.find(task);
      auto peer = peers.find(task);
      if (it == direct.end() || peer == peers.end()) return false;
      const Peer& p = it->second->peer;
      if (p.host != peer->second.host || p.port != peer->second.port || p.incarnation != peer->second.incarnation)
        return false;  // the task moved or restarted: the io thread replaces the connection
      out = it->second;
    }
    std::unique_lock<std::mutex> lock(out->wmu, std::try_to_lock);
    if (!lock.owns_lock() || out->dead || out->writing || !out->queue.empty() || !out->pending.empty()) return false;
    const uint32_t id = out->next_stream++;
    std::memcpy(st->begin.data() + 8, &id, 4);
    const std::string chunk = st->payload_len > 0
                                  ? Header(kData, 0, id, static_cast<uint32_t>(st->payload_len))
                                  : std::string();
    iovec iov[3] = {{st->begin.data(), st->begin.size()},
                    {const_cast<char*>(chunk.data()), chunk.size()},
                    {const_cast<char*>(st->payload), st->payload_len}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = st->payload_len > 0 ? 3 : 1;
    const size_t total = st->begin.size() + chunk.size() + st->payload_len;
    const ssize_t wrote = ::sendmsg(out->socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (wrote == static_cast<ssize_t>(total)) return true;
    if (wrote <= 0) return false;  // nothing written (full, or broken: the io thread finds out)
    std::string rest;
    rest.reserve(total - static_cast<size_t>(wrote));
    size_t skip = static_cast<size_t>(wrote);
    for (size_t i = 0; i < msg.msg_iovlen; ++i) {
      const size_t len = iov[i].iov_len;
      if (skip < len) rest.append(static_cast<const char*>(iov[i].iov_base) + skip, len - skip);
      skip = skip > len ? skip - len : 0;
    }
    out->pending = std::move(rest);
    asio::post(io, [self = shared_from_this(), out] {
      std::lock_guard<std::mutex> l(out->wmu);
      self->WriteNext(out);
    });
    return true;
  }

  void Enqueue(const std::string& task, std::shared_ptr<OutStream> st) {
    if (stopped.load()) return;
    Peer peer;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = peers.find(task);
      if (it == peers.end()) {
        if (callbacks.reject)
          callbacks.reject(Get<int64_t>(st->begin.data() + kHeaderBytes),
                           errors::Unavailable("tensor transport: no address for task ", task));
        return;
      }
      peer = it->second;
    }
    auto out = OutFor(task, peer);
    if (!out) {
      if (callbacks.reject)
        callbacks.reject(Get<int64_t>(st->begin.data() + kHeaderBytes),
                         errors::Unavailable("tensor transport: task ", task, " unreachable"));
      return;
    }
    std::lock_guard<std::mutex> lock(out->wmu);
    st->id = out->next_stream++;
    std::memcpy(st->begin.data() + 8, &st->id, 4);
    out->queue.push_back(std::move(st));
    WriteNext(out);
  }
};

TensorTransport::TensorTransport(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status TensorTransport::Start(TransportOptions options, TransportCallbacks callbacks,
                              std::unique_ptr<TensorTransport>* out) {
  auto impl = std::make_shared<Impl>();
  impl->options = std::move(options);
  impl->callbacks = std::move(callbacks);
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(impl->options.bind_host, ec);
  if (ec) return errors::InvalidArgument("tensor transport: bad bind address '", impl->options.bind_host, "'");
  tcp::endpoint ep(addr, impl->options.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return errors::Unavailable("tensor transport: cannot listen on ", impl->options.bind_host, ":",
                               impl->options.port, ": ", ec.message());
  impl->port = impl->acceptor.local_endpoint().port();
  if (impl->options.tls.enabled()) {
    AF_RETURN_IF_ERROR(CheckTlsFiles(impl->options.tls));
    try {
      impl->ssl = std::make_unique<asio::ssl::context>(asio::ssl::context::tls);
      SSL_CTX_set_min_proto_version(impl->ssl->native_handle(), TLS1_3_VERSION);
      impl->ssl->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
      const std::string pass = impl->options.tls.key_passphrase;
      impl->ssl->set_password_callback([pass](size_t, asio::ssl::context::password_purpose) { return pass; });
      impl->ssl->use_certificate_chain_file(impl->options.tls.cert);
      impl->ssl->use_private_key_file(impl->options.tls.key, asio::ssl::context::pem);
      impl->ssl->load_verify_file(impl->options.tls.ca);
    } catch (const std::exception& e) {
      return errors::InvalidArgument("tensor transport: TLS files: ", e.what());
    }
  }
  impl->options.chunk_bytes = std::max<size_t>(4096, std::min<size_t>(impl->options.chunk_bytes, kMaxDataBody)) & ~size_t{7};
  impl->work = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(impl->io.get_executor());
  impl->Accept();
  impl->thread = std::thread([impl] {
    for (;;) {
      try {
        impl->io.run();
        return;
      } catch (...) {  // out of memory in a handler: that connection is lost, the transport goes on
      }
    }
  });
  out->reset(new TensorTransport(std::move(impl)));
  return Status::OK();
}

TensorTransport::~TensorTransport() { Stop(); }

void TensorTransport::Stop() {
  auto impl = impl_;
  if (impl->stopped.exchange(true)) return;
  asio::post(impl->io, [impl] {
    boost::system::error_code ignore;
    impl->acceptor.close(ignore);
    for (auto& [task, out] : impl->outs) impl->CloseOut(out);
    impl->outs.clear();
    for (auto& in : impl->ins) {
      in->closed = true;
      if (in->hello_deadline) in->hello_deadline->cancel();
      in->socket.close(ignore);
    }
    impl->ins.clear();
    impl->work.reset();
  });
  impl->thread.join();
  impl->io.stop();
}

bool TensorTransport::Drain(std::chrono::milliseconds bound) {
  auto impl = impl_;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!impl->stopped.load()) {
    auto idle = std::make_shared<std::promise<bool>>();
    auto f = idle->get_future();
    asio::post(impl->io, [impl, idle] {
      bool all = true;
      for (auto& [task, out] : impl->outs) {
        std::lock_guard<std::mutex> lock(out->wmu);
        if (out->dead) continue;
        all = all && out->queue.empty() && !out->writing && out->pending.empty() && out->lent.empty();
      }
      idle->set_value(all);
    });
    if (f.wait_until(deadline) != std::future_status::ready) return false;
    if (f.get()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

const std::string& TensorTransport::host() const { return impl_->options.bind_host; }
uint16_t TensorTransport::port() const { return impl_->port; }
const std::string& TensorTransport::task() const { return impl_->options.task; }
uint64_t TensorTransport::incarnation() const { return impl_->options.incarnation; }
uint64_t TensorTransport::data_loss_count() const { return impl_->data_loss.load(); }
uint64_t TensorTransport::tls_refused_count() const { return impl_->tls_refused.load(); }
uint64_t TensorTransport::same_host_count() const { return impl_->same_host_reads.load(); }

void TensorTransport::SetPeer(const std::string& task, const std::string& host, uint16_t port, uint64_t incarnation) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->peers[task] = Impl::Peer{host, port, incarnation};
}

bool TensorTransport::HasPeer(const std::string& task) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->peers.count(task) > 0;
}

std::vector<std::string> TensorTransport::Peers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [task, peer] : impl_->peers) out.push_back(task);
  return out;
}

Status TensorTransport::Send(const std::string& task, int64_t step_id, const RendezvousKey& key, const Tensor& value,
                             bool is_dead, bool truncate16) {
  if (impl_->stopped.load()) return errors::Cancelled("tensor transport of ", impl_->options.task, " is stopped");
  if (!HasPeer(task)) return errors::NotFound("tensor transport: task ", task, " is not a peer of ", impl_->options.task);
  auto st = std::make_shared<OutStream>();
  const DataType dtype = value.IsInitialized() ? value.dtype() : DT_FLOAT;
  const TensorShape shape = value.IsInitialized() ? value.shape() : TensorShape({0});
  truncate16 = truncate16 && dtype == DT_FLOAT && value.IsInitialized();
  if (!value.IsInitialized()) {
    // A dead tensor may have no value: an empty float32 stands for it.
    st->payload_len = 0;
  } else if (DataTypeIsStringLike(dtype)) {
    auto enc = std::make_shared<std::string>();
    const std::string* e = value.data<std::string>();
    size_t total = 0;
    for (int64_t i = 0; i < value.NumElements(); ++i) total += 8 + e[i].size();
    enc->reserve(total);
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      Put<uint64_t>(enc.get(), e[i].size());
      enc->append(e[i]);
    }
    st->encoded = enc;
    st->payload = enc->data();
    st->payload_len = enc->size();
  } else if (truncate16) {  // encoded chunk by chunk as it is written
    st->tensor = value;
    st->truncate16 = true;
    st->payload_len = static_cast<uint64_t>(value.NumElements()) * 2;
  } else {
    st->tensor = value;
    st->payload = static_cast<const char*>(value.raw_data());
    st->payload_len = value.TotalBytes();
  }
  const std::string& k = key.str();
  const uint32_t ndims = static_cast<uint32_t>(shape.dims());
  if (k.empty() || k.size() > kMaxKeyBytes || ndims > kMaxDims || st->payload_len > impl_->options.max_payload_bytes)
    return errors::InvalidArgument("tensor transport: cannot send ", key.str(), ": ", ndims, " dims, ",
                                   st->payload_len, " bytes (the most are ", kMaxDims, " dims and ",
                                   impl_->options.max_payload_bytes, " bytes, keys of ", kMaxKeyBytes, " bytes)");
  const uint32_t body = static_cast<uint32_t>(kBeginFixed + k.size() + size_t{8} * ndims);
  uint8_t flags = (is_dead ? kFlagDead : 0) | (truncate16 ? kFlagTruncate16 : 0);
  st->begin = Header(kBegin, flags, 0, body);
  Put<int64_t>(&st->begin, step_id);
  Put<int32_t>(&st->begin, static_cast<int32_t>(dtype));
  Put<uint32_t>(&st->begin, ndims);
  Put<uint64_t>(&st->begin, st->payload_len);
  Put<uint32_t>(&st->begin, static_cast<uint32_t>(k.size()));
  st->begin += k;
  for (uint32_t d = 0; d < ndims; ++d) Put<int64_t>(&st->begin, shape.dim_size(static_cast<int>(d)));
  if (st->payload_len <= kDirectMaxBytes && !st->truncate16 && impl_->WriteDirect(task, st)) return Status::OK();
  asio::post(impl_->io, [impl = impl_, task, st]() mutable { impl->Enqueue(task, std::move(st)); });
  return Status::OK();
}

}  // namespace actorflow
