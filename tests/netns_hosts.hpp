// NetnsHosts: simulated hosts for the multi-host tests, made by the one
// harness tests and benchmarks share (tests/netns/hosts.sh: per host a
// network namespace and a PID namespace, links to a bridge, tbf rates).
//
// Contract: Usable() says whether the harness works here (root, namespaces,
// veth, bridge, tbf), with why not; a test skips when it does not. The
// constructor brings up N hosts (REQUIRE: a failure fails the test); the
// destructor (RAII: also when a REQUIRE throws) ends every process Spawn
// started, by its PID (SIGTERM, SIGKILL after a grace period, each reaped),
// then takes the hosts down (which kills whatever is left in their PID
// namespaces and deletes the namespaces); a set this process owns, left by
// one killed before its destructor ran, is pruned by the next test's
// constructor (hosts.sh prune). Spawn runs a program on a host,
// its output appended to a log file; Wait bounds every wait. Checks run on
// the test's main thread only (Catch2 2.x is not thread-safe).
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "spawn_util.hpp"
#include "wait_until.hpp"

namespace actorflow {
namespace test {

class NetnsHosts {
 public:
  /// The harness script (tests/netns/hosts.sh in the source tree).
  static std::string Script() { return AF_NETNS_HOSTS; }

  /// Whether hosts can be made here; `why` says why not.
  static bool Usable(std::string* why) {
    if (::geteuid() != 0) {
      *why = "network and PID namespaces need root";
      return false;
    }
    std::string out;
    const int rc = Shell(Script() + " check", &out);
    if (rc != 0) *why = "tests/netns/hosts.sh check: " + out;
    return rc == 0;
  }

  /// Hosts NAME-h0..NAME-h{n-1} (addresses 10.77.0.1..n), links at `rate` (e.g. "1gbit"; empty: unlimited).
  NetnsHosts(const std::string& name, int n, const std::string& rate = "") : name_(name), n_(n) {
    std::string out;
    Shell(Script() + " prune", &out);  // what a test killed before its clean-up left
    const int rc = Shell(Script() + " up " + name_ + " " + std::to_string(n) + " --owner " +
                             std::to_string(::getpid()) + (rate.empty() ? "" : " --rate " + rate),
                         &out);
    up_ = rc == 0;
    INFO("hosts.sh up " << name_ << ": " << out);
    REQUIRE(up_);
  }
  ~NetnsHosts() {
    for (pid_t pid : pids_) Stop(pid);
    if (up_) {
      std::string out;
      if (Shell(Script() + " down " + name_, &out) != 0) std::fprintf(stderr, "hosts.sh down %s: %s\n", name_.c_str(), out.c_str());
    }
  }
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  int size() const { return n_; }
  /// Host i's address.
  std::string ip(int i) const { return "10.77.0." + std::to_string(i + 1); }

  /// Runs argv on host `i` with the test's environment plus `env` ("NAME=VALUE", replacing those named),
  /// stdout and stderr appended to `log`. Returns its PID (the harness's `exec`, whose exit code is argv's).
  pid_t Spawn(int i, const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log) {
    std::vector<std::string> args = {"/bin/bash", Script(), "exec", name_, std::to_string(i)};
    args.insert(args.end(), argv.begin(), argv.end());
    std::map<std::string, std::string> vars;
    for (const auto& kv : env) vars[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    const pid_t pid = SpawnWithEnvironment(std::move(args), vars, log, /*append=*/true);
    pids_.push_back(pid);
    return pid;
  }

  /// Waits at most `bound` for `pid` (one Spawn started) to end: its exit code
  /// (-signal when killed), or kTimedOut when it still runs.
  static constexpr int kTimedOut = -1000;
  int Wait(pid_t pid, std::chrono::milliseconds bound) {
    int status = 0;
    pid_t got = 0;
    WaitUntil([&] { return (got = ::waitpid(pid, &status, WNOHANG)) != 0; }, bound, std::chrono::milliseconds(20));
    if (got != pid) return kTimedOut;
    Forget(pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  /// Whether `pid` (one Spawn started) has ended (then reaped, its code in *code).
  bool Ended(pid_t pid, int* code) {
    const int c = Wait(pid, std::chrono::milliseconds(0));
    if (c == kTimedOut) return false;
    *code = c;
    return true;
  }

  /// Host i's link down (false) or up (true): its bridge port.
  void Link(int i, bool up) { Run("link " + name_ + " " + std::to_string(i) + (up ? " up" : " down")); }
  /// Host i's link rate, both directions ("none": unlimited).
  void Rate(int i, const std::string& rate) { Run("rate " + name_ + " " + std::to_string(i) + " " + rate); }

  /// The text of a file (a log), empty when there is none.
  static std::string Read(const std::string& path) {
    std::ifstream f(path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }

 private:
  // Runs a shell command line; its exit code, its output in *out.
  static int Shell(const std::string& cmd, std::string* out) {
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    if (p == nullptr) return -1;
    char buf[4096];
    size_t n;
    out->clear();
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
    const int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void Run(const std::string& args) {
    std::string out;
    const int rc = Shell(Script() + " " + args, &out);
    INFO("hosts.sh " << args << ": " << out);
    REQUIRE(rc == 0);
  }
  void Forget(pid_t pid) {
    for (auto it = pids_.begin(); it != pids_.end(); ++it)
      if (*it == pid) {
        pids_.erase(it);
        return;
      }
  }
  // SIGTERM (the program gets it too: the harness's exec passes it on as its
  // parent's death signal), SIGKILL after 10 s; reaped.
  static void Stop(pid_t pid) {
    ::kill(pid, SIGTERM);
    int status = 0;
    pid_t got = 0;
    WaitUntil([&] { return (got = ::waitpid(pid, &status, WNOHANG)) != 0; }, std::chrono::seconds(10),
              std::chrono::milliseconds(10));
    if (got == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }

  std::string name_;
  int n_;
  bool up_ = false;
  std::vector<pid_t> pids_;  // started and not yet reaped
};

}  // namespace test
}  // namespace actorflow
