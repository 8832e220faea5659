#include "actorflow/comm/tensor_transport.hpp"

#include <algorithm>
#include <future>

#include "actorflow/comm/tensor_transport_impl.hpp"

namespace actorflow {

// --- outgoing -----------------------------------------------------------
// Marks `out` dead and closes it; returns the tensors it still held.
std::deque<std::shared_ptr<OutStream>> TensorTransport::Impl::CloseOut(const std::shared_ptr<Out>& out) {
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

void TensorTransport::Impl::FailOut(const std::shared_ptr<Out>& given, const Status& s) {
  // A copy: `given` may be the very entry of `outs` erased below (Cut, FailPeer).
  const std::shared_ptr<Out> out = given;
  if (out->dead) return;
  auto it = outs.find(out->task);
  if (it != outs.end() && it->second == out) outs.erase(it);
  for (auto& st : CloseOut(out)) RejectOut(out->task, *st, s);
  // Only the current incarnation's failure is the peer's, as for incoming
  // connections: the old connection to a task that restarted closes when it
  // will, possibly after the new incarnation joined a collective group, which
  // this report would break again (seen: the survivor of a restart re-formed
  // its group a second time and aborted the newcomer's waiting collective).
  ReportFailed(out->task, out->peer.incarnation, s);
  out_failures.fetch_add(1);  // after the report, if any (failed_connection_count)
}

void TensorTransport::Impl::ReportFailed(const std::string& task, uint64_t incarnation, const Status& s) {
  if (!Current(task, incarnation)) return;
  if (callbacks.peer_failed) callbacks.peer_failed(task, s);
  // The membership's subscribers (collective groups) learn it there. This
  // transport's own listener ignores a failure: no loop.
  options.membership->MarkFailed(task, incarnation, s);
}

void TensorTransport::Impl::OnMembershipChange(const MembershipChange& change) {
  if (!change.Superseded() || stopped.load()) return;
  const std::string& task = change.task.name;
  {
    std::lock_guard<std::mutex> lock(mu);
    direct.erase(task);  // no direct write reaches the old process from now on
  }
  const Status why = change.kind == MembershipChange::Kind::kRemoved
                         ? errors::Unavailable("tensor transport: task ", task, " left the cluster")
                         : errors::Aborted("tensor transport: task ", task, " moved or restarted");
  asio::post(io, [self = shared_from_this(), task, why] { self->DropOut(task, why); });
}

void TensorTransport::Impl::DropOut(const std::string& task, const Status& why) {
  auto it = outs.find(task);
  if (it == outs.end() || Addresses(task, it->second->peer)) return;
  auto old = it->second;
  outs.erase(it);
  for (auto& st : CloseOut(old)) RejectOut(task, *st, why);
  out_failures.fetch_add(1);  // ended without a report (failed_connection_count)
}

auto TensorTransport::Impl::OutFor(const std::string& task, const Peer& peer) -> std::shared_ptr<Out> {
  auto it = outs.find(task);
  if (it != outs.end()) {
    auto& o = it->second;
    if (o->peer.host == peer.host && o->peer.port == peer.port && o->peer.incarnation == peer.incarnation) return o;
    // The task moved or restarted: the old connection goes.
    auto old = o;
    outs.erase(it);
    for (auto& st : CloseOut(old))
      RejectOut(task, *st, errors::Aborted("tensor transport: task ", task, " moved or restarted"));
  }
  auto out = std::make_shared<Out>(io);
  out->task = task;
  out->peer = peer;
  const bool offer = options.same_host && !ssl;  // the same-host path: plaintext connections only
  frame::Hello hello;
  hello.incarnation = options.incarnation;
  hello.task = options.task;
  hello.has_proof = offer;
  if (offer) hello.proof = ThisProcessProof();
  frame::AppendHello(&out->hello, hello);
  out->offered = offer;
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

void TensorTransport::Impl::Connected(const std::shared_ptr<Out>& out) {
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
void TensorTransport::Impl::ReadControl(const std::shared_ptr<Out>& out) {
  asio::async_read(out->socket, asio::buffer(out->control), [self = shared_from_this(), out](
                                                                const boost::system::error_code& ec, size_t) {
    if (out->dead) return;
    if (ec)
      return self->FailOut(out, errors::Unavailable("tensor transport: task ", out->task, " closed the connection: ",
                                                    ec.message()));
    frame::Header h;
    const bool good = frame::DecodeHeader(out->control, &h).ok();
    const uint8_t kind = h.kind;
    const uint32_t stream = h.stream;
    if (!good || (kind != frame::kSameHost && kind != frame::kNotSameHost && kind != frame::kReturn)) {
      self->data_loss.fetch_add(1);
      return self->FailOut(out, errors::DataLoss("tensor transport: a bad answer from task ", out->task,
                                                 "; connection closed"));
    }
    if (kind == frame::kSameHost || kind == frame::kNotSameHost) {
      std::lock_guard<std::mutex> lock(out->wmu);
      out->answered = true;
      out->same_host = kind == frame::kSameHost;
      self->WriteNext(out);  // tensors held for the answer go now
    } else {
      auto it = out->lent.find(stream);
      if (it != out->lent.end()) {
        out->lent_bytes -= it->second->payload_len;
        out->lent.erase(it);  // read: its tensor may go
        self->lent_returned.fetch_add(1);
      }
    }
    self->ReadControl(out);
  });
}

void TensorTransport::Impl::Wrote(const std::shared_ptr<Out>& out, const boost::system::error_code& ec) {
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
void TensorTransport::Impl::WriteNext(const std::shared_ptr<Out>& out) {
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
      out->chunk_headers.emplace_back();
      frame::AppendLend(&out->chunk_headers.back(), st->id, reinterpret_cast<uint64_t>(st->tensor.raw_data()));
      out->buffers.push_back(asio::buffer(out->chunk_headers.back()));
      gathered += st->begin.size() + kHeaderBytes + frame::kLendBytes;
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
      out->chunk_headers.push_back(Header(frame::kData, 0, st->id, static_cast<uint32_t>(n)));
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
bool TensorTransport::Impl::Lendable(const Out& out, const OutStream& st) {
  return out.same_host && !st.encoded && st.tensor.IsInitialized() && st.tensor.TotalBytes() >= kLendMinBytes &&
         out.lent_bytes + st.payload_len <= kBegunBudget;
}

// Writes `st` now, from the caller's thread, when its task's connection is
// plaintext, past its hello, current and idle (nothing queued or being
// written). One non-blocking sendmsg; what the socket did not take is
// written by the io thread before anything else. False: queue it instead.
bool TensorTransport::Impl::WriteDirect(const std::string& task, const std::shared_ptr<OutStream>& st) {
  std::shared_ptr<Out> out;
  {
    // Only connections to where the membership has the task now are here
    // (a task that moved or restarted is queued: the io thread replaces its connection).
    std::lock_guard<std::mutex> lock(mu);
    auto it = direct.find(task);
    if (it == direct.end() || posted.count(task) != 0) return false;
    out = it->second;
  }
  std::unique_lock<std::mutex> lock(out->wmu, std::try_to_lock);
  if (!lock.owns_lock() || out->dead || out->writing || !out->queue.empty() || !out->pending.empty()) return false;
  const uint32_t id = out->next_stream++;
  frame::SetStream(st->begin.data(), id);
  const std::string chunk = st->payload_len > 0
                                ? Header(frame::kData, 0, id, static_cast<uint32_t>(st->payload_len))
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

void TensorTransport::Impl::Enqueue(const std::string& task, std::shared_ptr<OutStream> st) {
  struct Posted {  // counted out once `st` is queued (or rejected): Send may write directly again
    Impl* impl;
    const std::string& task;
    ~Posted() {
      std::lock_guard<std::mutex> lock(impl->mu);
      auto it = impl->posted.find(task);
      if (it != impl->posted.end() && --it->second <= 0) impl->posted.erase(it);
    }
  } counted{this, task};
  if (stopped.load()) return;
  const auto record = options.membership->Find(task);
  if (!record || record->host.empty() || record->port == 0) {
    return RejectOut(task, *st, errors::Unavailable("tensor transport: no address for task ", task));
  }
  const Peer peer{record->host, record->port, record->incarnation};
  auto out = OutFor(task, peer);
  if (!out) return RejectOut(task, *st, errors::Unavailable("tensor transport: task ", task, " unreachable"));
  std::lock_guard<std::mutex> lock(out->wmu);
  st->id = out->next_stream++;
  frame::SetStream(st->begin.data(), st->id);
  out->queue.push_back(std::move(st));
  WriteNext(out);
}

void TensorTransport::Impl::SendFaulty(const std::string& task, std::shared_ptr<OutStream> st) {
  auto self = shared_from_this();
  faults->Send(
      task, [self, task, st] { self->Enqueue(task, st); }, [self, task, st] { self->Cut(task, st); });
}

void TensorTransport::Impl::Cut(const std::string& task, const std::shared_ptr<OutStream>& st) {
  if (stopped.load()) return;
  const Status why = errors::Unavailable("tensor transport: the connection to task ", task,
                                         " was cut (injected fault, test only: ", kTransportFaultsVariable, ")");
  auto it = outs.find(task);
  if (it != outs.end()) FailOut(it->second, why);
  RejectOut(task, *st, why);
}

TensorTransport::TensorTransport(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status TensorTransport::Start(TransportOptions options, TransportCallbacks callbacks,
                              std::unique_ptr<TensorTransport>* out) {
  if (!options.membership) return errors::InvalidArgument("tensor transport of ", options.task, ": no membership");
  if (options.membership->self() != options.task || options.membership->self_incarnation() != options.incarnation)
    return errors::InvalidArgument("tensor transport of ", options.task, " (incarnation ", options.incarnation,
                                   "): the membership is ", options.membership->self(), "'s (incarnation ",
                                   options.membership->self_incarnation(), ")");
  auto impl = std::make_shared<Impl>();
  impl->options = std::move(options);
  impl->callbacks = std::move(callbacks);
  TransportFaults faults = impl->options.test_faults;
  if (!faults.enabled()) AF_RETURN_IF_ERROR(TransportFaultsFromEnvironment(&faults));
  std::chrono::microseconds spin = kDefaultSpin;
  if (impl->options.spin) spin = *impl->options.spin;
  else AF_RETURN_IF_ERROR(SpinWindowFromEnvironment(nullptr, &spin));
  if (spin.count() < 0 || spin.count() > kMaxSpinMicros)
    return errors::InvalidArgument("tensor transport of ", impl->options.task, ": spin window of ", spin.count(),
                                   " us (0 to ", kMaxSpinMicros, ")");
  impl->options.spin = spin;
  if (faults.enabled()) impl->faults = std::make_unique<FaultInjector>(faults, impl->options.task, impl->io);
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
  impl->options.chunk_bytes =
      std::max<size_t>(4096, std::min<size_t>(impl->options.chunk_bytes, frame::kMaxDataBody)) & ~size_t{7};
  impl->work = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(impl->io.get_executor());
  impl->Accept();
  std::weak_ptr<Impl> weak = impl;
  impl->subscription = impl->options.membership->Subscribe([weak](const MembershipChange& change) {
    if (auto self = weak.lock()) self->OnMembershipChange(change);
  });
  impl->thread = std::thread([impl] {
    for (;;) {
      try {
        RunPolling(impl->io, *impl->options.spin, &impl->poll);
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
  impl->options.membership->Unsubscribe(impl->subscription);  // no change posts anything after this
  asio::post(impl->io, [impl] {
    boost::system::error_code ignore;
    impl->acceptor.close(ignore);
    if (impl->faults) impl->faults->Stop();
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
      bool all = !impl->faults || impl->faults->idle();  // test-only: messages held on their way out
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
uint64_t TensorTransport::spin_hits() const { return impl_->poll.found_spinning.load(); }
uint64_t TensorTransport::parked_wakeups() const { return impl_->poll.woken.load(); }
uint64_t TensorTransport::spin_cooldowns() const { return impl_->poll.gave_away.load(); }
uint64_t TensorTransport::data_loss_count() const { return impl_->data_loss.load(); }
uint64_t TensorTransport::tls_refused_count() const { return impl_->tls_refused.load(); }
uint64_t TensorTransport::same_host_count() const { return impl_->same_host_reads.load(); }
uint64_t TensorTransport::failed_connection_count() const { return impl_->out_failures.load(); }
uint64_t TensorTransport::lent_count() const { return impl_->lent_returned.load(); }
uint64_t TensorTransport::received_count() const { return impl_->tensors_received.load(); }

Status TensorTransport::Send(const std::string& task, Channel channel, std::string meta, const Tensor& value,
                             SendFlags flags) {
  if (impl_->stopped.load()) return errors::Cancelled("tensor transport of ", impl_->options.task, " is stopped");
  if (task == impl_->options.task || !impl_->options.membership->HasAddress(task))
    return errors::NotFound("tensor transport: task ", task, " is not a peer of ", impl_->options.task);
  auto st = std::make_shared<OutStream>();
  st->channel = channel;
  frame::Begin begin;
  begin.channel = static_cast<uint8_t>(channel);
  const bool has_tensor = value.IsInitialized();
  const DataType dtype = has_tensor ? value.dtype() : DT_INVALID;
  const bool truncate16 = flags.truncate16 && dtype == DT_FLOAT;
  if (!has_tensor) {
    // No tensor (a control message, or a dead tensor without a value).
  } else if (DataTypeIsStringLike(dtype)) {
    auto enc = std::make_shared<std::string>();
    frame::AppendStrings(enc.get(), value.data<std::string>(), value.NumElements());
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
  if (has_tensor) begin.dims = value.shape().dim_sizes();
  if (meta.size() > frame::kMaxMetaBytes || begin.dims.size() > frame::kMaxDims ||
      st->payload_len > impl_->options.max_payload_bytes)
    return errors::InvalidArgument("tensor transport: cannot send a message of ", meta.size(), " meta bytes, ",
                                   begin.dims.size(), " dims, ", st->payload_len, " bytes (the most are ",
                                   frame::kMaxMetaBytes, " meta bytes, ", frame::kMaxDims, " dims and ",
                                   impl_->options.max_payload_bytes, " bytes)");
  begin.dtype = static_cast<int32_t>(dtype);
  begin.payload_len = st->payload_len;
  begin.meta = std::move(meta);
  const uint8_t frame_flags = (flags.is_dead ? kFlagDead : 0) | (truncate16 ? kFlagTruncate16 : 0);
  frame::AppendBegin(&st->begin, frame_flags, 0, begin);
  st->meta = std::move(begin.meta);
  if (impl_->faults) {  // test-only
    impl_->SendFaulty(task, std::move(st));
    return Status::OK();
  }
  if (st->payload_len <= kDirectMaxBytes && !st->truncate16 && !flags.queued && impl_->WriteDirect(task, st))
    return Status::OK();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->posted[task];
  }
  asio::post(impl_->io, [impl = impl_, task, st]() mutable { impl->Enqueue(task, std::move(st)); });
  return Status::OK();
}

void TensorTransport::FailPeer(const std::string& task, const Status& why) {
  if (impl_->stopped.load()) return;
  asio::post(impl_->io, [impl = impl_, task, why] {
    if (impl->stopped.load()) return;
    auto it = impl->outs.find(task);
    if (it != impl->outs.end()) impl->FailOut(it->second, why);
    std::vector<std::shared_ptr<Impl::In>> from;
    for (const auto& in : impl->ins)
      if (in->task == task) from.push_back(in);
    for (const auto& in : from) impl->CloseIn(in, why, false);
  });
}

Status TensorTransport::SendMessage(const std::string& task, Channel channel, std::string meta) {
  return Send(task, channel, std::move(meta), Tensor());
}

}  // namespace actorflow
