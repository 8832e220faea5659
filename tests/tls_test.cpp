// Mutual TLS (comm/tls.hpp): files are checked before anything starts, each
// wrong one named; the tensor transport speaks TLS 1.3 with certificates on
// both sides and refuses a plaintext peer, a certificate from another CA and
// an expired one; a --security mtls cluster runs a step end to end, and a
// plaintext client is refused; a peer that leaves takes no other peer's
// connection with it. All on 127.0.0.1.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "local_cluster.hpp"
#include "actorflow/master/cluster_view.hpp"
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
  const TlsOptions ps_tls = pki.Issue("ps0");
  auto& ps = cluster.Start("ps", 0, {"--security", "mtls", "--cert", ps_tls.cert, "--key", ps_tls.key, "--ca",
                                     ps_tls.ca});
  ServerOptions o = cluster.WorkerTaskOptions();
  o.tls = pki.Issue("worker0");
  std::unique_ptr<Server> server;
  Status s = Server::Create(o, &server);
  INFO(s.ToString());
  REQUIRE(s.ok());

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
  s = session.Run(ro, {{"x", test::MakeTensor<float>({1.f, 2.f}, TensorShape{2})}}, {"y:0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(test::Values<float>(out[0]) == std::vector<float>{3.f, 5.f});

  // A client with its own certificate reaches the ps's master; one without is refused.
  SessionOptions secured;
  secured.target = "actorflow://127.0.0.1:" + std::to_string(ps.port);
  secured.device_find_timeout_ms = 10000;
  secured.tls = pki.Issue("client");
  Session remote(secured);
  Scope local = Scope::NewRootScope();
  ops::Mul(local.WithOpName("z"), ops::Const(local, 4.f), 2.f);
  s = remote.Create(test::ToDef(local));
  INFO(s.ToString());
  REQUIRE(s.ok());
  s = remote.Run(ro, {}, {"z:0"}, {}, &out);
  REQUIRE(s.ok());
  CHECK(out[0].scalar<float>() == 8.f);
  SessionOptions plain = secured;
  plain.tls = TlsOptions();
  Session refused(plain);
  s = refused.Create(test::ToDef(local));
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
