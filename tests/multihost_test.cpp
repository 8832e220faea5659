// Multi-host runs on one machine (issue 31): tasks on simulated hosts
// (tests/netns/hosts.sh through tests/netns_hosts.hpp: a network and a PID
// namespace per host, links to a bridge, tbf rates), so that between hosts
// everything goes over a real network path and the same-host path is off,
// exactly as between machines:
//  - two endpoints of one host read big tensors from each other's memory;
//    of two hosts, never, and a 1 Gbit/s link carries about that much;
//  - 3 hosts x 1 task (a ps, two workers) train the distributed example
//    synchronously to >= 88% test accuracy;
//  - the ps host's link going down fails the workers' steps with
//    UNAVAILABLE within the peer timeout (never a hang), and the supervisor
//    recovers when it comes back: training completes, exit 0, with the
//    accuracy its (fewer) epochs reach.
// Skipped where namespaces cannot be made (not root, no veth, bridge or tbf)
// or the Fashion-MNIST data is missing. Every process is ended by PID and the
// namespaces are removed, also when a check fails (RAII).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "netns_hosts.hpp"
#include "skip.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;
using test::NetnsHosts;
using test::WaitUntil;

namespace {

// Sync training to >= 88% test accuracy: epochs, Adam's learning rate (batch
// 100 per worker; measured here: 2 epochs 85.9%, 5 epochs 87.5%, 6 epochs
// 88.1% in 47 s, 8 epochs 88.4% in 69 s, runs varying by about 0.3%: 10
// for a margin). Under a sanitizer, 2 epochs to 84% (as slurm_test).
#ifdef AF_SANITIZED
constexpr int kEpochs = 2;
constexpr double kAccuracy = 84.0;
#else
constexpr int kEpochs = 10;
constexpr double kAccuracy = 88.0;
#endif
constexpr char kLearningRate[] = "0.002";
// The outage run: shorter; the chief restores the last checkpoint (the first,
// at step 0, when the link goes down at step 40) and the run completes to
// the accuracy its epochs reach (2 epochs: 85.9%).
constexpr int kOutageEpochs = 3;
constexpr double kOutageAccuracy = 85.0;

// A set name of this process's own (hosts.sh: at most 24 characters).
std::string SetName(const char* what) { return std::string("af") + what + std::to_string(::getpid()); }

// Skips the running case (returns from it) where simulated hosts cannot be made.
#define AF_NEED_HOSTS()                        \
  do {                                         \
    std::string af_why;                        \
    if (!NetnsHosts::Usable(&af_why)) AF_SKIP(af_why); \
  } while (false)

bool HaveFashionMnist() { return std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"); }

// The last match of `re`'s first group in `text` as a number, or -1.
double LastNumber(const std::string& text, const std::string& re) {
  double v = -1;
  std::regex r(re);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), r); it != std::sregex_iterator(); ++it)
    v = std::stod((*it)[1].str());
  return v;
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The transport_peer pair's receiver's JSON line: {"received":N,"same_host":K,...,"gbit_s":R}.
struct PeerResult {
  int exit_code = -1;
  double same_host = -1, received = -1, gbit_s = -1;
  std::string log;
};

// Sends `n` tensors of `bytes` from host `from` to host `to` (equal: one host), each endpoint a process.
PeerResult Transfer(NetnsHosts& hosts, const std::string& dir, int from, int to, int n, int64_t bytes) {
  const std::string tag = std::to_string(from) + "_" + std::to_string(to);
  const std::string rlog = dir + "/recv_" + tag + ".log", slog = dir + "/send_" + tag + ".log";
  const std::string recv_ip = hosts.ip(to), send_ip = hosts.ip(from);
  pid_t r = hosts.Spawn(to, {AF_TRANSPORT_PEER, "recv", recv_ip, "7001", send_ip, "7002", std::to_string(n)}, {}, rlog);
  {
    INFO("the receiver did not listen in 10 s: " << NetnsHosts::Read(rlog));
    REQUIRE(WaitUntil([&] { return NetnsHosts::Read(rlog).find("listening") != std::string::npos; },
                      std::chrono::seconds(10), std::chrono::milliseconds(10)));
  }
  pid_t s = hosts.Spawn(
      from, {AF_TRANSPORT_PEER, "send", send_ip, "7002", recv_ip, "7001", std::to_string(n), std::to_string(bytes)},
      {}, slog);
  PeerResult res;
  const int sent = hosts.Wait(s, std::chrono::seconds(90));
  res.exit_code = hosts.Wait(r, std::chrono::seconds(30));
  res.log = NetnsHosts::Read(rlog) + NetnsHosts::Read(slog);
  INFO(res.log);
  REQUIRE(sent == 0);
  REQUIRE(res.exit_code == 0);
  res.received = LastNumber(res.log, "\"received\":([0-9]+)");
  res.same_host = LastNumber(res.log, "\"same_host\":([0-9]+)");
  res.gbit_s = LastNumber(res.log, "\"gbit_s\":([0-9.]+)");
  return res;
}

// A cluster of three hosts: the ps on host 0, workers 0 (chief) and 1 on hosts 1 and 2, port 2222 on each.
std::string ClusterJson(const NetnsHosts& h) {
  return "{\"ps\":[\"" + h.ip(0) + ":2222\"],\"worker\":[\"" + h.ip(1) + ":2222\",\"" + h.ip(2) + ":2222\"]}";
}

struct Training {
  pid_t ps = -1, w0 = -1, w1 = -1;
  std::string ps_log, w0_log, w1_log;
};

// Starts the ps server and the two workers of train_distributed --mode sync.
Training StartTraining(NetnsHosts& h, const std::string& dir, int epochs, int heartbeat_ms, int peer_timeout_ms) {
  Training t;
  t.ps_log = dir + "/ps.log";
  t.w0_log = dir + "/worker0.log";
  t.w1_log = dir + "/worker1.log";
  const std::string cluster = ClusterJson(h);
  const std::vector<std::string> common = {"ACTORFLOW_NUM_THREADS=1", "ACTORFLOW_INSECURE=1",
                                           "ACTORFLOW_HEARTBEAT_MS=" + std::to_string(heartbeat_ms),
                                           "ACTORFLOW_PEER_TIMEOUT_MS=" + std::to_string(peer_timeout_ms)};
  t.ps = h.Spawn(0,
                 {AF_CLI_PATH, "server", "--cluster", cluster, "--job", "ps", "--task", "0", "--bind", h.ip(0),
                  "--insecure", "--heartbeat-ms", std::to_string(heartbeat_ms), "--peer-timeout-ms",
                  std::to_string(peer_timeout_ms)},
                 common, t.ps_log);
  for (int w = 0; w < 2; ++w) {
    std::vector<std::string> env = common;
    env.push_back("ACTORFLOW_BIND=" + h.ip(w + 1));
    env.push_back("TF_CONFIG={\"cluster\":" + cluster + ",\"task\":{\"type\":\"worker\",\"index\":" +
                  std::to_string(w) + "}}");
    const pid_t pid = h.Spawn(w + 1,
                              {std::string(AF_EXAMPLES_BIN_DIR) + "/train_distributed", "--mode", "sync", "--epochs",
                               std::to_string(epochs), "--lr", kLearningRate, "--dir", dir + "/ckpt"},
                              env, w == 0 ? t.w0_log : t.w1_log);
    (w == 0 ? t.w0 : t.w1) = pid;
  }
  return t;
}

// Waits (bounded) for the workers and the ps to end; REQUIREs exit 0 and returns the chief's accuracy.
double FinishTraining(NetnsHosts& h, const Training& t, std::chrono::seconds bound) {
  const int w0 = h.Wait(t.w0, bound);
  const int w1 = h.Wait(t.w1, std::chrono::seconds(30));
  const int ps = h.Wait(t.ps, std::chrono::seconds(30));  // the chief tells the ps to stop
  const std::string logs = "--- worker 0:\n" + NetnsHosts::Read(t.w0_log) + "--- worker 1:\n" +
                           NetnsHosts::Read(t.w1_log) + "--- ps:\n" + NetnsHosts::Read(t.ps_log);
  INFO(logs);
  REQUIRE(w0 == 0);
  REQUIRE(w1 == 0);
  CHECK(ps == 0);
  return LastNumber(NetnsHosts::Read(t.w0_log), "test accuracy ([0-9.]+)%");
}

}  // namespace

TEST_CASE("multihost: big tensors go through memory within a host, never between hosts; a 1 Gbit/s link carries "
          "about that",
          "[multihost]") {
  AF_NEED_HOSTS();
  test::TempDir dir("af_multihost");
  NetnsHosts hosts(SetName("p"), 2, "1gbit");
  // Within host 0: two processes of one PID namespace.
  PeerResult same = Transfer(hosts, dir.path(), 0, 0, 8, int64_t{1} << 20);
  CHECK(same.received == 8);
  CHECK(same.same_host == 8);
  // Host 0 to host 1: as between machines, every byte over the link.
  PeerResult across = Transfer(hosts, dir.path(), 0, 1, 24, int64_t{4} << 20);
  CHECK(across.received == 24);
  CHECK(across.same_host == 0);
  std::printf("multihost_test: 1gbit link: %.3f Gbit/s of tensors between hosts (same host: %.0f of 8 read from "
              "memory)\n",
              across.gbit_s, same.same_host);
  // The link's rate holds (tbf), and the path is not starved: generous bounds.
  CHECK(across.gbit_s <= 1.05);
  CHECK(across.gbit_s >= 0.3 / AF_TEST_SLOWDOWN);
}

TEST_CASE("multihost: 3 hosts x 1 task (a ps, two workers) train synchronously to >= 88% test accuracy (84% in 2 epochs under a sanitizer)",
          "[multihost]") {
  AF_NEED_HOSTS();
  if (!HaveFashionMnist()) AF_SKIP("no Fashion-MNIST (./setup.sh installs Debian's dataset-fashion-mnist)");
  test::TempDir dir("af_multihost");
  NetnsHosts hosts(SetName("t"), 3, "1gbit");
  const auto t0 = std::chrono::steady_clock::now();
  Training t = StartTraining(hosts, dir.path(), kEpochs, 200, 3000);
  const double accuracy = FinishTraining(hosts, t, std::chrono::seconds(150 * AF_TEST_SLOWDOWN));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("multihost_test: 3 hosts trained to %.2f%% in %.1f s\n", accuracy, secs);
  CHECK(accuracy >= kAccuracy);
}

TEST_CASE("multihost: the ps host's link down fails the workers' steps with UNAVAILABLE within the peer timeout; "
          "back up, the supervisor recovers and training completes",
          "[multihost]") {
  AF_NEED_HOSTS();
  if (!HaveFashionMnist()) AF_SKIP("no Fashion-MNIST (./setup.sh installs Debian's dataset-fashion-mnist)");
  test::TempDir dir("af_multihost");
  NetnsHosts hosts(SetName("l"), 3, "1gbit");
  const int peer_timeout_ms = 1000 * AF_TEST_SLOWDOWN;
  Training t = StartTraining(hosts, dir.path(), kOutageEpochs, 100 * AF_TEST_SLOWDOWN, peer_timeout_ms);
  // Training under way on both workers: the chief past its first progress lines, worker 1 in its training loop (a
  // sync step takes any two gradients, so the chief can step alone while worker 1 still starts, under load).
  {
    const bool training = WaitUntil(
        [&] {
          return LastNumber(NetnsHosts::Read(t.w0_log), "step ([0-9]+)/") >= 40 &&
                 NetnsHosts::Read(t.w1_log).find("worker:1 of 2: sync training") != std::string::npos;
        },
        std::chrono::seconds(60 * AF_TEST_SLOWDOWN), std::chrono::milliseconds(50));
    INFO("--- worker 0:\n" << NetnsHosts::Read(t.w0_log) << "--- worker 1:\n" << NetnsHosts::Read(t.w1_log));
    REQUIRE(training);
  }
  // What the logs held before the outage (a recovery at start-up, the ps not
  // yet up, says "recovering" too): only what comes after counts.
  const size_t before[2] = {NetnsHosts::Read(t.w0_log).size(), NetnsHosts::Read(t.w1_log).size()};
  const int64_t down_at = UnixMs();
  hosts.Link(0, false);
  // Each worker's step fails, UNAVAILABLE, and its supervisor says so (with the time).
  const std::regex failed("worker:([01]): recovering \\([0-9]+ of at most [0-9]+\\) from ([A-Z_]+): .*\\[unix ms ([0-9]+)\\]");
  std::smatch m[2];
  std::string logs[2];
  const bool both = WaitUntil(
      [&] {
        logs[0] = NetnsHosts::Read(t.w0_log);
        logs[1] = NetnsHosts::Read(t.w1_log);
        for (int w = 0; w < 2; ++w) logs[w] = logs[w].substr(std::min(before[w], logs[w].size()));
        return std::regex_search(logs[0], m[0], failed) && std::regex_search(logs[1], m[1], failed);
      },
      std::chrono::milliseconds(peer_timeout_ms + 10000 * AF_TEST_SLOWDOWN), std::chrono::milliseconds(20));
  hosts.Link(0, true);
  INFO("--- worker 0:\n" << logs[0] << "--- worker 1:\n" << logs[1]);
  REQUIRE(both);
  for (int w = 0; w < 2; ++w) {
    const int64_t after_ms = std::stoll(m[w][3].str()) - down_at;
    INFO("worker " << w << ": " << m[w][0].str());
    CHECK(m[w][2].str() == "UNAVAILABLE");
    CHECK(m[w][0].str().find("/job:ps/replica:0/task:0") != std::string::npos);  // it names the unreachable task
    // Within the peer timeout and a margin (the time a step takes to notice and report).
    CHECK(after_ms >= 0);  // after the link went down: not a recovery from before
    CHECK(after_ms <= peer_timeout_ms + 3000 * AF_TEST_SLOWDOWN);
    std::printf("multihost_test: worker %d's step failed %lld ms after the ps host's link went down\n", w,
                static_cast<long long>(after_ms));
  }
  const double accuracy = FinishTraining(hosts, t, std::chrono::seconds(120 * AF_TEST_SLOWDOWN));
  const std::string all = NetnsHosts::Read(t.w0_log) + NetnsHosts::Read(t.w1_log);
  CHECK(all.find("recovered (") != std::string::npos);
  std::printf("multihost_test: after the outage, trained to %.2f%% (%d epochs)\n", accuracy, kOutageEpochs);
  CHECK(accuracy >= kOutageAccuracy);
}
