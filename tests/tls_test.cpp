// Mutual TLS (comm/tls.hpp): files are checked before anything starts, each
// wrong one named; the tensor transport speaks TLS 1.3 with certificates on
// both sides and refuses a plaintext peer, a certificate from another CA and
// an expired one; a --security mtls cluster runs a step end to end, and a
// plaintext client is refused; with three tasks, one leaving or a refused
// client takes none of the others' connections down. All on 127.0.0.1.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "local_cluster.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "skip.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/net/rendezvous_key.hpp"
#include "test_util.hpp"
#include "tls_util.hpp"

using namespace actorflow;
using test::LocalCluster;
using test::TestPki;

namespace {

struct Dir {
  std::string path;
  Dir() {
    char tmpl[] = "/tmp/af_tls_XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    path = tmpl;
  }
  ~Dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

constexpr char kA[] = "/job:a/replica:0/task:0";
constexpr char kB[] = "/job:b/replica:0/task:0";

struct Received {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<bool, Status>> events;  // (delivered, reject/peer failure status)
  TransportCallbacks Callbacks() {
    TransportCallbacks cb;
    ChannelHandler& h = cb.handler(Channel::kRendezvous);
    h.deliver = [this](const std::string&, std::string, Tensor, bool) { Push(true, Status::OK()); };
    h.reject = [this](const std::string&, const std::string&, Status s) { Push(false, s); };
    cb.peer_failed = [this](const std::string&, Status s) { Push(false, s); };
    return cb;
  }
  void Push(bool ok, Status s) {
    std::lock_guard<std::mutex> l(mu);
    events.emplace_back(ok, std::move(s));
    cv.notify_all();
  }
  std::pair<bool, Status> Next() {
    std::unique_lock<std::mutex> l(mu);
    REQUIRE(cv.wait_for(l, std::chrono::seconds(20), [&] { return !events.empty(); }));
    auto e = events.front();
    events.pop_front();
    return e;
  }
};

// `m`: the endpoint's process's membership (it outlives the endpoint).
std::unique_ptr<TensorTransport> Endpoint(const char* task, uint64_t inc, const TlsOptions& tls, Received* r,
                                          Membership* m) {
  TransportOptions o;
  o.task = task;
  o.incarnation = inc;
  o.membership = m;
  o.tls = tls;
  std::unique_ptr<TensorTransport> t;
  const Status s = TensorTransport::Start(o, r->Callbacks(), &t);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return t;
}

// What a session tells the membership `m` of a task: it listens on loopback `port`, at `incarnation`.
void Introduce(Membership& m, const char* task, uint16_t port, uint64_t incarnation) {
  REQUIRE(m.Update(TaskRecord::At(task, "127.0.0.1", port, incarnation)).ok());
}

// The TCP connections this machine accepted on `port` that are established now (/proc/net/tcp).
int AcceptedOn(int port) {
  int n = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = local.rfind(':');
      if (colon != std::string::npos && std::stoi(local.substr(colon + 1), nullptr, 16) == port && state == "01") ++n;
    }
  }
  return n;
}

// `actorflow server`'s arguments for mutual TLS with a certificate named `name`.
std::vector<std::string> MtlsArgs(TestPki& pki, const std::string& name) {
  const TlsOptions t = pki.Issue(name);
  return {"--security", "mtls", "--cert", t.cert, "--key", t.key, "--ca", t.ca};
}

// This process's task of `cluster` (LocalCluster::WorkerTaskOptions) over mutual TLS.
std::unique_ptr<Server> SecuredWorker0(const LocalCluster& cluster, TestPki& pki) {
  ServerOptions o = cluster.WorkerTaskOptions();
  o.tls = pki.Issue("worker0");
  std::unique_ptr<Server> server;
  const Status s = Server::Create(o, &server);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return server;
}

// A client's session on the master at 127.0.0.1:`port`, devices found within 10 s.
SessionOptions ClientOf(int port, const TlsOptions& tls) {
  SessionOptions so;
  so.target = "actorflow://127.0.0.1:" + std::to_string(port);
  so.device_find_timeout_ms = 10000;
  so.tls = tls;
  return so;
}

Scope FourTimesTwo() {
  Scope root = Scope::NewRootScope();
  ops::Mul(root.WithOpName("z"), ops::Const(root, 4.f), 2.f);
  return root;
}

// A client holding `tls` opens a session on the master at 127.0.0.1:`port`
// and runs z = 4 x 2 there.
void RunsFourTimesTwoOnMaster(int port, const TlsOptions& tls) {
  Session session(ClientOf(port, tls));
  Status s = session.Create(test::ToDef(FourTimesTwo()));
  INFO(s.ToString());
  REQUIRE(s.ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  std::vector<Tensor> out;
  s = session.Run(ro, {}, {"z:0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(out[0].scalar<float>() == 8.f);
}

RendezvousKey KeyAB() {
  return MakeRendezvousKey(std::string(kA) + "/device:CPU:0", 1, std::string(kB) + "/device:CPU:0", "x", 0, 0);
}

}  // namespace

TEST_CASE("TLS files are checked before anything starts, each wrong one named") {
  Dir dir;
  TestPki pki(dir.path);
  const TlsOptions good = pki.Issue("good");
  CHECK(CheckTlsFiles(good).ok());
  TlsOptions t = good;
  t.key = pki.Issue("someone").key;  // a key of another certificate
  Status s = CheckTlsFiles(t);
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("does not belong") != std::string::npos);
  s = CheckTlsFiles(pki.Issue("stranger", /*other_ca=*/true));
  CHECK(s.message().find("does not verify against CA") != std::string::npos);
  s = CheckTlsFiles(pki.Issue("old", false, /*expired=*/true));
  CHECK(s.message().find("expired") != std::string::npos);
  t = good;
  t.cert = dir.path + "/missing.pem";
  CHECK(CheckTlsFiles(t).message().find("missing.pem") != std::string::npos);
  t = good;
  t.ca = good.key;  // not a certificate
  CHECK(CheckTlsFiles(t).message().find(good.key) != std::string::npos);
  t = good;
  t.ca.clear();
  CHECK(errors::IsInvalidArgument(CheckTlsFiles(t)));
}

TEST_CASE("the tensor transport over mutual TLS: tensors cross; plaintext, another CA and expired are refused") {
  Dir dir;
  TestPki pki(dir.path);
  Received ra, rb;
  Membership mb(kB, 2);
  auto b = Endpoint(kB, 2, pki.Issue("b"), &rb, &mb);
  {
    Membership ma(kA, 1);
    auto a = Endpoint(kA, 1, pki.Issue("a"), &ra, &ma);
    Introduce(ma, kB, b->port(), 2);
    Introduce(mb, kA, a->port(), 1);
    Tensor big(DT_FLOAT, TensorShape{int64_t{3} << 20});  // 12 MiB: several chunks through TLS
    for (int64_t i = 0; i < big.NumElements(); ++i) big.data<float>()[i] = static_cast<float>(i);
    REQUIRE(a->Send(kB, Channel::kRendezvous, EncodeRendezvousMeta(1, KeyAB()), big).ok());
    CHECK(rb.Next().first);
    CHECK(b->tls_refused_count() == 0);
  }
  struct Bad {
    const char* what;
    TlsOptions tls;
  };
  for (const Bad& bad : {Bad{"plaintext", TlsOptions()}, Bad{"another CA", [&] {
                           TlsOptions t = pki.Issue("stranger", true);
                           t.ca = pki.other_ca_path();  // consistent on its own side
                           return t;
                         }()}}) {
    INFO(bad.what);
    const uint64_t refused = b->tls_refused_count();
    Received rx;
    Membership mx(kA, 1);
    auto x = Endpoint(kA, 1, bad.tls, &rx, &mx);
    Introduce(mx, kB, b->port(), 2);
    REQUIRE(x->Send(kB, Channel::kRendezvous, EncodeRendezvousMeta(1, KeyAB()), Tensor::Scalar<float>(1.f)).ok());
    auto e = rx.Next();  // the sender learns its tensor did not go
    CHECK(!e.first);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (b->tls_refused_count() == refused && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(b->tls_refused_count() > refused);
  }
  // An expired certificate does not even start (checked at Start).
  Membership mo(kA, 0);
  TransportOptions o;
  o.task = kA;
  o.membership = &mo;
  o.tls = pki.Issue("old", false, true);
  std::unique_ptr<TensorTransport> x;
  const Status s = TensorTransport::Start(o, ra.Callbacks(), &x);
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("expired") != std::string::npos);
}

TEST_CASE("a certificate issued by an intermediate CA, its file holding the chain, is accepted both ways") {
  Dir dir;
  TestPki pki(dir.path);
  const TlsOptions chained = pki.IssueViaIntermediate("a");
  CHECK(CheckTlsFiles(chained).ok());
  TlsOptions leaf_only = chained;  // without the intermediate the CA cannot be reached
  {
    std::ifstream in(chained.cert);
    std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    leaf_only.cert = dir.path + "/leaf_only.pem";
    std::ofstream(leaf_only.cert) << pem.substr(0, pem.find("-----END CERTIFICATE-----") + 26);
  }
  CHECK(errors::IsInvalidArgument(CheckTlsFiles(leaf_only)));
  Received ra, rb;
  Membership ma(kA, 1), mb(kB, 2);
  auto a = Endpoint(kA, 1, chained, &ra, &ma);
  auto b = Endpoint(kB, 2, pki.Issue("b"), &rb, &mb);
  Introduce(ma, kB, b->port(), 2);
  Introduce(mb, kA, a->port(), 1);
  // a presents its chain as a client
  REQUIRE(a->Send(kB, Channel::kRendezvous, EncodeRendezvousMeta(1, KeyAB()), Tensor::Scalar<float>(1.f)).ok());
  CHECK(rb.Next().first);
  const RendezvousKey back = MakeRendezvousKey(std::string(kB) + "/device:CPU:0", 2, std::string(kA) + "/device:CPU:0",
                                               "back", 0, 0);
  // ... and as a server
  REQUIRE(b->Send(kA, Channel::kRendezvous, EncodeRendezvousMeta(1, back), Tensor::Scalar<float>(2.f)).ok());
  CHECK(ra.Next().first);
  CHECK(a->tls_refused_count() == 0);
  CHECK(b->tls_refused_count() == 0);
}

TEST_CASE("a --security mtls cluster runs steps end to end; plaintext clients and bad files are refused",
          "[distributed]") {
  LocalCluster cluster;
  TestPki pki(cluster.dir());
  auto& ps = cluster.Start("ps", 0, MtlsArgs(pki, "ps0"));
  std::unique_ptr<Server> server = SecuredWorker0(cluster, pki);

  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto there = ops::Mul(root.WithOpName("there").WithDevice("/job:ps/task:0"), x, 2.f);
  ops::Add(root.WithOpName("y"), there, 1.f);
  SessionOptions so;
  so.target = server->target();
  so.device_find_timeout_ms = 10000;
  Session session(so);
  REQUIRE(session.Create(test::ToDef(root)).ok());
  std::vector<Tensor> out;
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  Status s = session.Run(ro, {{"x", test::MakeTensor<float>({1.f, 2.f}, TensorShape{2})}}, {"y:0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(test::Values<float>(out[0]) == std::vector<float>{3.f, 5.f});

  // A client with its own certificate reaches the ps's master; one without is refused.
  RunsFourTimesTwoOnMaster(ps.port, pki.Issue("client"));
  Session refused(ClientOf(ps.port, TlsOptions()));
  s = refused.Create(test::ToDef(FourTimesTwo()));
  CHECK(!s.ok());
  CHECK(s.message().find("127.0.0.1:" + std::to_string(ps.port)) != std::string::npos);

  // actorflow server refuses bad files before it starts: exit 2 naming the file.
  const TlsOptions old = pki.Issue("old", false, true);
  const std::string cmd = std::string("timeout 60 ") + AF_CLI_PATH +
                          " server --job ps --task 1 --port 0 --security mtls --cert " + old.cert + " --key " +
                          old.key + " --ca " + old.ca + " > " + cluster.dir() + "/old.log 2>&1";
  const int rc = std::system(cmd.c_str());
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 2);
  std::ifstream log(cluster.dir() + "/old.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(text.find(old.cert) != std::string::npos);
  CHECK(text.find("expired") != std::string::npos);
}

TEST_CASE("mutual TLS: CAF's TLS calls reach the error-queue workaround in this process", "[distributed]") {
  // This binary links libactorflow before libssl, as every program of the repository does.
  CHECK(OpenSslErrorQueueCleared());
}

TEST_CASE("mutual TLS: a peer that leaves takes no other peer's connection with it", "[distributed]") {
  // A ps with two workers: when one worker's process ends (its TLS connection closes without
  // close_notify, as every CAF peer's does), the other worker's steps on the ps go on. (CAF's
  // OpenSSL sessions leave OpenSSL's error of the closed connection queued in the ps's I/O
  // thread, where the next read on any other connection took it for its own and closed that
  // connection: comm/openssl_error_queue.cpp.)
  LocalCluster cluster;
  TestPki pki(cluster.dir());
  const TlsOptions ps_tls = pki.Issue("ps0");
  auto& ps = cluster.Start("ps", 0, {"--security", "mtls", "--cert", ps_tls.cert, "--key", ps_tls.key, "--ca",
                                     ps_tls.ca});
  const std::string two_workers = cluster.ClusterJson({{"worker", {"127.0.0.1:1", "127.0.0.1:2"}}});
  ServerOptions o = cluster.WorkerTaskOptions();
  REQUIRE(ClusterSpec::Parse(two_workers, &o.cluster).ok());
  o.tls = pki.Issue("worker0");
  std::unique_ptr<Server> chief;
  REQUIRE(Server::Create(o, &chief).ok());
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Add(root.WithOpName("y"), ops::Mul(root.WithOpName("there").WithDevice("/job:ps/task:0"), x, 2.f), 1.f);
  SessionOptions so;
  so.target = chief->target();
  so.device_find_timeout_ms = 10000;
  so.device_filters = {"/job:ps", "/job:worker/task:0"};
  Session session(so);
  REQUIRE(session.Create(test::ToDef(root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  std::vector<Tensor> out;
  const Tensor two = test::MakeTensor<float>({1.f, 2.f}, TensorShape{2});
  REQUIRE(session.Run(ro, {{"x", two}}, {"y:0"}, {}, &out).ok());
  const int chief_only = AcceptedOn(ps.port);

  // Worker 1 reaches the ps, then its process's runtime ends.
  {
    ServerOptions w = o;
    w.task = TaskId{"worker", 1};
    w.tls = pki.Issue("worker1");
    std::unique_ptr<Server> other;
    REQUIRE(Server::Create(w, &other).ok());
    caf::actor ps_task;
    const Status reached =
        ConnectToTask(other->runtime()->system(), "127.0.0.1:" + std::to_string(ps.port), std::chrono::seconds(10),
                      &ps_task);
    INFO(reached.ToString());
    REQUIRE(reached.ok());
    REQUIRE(test::WaitUntil([&] { return AcceptedOn(ps.port) > chief_only; }, std::chrono::seconds(10)));
  }
  // The ps has closed that connection ...
  REQUIRE(test::WaitUntil([&] { return AcceptedOn(ps.port) == chief_only; }, std::chrono::seconds(10)));
  // ... and the chief's steps on it go on.
  for (int step = 0; step < 3; ++step) {
    const Status s = session.Run(ro, {{"x", two}}, {"y:0"}, {}, &out);
    INFO("step " << step << ": " << s.ToString());
    REQUIRE(s.ok());
    CHECK(test::Values<float>(out[0]) == std::vector<float>{3.f, 5.f});
  }
}

namespace {

// A client connecting to `port` on 127.0.0.1 in plaintext, as a health check
// or a port scan would: true once the server closed the connection (it
// refused the handshake), false if it did not within 10 s.
bool PlaintextProbeRefused(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool refused = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const char probe[] = "GET / HTTP/1.0\r\n\r\n";
    if (::send(fd, probe, sizeof(probe) - 1, MSG_NOSIGNAL) > 0) {
      char buf[256];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
      }
      refused = n == 0 || errno == ECONNRESET;
    }
  }
  ::close(fd);
  return refused;
}

}  // namespace

// CAF's openssl sessions leave OpenSSL's per-thread error queue as it is; a
// connection that ended without close_notify (a peer leaving) or a refused
// handshake then failed the next connection of the process that waited for
// data (control_tls.hpp): the ps dropped the chief when another worker left.
TEST_CASE("mutual TLS, three tasks: a task leaving or a refused plaintext client takes no other connection down",
          "[distributed]") {
  LocalCluster cluster;
  TestPki pki(cluster.dir());
  auto& ps = cluster.Start("ps", 0, MtlsArgs(pki, "ps0"));
  // Worker 1 runs a master of its own (a client's session below) that
  // connects to the ps, as a second training worker does.
  std::vector<std::string> w1_args = MtlsArgs(pki, "worker1");
  w1_args.push_back("--cluster");
  w1_args.push_back(cluster.ClusterJson({{"worker", {"127.0.0.1:1", "127.0.0.1:2"}}}));
  auto& w1 = cluster.Start("worker", 1, w1_args);
  std::unique_ptr<Server> server = SecuredWorker0(cluster, pki);

  // Worker 0's session: steps through all three tasks, and through the ps alone.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto on_ps = ops::Mul(root.WithOpName("on_ps").WithDevice("/job:ps/task:0"), x, 2.f);
  auto on_w1 = ops::Add(root.WithOpName("on_w1").WithDevice("/job:worker/task:1"), on_ps, 1.f);
  ops::Mul(root.WithOpName("all"), on_w1, 3.f);
  ops::Add(root.WithOpName("ps_only"), on_ps, 10.f);
  SessionOptions so;
  so.target = server->target();
  so.device_find_timeout_ms = 10000;
  so.device_filters = {"/job:ps", "/job:worker"};  // (by default the ps and its own task)
  Session chief(so);
  REQUIRE(chief.Create(test::ToDef(root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 30000;
  const Tensor in = test::MakeTensor<float>({1.f, 2.f}, TensorShape{2});
  std::vector<Tensor> out;
  Status s = chief.Run(ro, {{"x", in}}, {"all:0", "ps_only:0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(test::Values<float>(out[0]) == std::vector<float>{9.f, 15.f});

  // Worker 1's master reaches the ps on a connection of its own.
  SessionOptions via_w1 = ClientOf(w1.port, pki.Issue("client"));
  via_w1.device_filters = {"/job:ps", "/job:worker/task:1"};
  Session second(via_w1);
  Scope g1 = Scope::NewRootScope();
  auto four = ops::Const(g1.WithOpName("four").WithDevice("/job:ps/task:0"), 4.f);
  ops::Mul(g1.WithOpName("eight").WithDevice("/job:worker/task:1"), four, 2.f);
  s = second.Create(test::ToDef(g1));
  INFO(s.ToString());
  REQUIRE(s.ok());
  s = second.Run(ro, {}, {"eight:0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(out[0].scalar<float>() == 8.f);

  // Steps on the ps alone keep running for a while: many heartbeats, each a
  // read on every connection, with the bug the first one after the event failed.
  const auto keeps_running = [&](const char* after) {
    INFO("after " << after);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000 * AF_TEST_SLOWDOWN);
    int steps = 0;
    do {
      Status st = chief.Run(ro, {{"x", in}}, {"ps_only:0"}, {}, &out);
      INFO(st.ToString());
      REQUIRE(st.ok());
      CHECK(test::Values<float>(out[0]) == std::vector<float>{12.f, 14.f});
      ++steps;
    } while (std::chrono::steady_clock::now() < until);
    return steps;
  };
  // Worker 1 leaves (killed: its connections to the ps, to worker 0 and to
  // this process's client end without close_notify).
  CHECK(LocalCluster::Stop(&w1, true) == -SIGKILL);
  CHECK(keeps_running("worker 1 left") > 0);
  // A plaintext client is refused by the ps; the ps's other connections stay.
  REQUIRE(PlaintextProbeRefused(ps.port));
  CHECK(keeps_running("a refused plaintext client") > 0);

  // New connections still work, both ways: a client of this process (whose
  // connection to worker 1 ended) reaches the ps's master.
  RunsFourTimesTwoOnMaster(ps.port, pki.Issue("client"));
}

namespace {

// Two free loopback ports (held open together, so they differ).
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    socklen_t len = sizeof(addr);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

// The report's case end to end: train_distributed's two workers (processes,
// TF_CONFIG and ACTORFLOW_TLS_* as `actorflow launch` sets them) and a ps
// over mutual TLS. Before the fix sync training failed when worker 1 finished
// (the ps dropped the chief) and all-reduce made no progress.
TEST_CASE("train_distributed over mutual TLS, a ps and two worker processes: all-reduce and sync training finish",
          "[distributed][may_skip][fashion_mnist]") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"))
    AF_SKIP_OUTSIDE_CI("dataset-fashion-mnist is not installed (setup.sh installs it)");
  LocalCluster cluster;
  TestPki pki(cluster.dir());
  auto& ps = cluster.Start("ps", 0, MtlsArgs(pki, "ps0"));
  const TlsOptions certs[2] = {pki.Issue("worker0"), pki.Issue("worker1")};
  // All-reduce first: the sync chief tells the ps to stop when it is done.
  for (const std::string mode : {"allreduce", "sync"}) {
    INFO(mode);
    const std::vector<int> ports = FreePorts(2);
    const std::string json = "{\"ps\":[\"127.0.0.1:" + std::to_string(ps.port) + "\"],\"worker\":[\"127.0.0.1:" +
                             std::to_string(ports[0]) + "\",\"127.0.0.1:" + std::to_string(ports[1]) + "\"]}";
    const std::string dir = cluster.dir() + "/" + mode;
    std::string script;
    for (int i = 0; i < 2; ++i)
      script += "ACTORFLOW_TLS_CERT=" + certs[i].cert + " ACTORFLOW_TLS_KEY=" + certs[i].key +
                " ACTORFLOW_TLS_CA=" + certs[i].ca + " ACTORFLOW_NUM_THREADS=1 TF_CONFIG='{\"cluster\":" + json +
                ",\"task\":{\"type\":\"worker\",\"index\":" + std::to_string(i) + "}}' timeout " +
                std::to_string(60 * AF_TEST_SLOWDOWN) + " " + AF_EXAMPLES_BIN_DIR +
                "/train_distributed --mode " + mode + " --steps 20 --dir " + dir + " > " + dir + "-" +
                std::to_string(i) + ".log 2>&1 & p" + std::to_string(i) + "=$!\n";
    script += "wait $p0; r0=$?; wait $p1; r1=$?; exit $((r0 != 0 || r1 != 0))\n";
    std::ofstream(dir + ".sh") << script;
    const int rc = std::system(("sh " + dir + ".sh").c_str());
    const std::string chief = ReadFile(dir + "-0.log");
    INFO("worker 0:\n" << chief << "worker 1:\n" << ReadFile(dir + "-1.log"));
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
    CHECK(chief.find("steps: test accuracy") != std::string::npos);
  }
}
