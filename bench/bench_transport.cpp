// Tensors between two processes on this machine (issue 15's figures).
//
//   bench_transport               the driver: starts `bench_transport receiver` as a child process
//   bench_transport receiver      (internal) the receiving process
//   bench_transport latency       the latency figures alone
//   bench_transport compression   the 16-bit compression figure alone
//   bench_transport link          the same on a 10 Gbit/s link (loopback of a network namespace
//                                 of its own, shaped with tc's tbf), as between machines
//   bench_transport tls           the transport with mutual TLS beside raw Boost.Asio TLS 1.3
//                                 (the same certificates, made with the openssl command)
//   bench_transport steps CLI     a step across processes (an `actorflow server` started from CLI)
//                                 beside the same partitions on two devices of one process; steps
//                                 of 2 and 12 hops give one hop's cost inside a step
//
// Throughput, one way, 4 KiB to 64 MiB, each size measured in interleaved rounds:
//   transport      actorflow's tensor transport (comm/tensor_transport.hpp) as it runs between two
//                  processes of one host: from 256 KiB, the receiver copies the tensor straight from
//                  the sender's memory (comm/same_host.hpp); smaller ones over TCP
//   transport_tcp  the same with the same-host path off, as between machines: the tensor's own
//                  bytes, framed and chunked over TCP, read into a new tensor on the other side
//   raw_asio   the peer: a plain Boost.Asio socket pair writing the same bytes (a 16-byte header
//              and the payload) and reading them into a reused buffer
//   caf        the peer: CAF 0.17 remote messages carrying the tensor (BASP)
// Per size, a ratio line says which path ran: of the tensors_sent_each by each
// transport, how many the receiver read from the sender's memory (same_host_tensors;
// none below 256 KiB) and how many with the same-host path off (must be 0).
// The receiver acknowledges the last tensor of a batch; the sender times from its first send
// to that acknowledgement; 11 interleaved rounds per size (medians of 5 swung by a third here),
// with a 50 ms pause after each batch: CAF's workers poll for tens of milliseconds after the
// CAF peer's batch, and took the CPU from whichever implementation came next.
// Latency: a 4-byte tensor there and back, one at a time (p50 of the round trip / 2 is the
// one-way hop), in blocks of 100 per implementation with a pause after each (CAF's workers
// poll for a while after a message: alternating single calls would charge that to the others);
// a ratio line says how the replies reached the driver's I/O thread (found spinning, or woken).
// AF_BENCH_CHUNK_MB sets the sender's transport chunk size (default 4 MiB), for experiments.
// Compression: 64 MiB of float32 sent as 16 bits over TCP (effective bytes/s: the float32
// bytes over the time), beside the same float32 over TCP.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <openssl/ssl.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/net/rendezvous_key.hpp"

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace actorflow;

namespace {

constexpr char kSender[] = "/job:sender/replica:0/task:0";
constexpr char kSenderTcp[] = "/job:sender/replica:0/task:1";  // the same, its same-host path off
constexpr char kReceiver[] = "/job:receiver/replica:0/task:0";
using last_atom = caf::atom_constant<caf::atom("last")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;

// A key from `sender` to the receiver, or back (to_receiver false).
RendezvousKey Key(const std::string& name, bool to_receiver, const std::string& sender = kSender) {
  const std::string s = (to_receiver ? sender : std::string(kReceiver)) + "/device:CPU:0";
  const std::string r = (to_receiver ? std::string(kReceiver) : sender) + "/device:CPU:0";
  return MakeRendezvousKey(s, 1, r, name, 0, 0);
}

// Sends `t` on the rendezvous channel under (step, key), as the rendezvous actor does.
void SendKeyed(TensorTransport* tp, const std::string& to, int64_t step, const RendezvousKey& key, const Tensor& t,
               bool truncate = false) {
  (void)tp->Send(to, Channel::kRendezvous, EncodeRendezvousMeta(step, key), t, SendFlags{false, truncate});
}

struct NetConfig : caf::actor_system_config {
  NetConfig() {
    RegisterMessageTypes(*this);
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{1});
  }
};

// ---- receiver ---------------------------------------------------------------

template <class Stream>
void RawReceiveOn(Stream& sock) {
  std::vector<char> buf;
  char header[16];
  boost::system::error_code ec;
  for (;;) {
    asio::read(sock, asio::buffer(header), ec);
    if (ec) return;
    uint32_t len;
    std::memcpy(&len, header + 12, 4);
    if (buf.size() < len) buf.resize(len);
    asio::read(sock, asio::buffer(buf.data(), len), ec);
    if (ec) return;
    if (header[5] & 1) {  // last of a batch: acknowledge
      char ack = 1;
      asio::write(sock, asio::buffer(&ack, 1), ec);
      if (ec) return;
    }
  }
}
void RawReceive(tcp::socket sock) { RawReceiveOn(sock); }

// The membership of an endpoint's process, task `task` (each endpoint here
// stands for a process of its own); it lives until the program exits, after
// every endpoint.
Membership* MembershipOf(const std::string& task, uint64_t incarnation) {
  static std::map<std::string, std::unique_ptr<Membership>> all;
  auto& m = all[task];
  if (!m) m = std::make_unique<Membership>(task, incarnation);
  return m.get();
}

// The receiving process's transport: it acknowledges each batch's last tensor
// with a 4-byte tensor back to the sender. Null when it cannot start.
std::unique_ptr<TensorTransport> ReceivingEndpoint(const TlsOptions& tls) {
  std::unique_ptr<TensorTransport> transport;
  auto tp = std::make_shared<TensorTransport*>(nullptr);
  TransportOptions to;
  to.task = kReceiver;
  to.incarnation = 2;
  to.membership = MembershipOf(kReceiver, 2);
  to.tls = tls;
  TransportCallbacks cb;
  cb.handler(Channel::kRendezvous).deliver = [tp](const std::string& sender, std::string meta, Tensor, bool) {
    int64_t step;
    RendezvousKey key;
    if (DecodeRendezvousMeta(meta, &step, &key).ok() && key.str().find(";last") != std::string::npos)
      SendKeyed(*tp, sender, step, Key("ack", false, sender), Tensor::Scalar<float>(1.f));
  };
  if (!TensorTransport::Start(to, cb, &transport).ok()) return nullptr;
  *tp = transport.get();
  return transport;
}

// Reads "task port" lines from the driver until "go", makes each a peer of
// `transport` (incarnation 1), then answers "ready".
void TakeSenders(TensorTransport* transport) {
  std::string task;
  int port = 0;
  while (std::cin >> task && task != "go" && std::cin >> port)
    MembershipOf(transport->task(), transport->incarnation())
        ->Update(TaskRecord::At(task, "127.0.0.1", static_cast<uint16_t>(port), 1));
  std::cout << "ready" << std::endl;
}

// The raw peer's accepting thread: each connection (TCP_NODELAY) is served
// by `serve` on a thread of its own, until the acceptor closes.
std::thread AcceptEach(asio::io_context& io, tcp::acceptor& acceptor, std::function<void(tcp::socket)> serve) {
  return std::thread([&io, &acceptor, serve] {
    for (;;) {
      tcp::socket s(io);
      boost::system::error_code ec;
      acceptor.accept(s, ec);
      if (ec) return;
      s.set_option(tcp::no_delay(true));
      std::thread(serve, std::move(s)).detach();
    }
  });
}

int Receiver() {
  // Raw Asio.
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::thread raw = AcceptEach(io, acceptor, RawReceive);
  // The tensor transport: acknowledges a tensor named "last..." with a 4-byte tensor back.
  std::unique_ptr<TensorTransport> transport = ReceivingEndpoint(TlsOptions());
  if (!transport) return 1;
  // CAF remote messages.
  NetConfig cfg;
  caf::actor_system sys(cfg);
  auto counter = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](const Tensor&) {}, [](const Tensor&, last_atom) { return ack_atom::value; }};
  });
  auto caf_port = sys.middleman().publish(counter, 0, "127.0.0.1");
  if (!caf_port) return 1;
  std::cout << acceptor.local_endpoint().port() << " " << transport->port() << " " << *caf_port << std::endl;
  // The driver's transports, then wait for the end of input.
  TakeSenders(transport.get());
  std::string line;
  while (std::cin >> line) {
  }
  caf::anon_send_exit(counter, caf::exit_reason::user_shutdown);
  sys.middleman().unpublish(counter, *caf_port);
  acceptor.close();
  transport.reset();
  std::_Exit(0);  // detached reader threads: leave without unwinding them
}

// ---- driver ---------------------------------------------------------------

using bench::Child;

// This program again, as `args`, its stdin and stdout piped to this one.
Child SpawnSelf(const char* self, const std::vector<std::string>& args) {
  Child c = bench::SpawnPiped(self, args);
  if (c.pid < 0) std::exit(1);
  return c;
}

struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t acks = 0;
  void Ack() {
    {
      std::lock_guard<std::mutex> l(mu);
      ++acks;
    }
    cv.notify_all();
  }
  void WaitFor(uint64_t n) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return acks >= n; });
  }
};

// A transport of the driver's, task `task`, sending to the receiver (whose
// transport port is `peer_port`); counts acknowledgements in `waiter`.
// `same_host` off: every byte over TCP. AF_BENCH_CHUNK_MB sets its chunk
// size. Null when it cannot start.
std::unique_ptr<TensorTransport> SendingEndpoint(const std::string& task, bool same_host, const TlsOptions& tls,
                                                 Waiter* waiter, int peer_port) {
  std::unique_ptr<TensorTransport> transport;
  TransportOptions to;
  to.task = task;
  to.incarnation = 1;
  to.membership = MembershipOf(task, 1);
  to.tls = tls;
  to.same_host = same_host;
  if (const char* c = std::getenv("AF_BENCH_CHUNK_MB")) to.chunk_bytes = static_cast<size_t>(std::atoi(c)) << 20;
  TransportCallbacks cb;
  cb.handler(Channel::kRendezvous).deliver = [waiter](const std::string&, std::string, Tensor, bool) { waiter->Ack(); };
  if (!TensorTransport::Start(to, cb, &transport).ok()) return nullptr;
  to.membership->Update(TaskRecord::At(kReceiver, "127.0.0.1", static_cast<uint16_t>(peer_port), 2));
  return transport;
}

// Introduces the driver's transports to the receiver through its pipes.
bool Introduce(const Child& child, const std::vector<const TensorTransport*>& transports) {
  for (const TensorTransport* t : transports) std::fprintf(child.to, "%s %d\n", t->task().c_str(), t->port());
  std::fprintf(child.to, "go\n");
  std::fflush(child.to);
  char ready[16] = {};
  return std::fscanf(child.from, "%15s", ready) == 1 && std::string(ready) == "ready";
}

// What Driver measures: everything, or one part.
enum class Part { kAll, kLatency, kCompression };

int Driver(const char* self, Part part) {
  Child child = SpawnSelf(self, {"receiver"});
  int raw_port = 0, tp_port = 0, caf_port = 0;
  if (std::fscanf(child.from, "%d %d %d", &raw_port, &tp_port, &caf_port) != 3) return 1;

  Waiter waiter, waiter_tcp;
  std::unique_ptr<TensorTransport> transport = SendingEndpoint(kSender, true, TlsOptions(), &waiter, tp_port);
  std::unique_ptr<TensorTransport> transport_tcp =
      SendingEndpoint(kSenderTcp, false, TlsOptions(), &waiter_tcp, tp_port);
  if (!transport || !transport_tcp || !Introduce(child, {transport.get(), transport_tcp.get()})) return 1;

  asio::io_context io;
  tcp::socket raw(io);
  raw.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(raw_port)));
  raw.set_option(tcp::no_delay(true));

  NetConfig cfg;
  caf::actor_system sys(cfg);
  auto remote = sys.middleman().remote_actor("127.0.0.1", static_cast<uint16_t>(caf_port));
  if (!remote) return 1;
  caf::scoped_actor me{sys};
  uint64_t sent_acks = 0, sent_acks_tcp = 0;

  auto send_raw = [&](const Tensor& t, int n) {
    const uint32_t len = static_cast<uint32_t>(t.TotalBytes());
    char header[16] = {};
    std::memcpy(header + 12, &len, 4);
    for (int i = 0; i < n; ++i) {
      header[5] = i + 1 == n ? 1 : 0;
      std::array<asio::const_buffer, 2> b = {asio::buffer(header), asio::buffer(t.raw_data(), len)};
      asio::write(raw, b);
    }
    char ack;
    asio::read(raw, asio::buffer(&ack, 1));
  };
  // Through the transport whose same-host path is on (`same_host`) or off.
  auto send_transport = [&](const Tensor& t, int n, bool truncate, bool same_host = true) {
    static int64_t step = 0;
    ++step;
    TensorTransport* tp = same_host ? transport.get() : transport_tcp.get();
    for (int i = 0; i < n; ++i)
      SendKeyed(tp, kReceiver, step, Key((i + 1 == n ? "last" : "t") + std::to_string(i), true, tp->task()), t,
                truncate);
    if (same_host) waiter.WaitFor(++sent_acks);
    else waiter_tcp.WaitFor(++sent_acks_tcp);
  };
  auto send_caf = [&](const Tensor& t, int n) {
    for (int i = 0; i + 1 < n; ++i) me->send(*remote, t);
    me->request(*remote, caf::infinite, t, last_atom::value).receive([](ack_atom) {}, [](caf::error&) {});
  };

  // Throughput.
  const std::vector<int64_t> sizes = {int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20,
                                     int64_t{4} << 20,  int64_t{16} << 20, int64_t{64} << 20};
  for (int64_t size : part == Part::kAll ? sizes : std::vector<int64_t>()) {
    Tensor t(DT_FLOAT, TensorShape{size / 4});
    std::memset(t.raw_data(), 1, t.TotalBytes());
    const int n = static_cast<int>(std::max<int64_t>(4, std::min<int64_t>(4000, (int64_t{256} << 20) / size)));
    const uint64_t lent_before = transport->lent_count(), lent_tcp_before = transport_tcp->lent_count();
    auto stats = bench::MeasureInterleaved(11, 1,
                                           {[&] { send_transport(t, n, false); },
                                            [&] { send_transport(t, n, false, false); }, [&] { send_raw(t, n); },
                                            [&] { send_caf(t, n); }},
                                           50);
    // Which path ran: tensors the receiver read from this process's memory
    // (counted once every lent tensor is back), of those sent, per transport.
    transport->Drain(std::chrono::seconds(10));
    transport_tcp->Drain(std::chrono::seconds(10));
    const uint64_t lent = transport->lent_count() - lent_before, lent_tcp = transport_tcp->lent_count() - lent_tcp_before;
    const char* impls[] = {"transport", "transport_tcp", "raw_asio", "caf"};
    for (int i = 0; i < 4; ++i)
      bench::Print("transport_throughput",
                   "\"bytes\":" + std::to_string(size) + ",\"impl\":\"" + impls[i] + "\"", "one_way", "GB/s",
                   stats[i], static_cast<double>(size) * n / 1e9, true);
    // Speed ratios (the others' time over this one's).
    std::printf("{\"bench\":\"transport_throughput\",\"params\":{\"bytes\":%lld},\"ratio_vs_caf\":%.3f,"
                "\"tcp_ratio_vs_raw\":%.3f,\"tcp_ratio_vs_caf\":%.3f,\"tensors_sent_each\":%d,"
                "\"same_host_tensors\":%llu,\"tcp_run_same_host_tensors\":%llu}\n",
                static_cast<long long>(size), stats[3].median / stats[0].median, stats[2].median / stats[1].median,
                stats[3].median / stats[1].median, 12 * n, static_cast<unsigned long long>(lent),
                static_cast<unsigned long long>(lent_tcp));
    if (lent_tcp != 0) {  // the TCP figures would not be TCP's
      std::fprintf(stderr, "bench_transport: the TCP run read %llu tensors of %lld bytes from the peer's memory\n",
                   static_cast<unsigned long long>(lent_tcp), static_cast<long long>(size));
      return 1;
    }
  }
  // 16-bit compression of float32: effective bandwidth, 64 MiB, over TCP
  // (the bytes compression saves are the network's), beside the same tensors
  // whole and raw Asio writing them (what the link carries).
  if (part != Part::kLatency) {
    const char* link_env = std::getenv("AF_BENCH_LINK");
    const std::string link = link_env ? link_env : "loopback";
    Tensor t(DT_FLOAT, TensorShape{(int64_t{64} << 20) / 4});
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = static_cast<float>(i);
    const int n = 4;
    auto stats = bench::MeasureInterleaved(5, 1, {[&] { send_transport(t, n, true, false); },
                                                  [&] { send_transport(t, n, false, false); },
                                                  [&] { send_raw(t, n); }});
    const double bytes = static_cast<double>(t.TotalBytes()) * n / 1e9;
    const char* impls[] = {"truncate16", "float32", "raw_asio_float32"};
    for (int i = 0; i < 3; ++i)
      bench::Print("transport_compression",
                   "\"bytes\":67108864,\"link\":\"" + link + "\",\"impl\":\"" + impls[i] + "\"", "effective",
                   "GB/s", stats[i], bytes, true);
    std::printf("{\"bench\":\"transport_compression\",\"params\":{\"link\":\"%s\"},"
                "\"ratio_truncate16_vs_float32\":%.3f}\n",
                link.c_str(), stats[1].median / stats[0].median);
  }
  // Latency: a 4-byte tensor there and back, one at a time.
  if (part != Part::kCompression) {
    Tensor t = Tensor::Scalar<float>(1.f);
    const uint64_t hits_before = transport->spin_hits(), woken_before = transport->parked_wakeups();
    auto stats = bench::MeasureInterleavedCalls(
        20, 100, {[&] { send_transport(t, 1, false); }, [&] { send_raw(t, 1); }, [&] { send_caf(t, 1); }});
    const char* impls[] = {"transport", "raw_asio", "caf"};
    for (int i = 0; i < 3; ++i)
      bench::Print("transport_latency", std::string("\"bytes\":4,\"impl\":\"") + impls[i] + "\"", "round_trip_p50",
                   "us", stats[i], 1e6);
    // How the replies reached this process's I/O thread (comm/io_poller.hpp):
    // found while it spun, or by a wake-up from the kernel.
    std::printf("{\"bench\":\"transport_latency\",\"ratio_vs_raw_asio\":%.3f,\"io_thread_spin_hits\":%llu,"
                "\"io_thread_parked_wakeups\":%llu}\n",
                stats[0].median / stats[1].median,
                static_cast<unsigned long long>(transport->spin_hits() - hits_before),
                static_cast<unsigned long long>(transport->parked_wakeups() - woken_before));
  }
  fclose(child.to);  // the receiver ends on end of input
  int status = 0;
  waitpid(child.pid, &status, 0);
  raw.close();
  transport.reset();
  transport_tcp.reset();
  return 0;
}


// ---- mutual TLS: the transport beside raw Asio TLS ---------------------------

std::unique_ptr<asio::ssl::context> TlsContext(const std::string& dir, const std::string& name) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_3_VERSION);
  ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  ctx->use_certificate_chain_file(dir + "/" + name + ".pem");
  ctx->use_private_key_file(dir + "/" + name + ".key", asio::ssl::context::pem);
  ctx->load_verify_file(dir + "/ca.pem");
  return ctx;
}

TlsOptions TlsFiles(const std::string& dir, const std::string& name) {
  TlsOptions t;
  t.cert = dir + "/" + name + ".pem";
  t.key = dir + "/" + name + ".key";
  t.ca = dir + "/ca.pem";
  return t;
}

int TlsReceiver(const std::string& dir) {
  asio::io_context io;
  auto ctx = TlsContext(dir, "receiver");
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::thread raw = AcceptEach(io, acceptor, [&ctx](tcp::socket sock) {
    asio::ssl::stream<tcp::socket> tls(std::move(sock), *ctx);
    boost::system::error_code hec;
    tls.handshake(asio::ssl::stream_base::server, hec);
    if (!hec) RawReceiveOn(tls);
  });
  std::unique_ptr<TensorTransport> transport = ReceivingEndpoint(TlsFiles(dir, "receiver"));
  if (!transport) return 1;
  std::cout << acceptor.local_endpoint().port() << " " << transport->port() << std::endl;
  TakeSenders(transport.get());
  std::string line;
  while (std::cin >> line) {
  }
  acceptor.close();
  transport.reset();
  std::_Exit(0);
}

int TlsDriver(const char* self) {
  char tmpl[] = "/tmp/af_bench_tls_XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  std::string cmd = "cd " + dir + " && openssl req -x509 " + ec + " -days 2 -keyout ca.key -out ca.pem -subj /CN=ca";
  for (const char* n : {"sender", "receiver"})
    cmd += std::string(" && openssl req ") + ec + " -keyout " + n + ".key -out " + n + ".csr -subj /CN=" + n +
           " && openssl x509 -req -in " + n + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out " + n +
           ".pem";
  if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) {
    std::fprintf(stderr, "bench_transport tls: the openssl command failed\n");
    return 1;
  }
  Child child = SpawnSelf(self, {"tls-receiver", dir});
  int raw_port = 0, tp_port = 0;
  if (std::fscanf(child.from, "%d %d", &raw_port, &tp_port) != 2) return 1;
  Waiter waiter;
  std::unique_ptr<TensorTransport> transport = SendingEndpoint(kSender, true, TlsFiles(dir, "sender"), &waiter, tp_port);
  if (!transport || !Introduce(child, {transport.get()})) return 1;

  asio::io_context io;
  auto ctx = TlsContext(dir, "sender");
  asio::ssl::stream<tcp::socket> raw(io, *ctx);
  raw.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(raw_port)));
  raw.next_layer().set_option(tcp::no_delay(true));
  raw.handshake(asio::ssl::stream_base::client);
  uint64_t sent_acks = 0;
  for (int64_t size : {int64_t{4} << 20, int64_t{16} << 20, int64_t{64} << 20}) {
    Tensor t(DT_FLOAT, TensorShape{size / 4});
    std::memset(t.raw_data(), 1, t.TotalBytes());
    const int n = static_cast<int>(std::max<int64_t>(4, (int64_t{256} << 20) / size));
    auto stats = bench::MeasureInterleaved(
        5, 1,
        {[&] {
           static int64_t step = 0;
           ++step;
           for (int i = 0; i < n; ++i)
             SendKeyed(transport.get(), kReceiver, step, Key((i + 1 == n ? "last" : "t") + std::to_string(i), true),
                       t);
           waiter.WaitFor(++sent_acks);
         },
         [&] {
           const uint32_t len = static_cast<uint32_t>(t.TotalBytes());
           char header[16] = {};
           std::memcpy(header + 12, &len, 4);
           for (int i = 0; i < n; ++i) {
             header[5] = i + 1 == n ? 1 : 0;
             asio::write(raw, asio::buffer(header));
             asio::write(raw, asio::buffer(t.raw_data(), len));
           }
           char ack;
           asio::read(raw, asio::buffer(&ack, 1));
         }});
    const char* impls[] = {"transport_mtls", "raw_asio_mtls"};
    for (int i = 0; i < 2; ++i)
      bench::Print("transport_throughput_mtls",
                   "\"bytes\":" + std::to_string(size) + ",\"impl\":\"" + impls[i] + "\"", "one_way", "GB/s",
                   stats[i], static_cast<double>(size) * n / 1e9, true);
    std::printf("{\"bench\":\"transport_throughput_mtls\",\"params\":{\"bytes\":%lld},\"ratio_vs_raw_tls\":%.3f}\n",
                static_cast<long long>(size), stats[1].median / stats[0].median);
  }
  fclose(child.to);
  int status = 0;
  waitpid(child.pid, &status, 0);
  transport.reset();
  std::filesystem::remove_all(dir);
  return 0;
}

// ---- compression on a link of a known rate ------------------------------------

// The compression figure on a 10 Gbit/s link, as between machines: in a
// network namespace of this process's own (a user namespace: no privileges
// needed) whose loopback is shaped by a token bucket. Skipped, saying why,
// where namespaces or tc's tbf are not available.
int OnShapedLink() {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  const std::string cmd = std::string("unshare -rn sh -c 'ip link set lo up && ") +
                          "tc qdisc add dev lo root tbf rate 10gbit burst 4mb latency 50ms && " +
                          "AF_BENCH_LINK=10gbit exec \"$0\" compression' '" + self + "'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "bench_transport link: skipped: cannot shape a link here (needs unshare -rn and tc tbf)\n");
  return 0;
}

// ---- a step across processes -------------------------------------------------

int Steps(const std::string& cli) {
  char tmpl[] = "/tmp/af_bench_XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string port_file = std::string(tmpl) + "/ps.port";
  std::vector<std::string> args = {cli, "server", "--job", "ps", "--task", "0", "--port", "0", "--port-file", port_file};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, cli.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 1;
  for (int i = 0; i < 1000 && !std::filesystem::exists(port_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int port = 0;
  std::ifstream(port_file) >> port;
  if (port == 0) return 1;

  // x (here) -> there -> here -> ... -> y (here): `hops` 4-byte tensors cross, one after another.
  auto graph = [](const std::string& there, const std::string& here, int hops) {
    Scope root = Scope::NewRootScope();
    Output cur = ops::Placeholder(root.WithOpName("x").WithDevice(here), DT_FLOAT);
    for (int i = 1; i <= hops; ++i)
      cur = ops::Identity(root.WithOpName(i == hops ? "y" : "a" + std::to_string(i)).WithDevice(i % 2 ? there : here),
                          cur);
    proto::GraphDef def;
    if (!root.ToGraphDef(&def).ok()) std::exit(1);
    return def;
  };
  ServerOptions so;
  if (!ClusterSpec::Parse("{\"worker\":[\"127.0.0.1:1\"],\"ps\":[\"127.0.0.1:" + std::to_string(port) + "\"]}",
                          &so.cluster)
           .ok())
    return 1;
  so.has_cluster = true;
  so.task = TaskId{"worker", 0};
  so.port = 0;
  std::unique_ptr<Server> server;
  if (!Server::Create(so, &server).ok()) return 1;
  SessionOptions cross;
  cross.target = server->target();
  // Steps of 2 and of 12 hops, across processes and across two devices of one
  // process: the step (2 hops: there and back) and, from the difference, the
  // cost of one hop inside a step (its step's start and answer excluded).
  constexpr int kShort = 2, kLong = 12;
  Session distributed(cross), distributed_long(cross);
  if (!distributed.Create(graph("/job:ps/task:0", "/job:worker/task:0", kShort)).ok()) return 1;
  if (!distributed_long.Create(graph("/job:ps/task:0", "/job:worker/task:0", kLong)).ok()) return 1;
  RuntimeOptions ro;
  ro.num_cpu_devices = 2;
  Runtime local_rt(ro);
  SessionOptions lo;
  lo.runtime = &local_rt;
  Session local(lo), local_long(lo);
  if (!local.Create(graph("/device:CPU:1", "/device:CPU:0", kShort)).ok()) return 1;
  if (!local_long.Create(graph("/device:CPU:1", "/device:CPU:0", kLong)).ok()) return 1;
  const Tensor x = Tensor::Scalar<float>(1.f);
  std::vector<Tensor> out;
  auto run = [&](Session* s) {
    return [s, &x, &out] {
      if (!s->Run({{"x", x}}, {"y:0"}, {}, &out).ok()) std::exit(1);
    };
  };
  auto stats = bench::MeasureInterleavedCalls(
      20, 100, {run(&distributed), run(&local), run(&distributed_long), run(&local_long)});
  bench::Print("step_two_partitions", "\"hops\":2,\"bytes\":4,\"impl\":\"two_processes\"", "step_p50", "us", stats[0],
               1e6);
  bench::Print("step_two_partitions", "\"hops\":2,\"bytes\":4,\"impl\":\"two_devices_one_process\"", "step_p50",
               "us", stats[1], 1e6);
  bench::Print("step_two_partitions", "\"hops\":12,\"bytes\":4,\"impl\":\"two_processes\"", "step_p50", "us",
               stats[2], 1e6);
  bench::Print("step_two_partitions", "\"hops\":12,\"bytes\":4,\"impl\":\"two_devices_one_process\"", "step_p50",
               "us", stats[3], 1e6);
  const double hop_processes = (stats[2].median - stats[0].median) / (kLong - kShort) * 1e6;
  const double hop_devices = (stats[3].median - stats[1].median) / (kLong - kShort) * 1e6;
  std::printf("{\"bench\":\"step_two_partitions\",\"ratio_processes_vs_devices\":%.3f,"
              "\"hop_in_step_us\":{\"two_processes\":%.1f,\"two_devices_one_process\":%.1f}}\n",
              stats[0].median / stats[1].median, hop_processes, hop_devices);
  distributed.Close();
  distributed_long.Close();
  server.reset();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  std::filesystem::remove_all(tmpl);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && std::string(argv[1]) == "receiver") return Receiver();
  if (argc > 2 && std::string(argv[1]) == "steps") return Steps(argv[2]);
  if (argc > 2 && std::string(argv[1]) == "tls-receiver") return TlsReceiver(argv[2]);
  if (argc > 1 && std::string(argv[1]) == "tls") return TlsDriver("/proc/self/exe");
  if (argc > 1 && std::string(argv[1]) == "link") return OnShapedLink();
  const std::string mode = argc > 1 ? argv[1] : "";
  return Driver("/proc/self/exe", mode == "latency" ? Part::kLatency
                                  : mode == "compression" ? Part::kCompression
                                                          : Part::kAll);
}
