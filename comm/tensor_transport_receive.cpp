// The incoming side of the tensor transport (comm/tensor_transport_impl.hpp):
// accepting connections, the hello, frames read and validated before anything
// is allocated, tensors read from the socket or from a same-host sender's
// memory, and handed to the callbacks whole. The io thread only.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "actorflow/comm/tensor_transport_impl.hpp"

namespace actorflow {

// ---------------------------------------------------------------------
void TensorTransport::Impl::Accept() {
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

void TensorTransport::Impl::CloseIn(const std::shared_ptr<In>& in, const Status& s, bool is_data_loss) {
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
    if (!st.discard) Reject(in, st, s);
  in->streams.clear();
  if (!in->task.empty()) ReportFailed(in->task, in->incarnation, s);  // not for a stale incarnation or a stranger
}

void TensorTransport::Impl::Bad(const std::shared_ptr<In>& in, const std::string& why) {
  CloseIn(in, errors::DataLoss("tensor transport: bad frame from ", in->task.empty() ? "an unknown peer" : in->task,
                               ": ", why, "; connection closed"),
          true);
}

void TensorTransport::Impl::ReadHeader(const std::shared_ptr<In>& in) {
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

void TensorTransport::Impl::OnHeader(const std::shared_ptr<In>& in) {
  frame::Header h;
  const Status s = frame::DecodeHeader(in->header, &h);
  if (!s.ok()) return Bad(in, s.message());
  const uint8_t kind = h.kind, flags = h.flags;
  const uint32_t stream = h.stream, body_len = h.body_len;
  if (!in->hello && kind != frame::kHello) return Bad(in, "a frame before the hello");
  if (kind == frame::kHello || kind == frame::kBegin) {
    if (in->hello && kind == frame::kHello) return Bad(in, "a second hello");
    in->body.resize(body_len);
    ReadIn(in, in->body.data(), body_len,
                     [self = shared_from_this(), in, kind, flags, stream](const boost::system::error_code& ec,
                                                                          size_t) {
                       if (in->closed) return;
                       if (ec) return self->Bad(in, "truncated frame: " + ec.message());
                       if (kind == frame::kHello) self->OnHello(in);
                       else self->OnBegin(in, flags, stream);
                     });
    return;
  }
  if (kind == frame::kLend) {
    in->body.resize(body_len);
    ReadIn(in, in->body.data(), body_len, [self = shared_from_this(), in, stream](const boost::system::error_code& ec,
                                                                                  size_t) {
      if (in->closed) return;
      if (ec) return self->Bad(in, "truncated frame: " + ec.message());
      uint64_t address = 0;
      const Status s = frame::DecodeLend(in->body.data(), in->body.size(), &address);
      if (!s.ok()) return self->Bad(in, s.message());
      self->OnLend(in, stream, address);
    });
    return;
  }
  if (kind != frame::kData) return Bad(in, "a frame of kind " + std::to_string(kind) + " from a sender");
  auto it = in->streams.find(stream);
  if (it == in->streams.end()) return Bad(in, "data for unknown stream " + std::to_string(stream));
  InStream& st = it->second;
  if (st.lent) return Bad(in, "data for a lent stream");
  if (body_len > st.payload_len - st.received)
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
void TensorTransport::Impl::ReadIn(const std::shared_ptr<In>& in, char* dest, size_t n, H h) {
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
size_t TensorTransport::Impl::RecvNow(In& in, char* buf, size_t len, boost::system::error_code* ec) {
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
void TensorTransport::Impl::Fill(const std::shared_ptr<In>& in, size_t need, Cont cont) {
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
void TensorTransport::Impl::Continue(const std::shared_ptr<In>& in, F f) {
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
void TensorTransport::Impl::ReadBulk(const std::shared_ptr<In>& in, char* dest, size_t len, Done done) {
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

void TensorTransport::Impl::SetLowWater(const std::shared_ptr<In>& in, size_t bytes) {
  const int v = static_cast<int>(bytes);
  if (in->low_water == v) return;
  if (::setsockopt(in->socket.native_handle(), SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0) in->low_water = v;
}

void TensorTransport::Impl::ReadDiscard(const std::shared_ptr<In>& in, uint32_t stream, uint64_t left, size_t n) {
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

void TensorTransport::Impl::OnHello(const std::shared_ptr<In>& in) {
  frame::Hello hello;
  const Status s = frame::DecodeHello(in->body.data(), in->body.size(), &hello);
  if (!s.ok()) return Bad(in, s.message());
  in->task = std::move(hello.task);
  in->incarnation = hello.incarnation;
  in->hello = true;
  if (in->hello_deadline) in->hello_deadline->cancel();
  // The sender offers its memory: take it if this process can read the proof there.
  if (hello.has_proof && options.same_host && !in->tls) in->peer_memory = PeerMemory::Attach(hello.proof);
  if (hello.has_proof && !in->tls) SendControl(in, in->peer_memory ? frame::kSameHost : frame::kNotSameHost, 0);
  ReadHeader(in);
}

// Queues a frame for the sender of `in` (same-host answers), written in order.
void TensorTransport::Impl::SendControl(const std::shared_ptr<In>& in, uint8_t kind, uint32_t stream) {
  in->control_queue += Header(kind, 0, stream, 0);
  if (!in->control_writing.empty()) return;
  WriteControl(in);
}

void TensorTransport::Impl::WriteControl(const std::shared_ptr<In>& in) {
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
void TensorTransport::Impl::OnLend(const std::shared_ptr<In>& in, uint32_t stream, uint64_t address) {
  if (!in->peer_memory) return Bad(in, "a lent tensor from a peer whose memory this process cannot read");
  auto it = in->streams.find(stream);
  if (it == in->streams.end()) return Bad(in, "a lend for unknown stream " + std::to_string(stream));
  InStream& st = it->second;
  if (st.lent || st.received != 0 || st.payload_len == 0 || DataTypeIsStringLike(st.dtype))
    return Bad(in, "a lend for stream " + std::to_string(stream) + " that cannot take one");
  if (st.discard) {  // rejected at its begin: nothing to read, the sender may let it go
    in->streams.erase(it);
    SendControl(in, frame::kReturn, stream);
    return ReadHeader(in);
  }
  st.lent = true;
  // Read in pieces from the io loop, between this and other connections' frames.
  asio::post(io, [self = shared_from_this(), in, stream, address] { self->ReadLent(in, stream, address, 0); });
  ReadHeader(in);
}

void TensorTransport::Impl::ReadLent(const std::shared_ptr<In>& in, uint32_t stream, uint64_t address,
                                     uint64_t offset) {
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
  SendControl(in, frame::kReturn, stream);
  Complete(in, it);
}

void TensorTransport::Impl::OnBegin(const std::shared_ptr<In>& in, uint8_t flags, uint32_t stream) {
  frame::Begin begin;
  InStream st;
  Status s = frame::DecodeBegin(in->body.data(), in->body.size(), flags, options.max_payload_bytes, &begin,
                                &st.shape);
  if (!s.ok()) return Bad(in, s.message());
  if (in->streams.count(stream)) return Bad(in, "stream " + std::to_string(stream) + " begun twice");
  st.channel = static_cast<Channel>(begin.channel);
  st.dtype = static_cast<DataType>(begin.dtype);
  st.payload_len = begin.payload_len;
  st.flags = flags;
  st.meta = std::move(begin.meta);
  const ChannelHandler& handler = HandlerOf(st.channel);
  if (!handler.deliver)
    return Bad(in, "a message on channel " + std::to_string(begin.channel) + ", which this task does not take");
  if (handler.check && !(s = handler.check(in->task, st.meta)).ok()) return Bad(in, s.message());
  const bool has_tensor = st.dtype != DT_INVALID;
  const bool is_string = DataTypeIsStringLike(st.dtype);
  if (is_string) st.extra = static_cast<uint64_t>(st.shape.num_elements()) * sizeof(std::string);
  // The sender must be the incarnation the membership knows for its task.
  Status reject;
  if (in->inflight + st.payload_len + st.extra > options.max_inflight_bytes) {
    reject = errors::ResourceExhausted("tensor transport: more than ", options.max_inflight_bytes,
                                       " bytes in flight from ", in->task);
  } else if (!Current(in->task, in->incarnation)) {
    const auto record = in->task == options.task ? std::nullopt : options.membership->Find(in->task);
    const bool found = record && record->incarnation != 0;
    const uint64_t known = found ? record->incarnation : 0;
    reject = errors::Aborted("tensor from task ", in->task, " with incarnation ", in->incarnation,
                             found ? " after the task restarted (this session knows incarnation " +
                                         std::to_string(known) + ")"
                                   : " that this process does not know as a peer");
  }
  if (reject.ok() && has_tensor) {
    try {
      if (is_string) {
        st.staging.resize(st.payload_len);
        st.tensor = Tensor(st.dtype, st.shape);
      } else {
        reject = Tensor::Create(nullptr, st.dtype, st.shape, &st.tensor);
      }
    } catch (...) {
      reject = errors::ResourceExhausted("no memory for a tensor of ", st.payload_len, " bytes from ", in->task);
    }
  }
  if (!reject.ok()) {
    st.discard = true;
    st.tensor = Tensor();
    std::string().swap(st.staging);
    Reject(in, st, reject);
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

void TensorTransport::Impl::Complete(const std::shared_ptr<In>& in, std::unordered_map<uint32_t,
                                     InStream>::iterator it) {
  InStream st = std::move(it->second);
  if (!st.discard) in->inflight -= st.payload_len + st.extra;
  in->streams.erase(it);
  if (st.discard) return;
  // A bad string payload fails its step as well as the connection.
  if (DataTypeIsStringLike(st.dtype)) {
    const Status s =
        frame::DecodeStrings(st.staging.data(), st.payload_len, st.tensor.data<std::string>(), st.shape.num_elements());
    if (!s.ok()) {  // a bad string payload fails its message as well as the connection
      Reject(in, st, errors::DataLoss("tensor transport: bad string tensor from ", in->task, ": ", s.message()));
      return Bad(in, s.message());
    }
  }
  tensors_received.fetch_add(1);
  const ChannelHandler& handler = HandlerOf(st.channel);
  if (handler.deliver) handler.deliver(in->task, std::move(st.meta), std::move(st.tensor), st.flags & kFlagDead);
}

}  // namespace actorflow
