// LocalCluster: real `actorflow server` processes on 127.0.0.1 for the
// distributed tests. Each starts with --port 0 --port-file (no port races),
// one compute thread, short heartbeats; the fixture keeps every child's PID,
// and ends each by PID (SIGTERM, then SIGKILL after a grace period), checking
// it was reaped. Every wait is bounded: a server that does not come up fails
// the test. Its checks run on the test's main thread only (Catch2 2.x is not
// thread-safe); KillAllNow, which asserts nothing, may run on any thread.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/server.hpp"
#include "spawn_util.hpp"
#include "wait_until.hpp"

extern char** environ;

#ifndef AF_TEST_SLOWDOWN
#define AF_TEST_SLOWDOWN 1
#endif

namespace actorflow {
namespace test {

/// The heartbeat interval and peer timeout of every test task: short, so a
/// hung peer is detected quickly, and scaled in sanitized builds (several
/// times slower), where a 1 s silence under load is not yet a failure.
constexpr int kTestHeartbeatMs = 100 * AF_TEST_SLOWDOWN;
constexpr int kTestPeerTimeoutMs = 1000 * AF_TEST_SLOWDOWN;
/// The most a step may take to fail after a task it needs was killed or
/// hung: the peer timeout (a hung task is found by its silence; a killed
/// one sooner, by its closed connections) and a margin for the failure to
/// reach the client, scaled alike.
constexpr int kTestPeerFailureBoundMs = kTestPeerTimeoutMs + 2000 * AF_TEST_SLOWDOWN;
/// The most a step may take to fail after a task it needs hung (SIGSTOP) in
/// distributed_test's steps: the peer timeout and a heartbeat (CAF notices
/// the silence on its next heartbeat tick), two heartbeats for the master's
/// probe of whether the task restarted (LocalMaster::ExplainUnavailable), and
/// the same margin. Measured 1.3 s with a 1 s peer timeout.
constexpr int kTestHungPeerBoundMs = kTestPeerTimeoutMs + 3 * kTestHeartbeatMs + 2000 * AF_TEST_SLOWDOWN;

class LocalCluster {
 public:
  struct Task {
    std::string job;
    int index = 0;
    pid_t pid = -1;
    int port = 0;
    int transport_port = 0;
    std::string port_file;
    std::vector<std::string> extra;
    std::map<std::string, std::string> env;  // added to its environment (tests/spawn_util.hpp)
  };

  LocalCluster() {
    char tmpl[] = "/tmp/af_cluster_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    tasks_.reserve(16);  // Start returns references into it
  }
  ~LocalCluster() {
    for (auto& t : tasks_) Stop(&t, false);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  /// Starts `job`:`index` (with `env` added to its environment) and waits
  /// (at most 10 s) for its port file.
  Task& Start(const std::string& job, int index, std::vector<std::string> extra = {},
              std::map<std::string, std::string> env = {}) {
    REQUIRE(tasks_.size() < 16);
    Task fresh;
    fresh.job = job;
    fresh.index = index;
    tasks_.push_back(std::move(fresh));
    Task& t = tasks_.back();
    t.extra = std::move(extra);
    t.env = std::move(env);
    Launch(&t);
    return t;
  }

  /// Restarts a task (stopped or killed) on the port it had.
  void Restart(Task* t) {
    std::vector<std::string> extra = t->extra;
    extra.push_back("--port=" + std::to_string(t->port));
    t->extra = extra;
    Launch(t);
  }

  /// Options for a Server in the test's own process as /job:worker/task:0 of
  /// this cluster (its address a placeholder: nobody dials it), two threads,
  /// the test tasks' heartbeat and peer timeout.
  ServerOptions WorkerTaskOptions() const {
    ServerOptions o;
    REQUIRE(ClusterSpec::Parse(ClusterJson({{"worker", {"127.0.0.1:1"}}}), &o.cluster).ok());
    o.has_cluster = true;
    o.task = TaskId{"worker", 0};
    o.port = 0;
    o.num_threads = 2;
    o.heartbeat_ms = kTestHeartbeatMs;
    o.peer_timeout_ms = kTestPeerTimeoutMs;
    return o;
  }

  /// The cluster JSON naming every started task, and `more` tasks (the test
  /// process's own), which take each job's lowest free indices.
  std::string ClusterJson(const std::map<std::string, std::vector<std::string>>& more = {}) const {
    std::map<std::string, std::map<int, std::string>> jobs;
    for (const auto& t : tasks_) jobs[t.job][t.index] = "127.0.0.1:" + std::to_string(t.port);
    // `more` fills each job's lowest free task indices.
    for (const auto& [job, addrs] : more) {
      auto& tasks = jobs[job];
      int i = 0;
      for (const auto& a : addrs) {
        while (tasks.count(i)) ++i;
        tasks[i] = a;
      }
    }
    std::string json = "{";
    bool first = true;
    for (const auto& [job, tasks] : jobs) {
      json += (first ? "\"" : ",\"") + job + "\":[";
      first = false;
      bool f = true;
      for (const auto& [i, a] : tasks) {
        json += (f ? "\"" : ",\"") + a + "\"";
        f = false;
      }
      json += "]";
    }
    return json + "}";
  }

  /// Sends `sig` to the task (kill -9, SIGSTOP, SIGCONT). SIGSTOP returns
  /// once the task has stopped (kill only queues it: a task still running
  /// could answer a step sent right after), bounded by 10 s.
  static void Signal(const Task& t, int sig) {
    REQUIRE(::kill(t.pid, sig) == 0);
    if (sig != SIGSTOP) return;
    int status = 0;
    pid_t got = 0;
    WaitUntil([&] { return (got = ::waitpid(t.pid, &status, WUNTRACED | WNOHANG)) != 0; }, std::chrono::seconds(10),
              std::chrono::milliseconds(1));
    REQUIRE(got == t.pid);
    REQUIRE(WIFSTOPPED(status));
  }

  /// SIGKILL to every task still running, without waiting or reaping: for a
  /// test about to end its process abruptly (a watchdog), so no server outlives it.
  void KillAllNow() const {
    for (const auto& t : tasks_)
      if (t.pid > 0) ::kill(t.pid, SIGKILL);
  }

  /// SIGTERM (or SIGKILL when `hard`), then waits up to 10 s for it to end;
  /// SIGKILL after that. Returns its exit status (-signal when killed).
  static int Stop(Task* t, bool hard) {
    if (t->pid <= 0) return 0;
    ::kill(t->pid, SIGCONT);  // a stopped task cannot handle SIGTERM
    ::kill(t->pid, hard ? SIGKILL : SIGTERM);
    int status = 0;
    pid_t got = 0;
    WaitUntil([&] { return (got = ::waitpid(t->pid, &status, WNOHANG)) != 0; }, std::chrono::seconds(10),
              std::chrono::milliseconds(10));
    if (got == 0) {
      ::kill(t->pid, SIGKILL);
      ::waitpid(t->pid, &status, 0);
    }
    t->pid = -1;
    if (got == 0) return -1000;  // hung on SIGTERM
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  const std::string& dir() const { return dir_; }
  /// A started task.
  Task& task(const std::string& job, int index) {
    for (auto& t : tasks_)
      if (t.job == job && t.index == index) return t;
    FAIL("no task " << job << ":" << index);
    return tasks_.front();
  }
  /// The PID of a started task (REQUIREs it exists and runs).
  pid_t pid_of(const std::string& job, int index) const {
    for (const auto& t : tasks_)
      if (t.job == job && t.index == index && t.pid > 0) return t.pid;
    FAIL("no running task " << job << ":" << index);
    return -1;
  }

 private:
  void Launch(Task* t) {
    t->port_file = dir_ + "/" + t->job + "_" + std::to_string(t->index) + ".port";
    std::error_code ec;
    std::filesystem::remove(t->port_file, ec);
    std::vector<std::string> args = {AF_CLI_PATH, "server", "--job", t->job, "--task", std::to_string(t->index),
                                     "--port-file", t->port_file, "--heartbeat-ms", std::to_string(kTestHeartbeatMs),
                                     "--peer-timeout-ms", std::to_string(kTestPeerTimeoutMs)};
    bool has_port = false;
    for (const auto& e : t->extra) has_port = has_port || e.rfind("--port=", 0) == 0;
    if (!has_port) args.push_back("--port=0");
    for (const auto& e : t->extra) args.push_back(e);
    std::map<std::string, std::string> env = t->env;
    env["ACTORFLOW_NUM_THREADS"] = "1";  // always one thread per server (a caller's value does not apply)
    const std::string log = dir_ + "/" + t->job + "_" + std::to_string(t->index) + ".log";
    const pid_t pid = SpawnWithEnvironment(std::move(args), env, log, /*append=*/true, {"TF_CONFIG"});
    t->pid = pid;
    bool exited = false;
    const bool up = WaitUntil(
        [&] {
          int status = 0;
          exited = ::waitpid(pid, &status, WNOHANG) == pid;
          return exited || std::filesystem::exists(t->port_file);
        },
        std::chrono::seconds(10), std::chrono::milliseconds(10));
    if (exited) {
      t->pid = -1;
      std::ifstream l(log);
      std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
      FAIL("server " << t->job << ":" << t->index << " exited at start: " << text);
    }
    INFO("server " << t->job << ":" << t->index << " wrote no port file in 10 s");
    REQUIRE(up);
    std::ifstream f(t->port_file);
    f >> t->port >> t->transport_port;
    REQUIRE(t->port > 0);
  }

  std::string dir_;
  std::vector<Task> tasks_;  // at most 16: references stay valid
};

}  // namespace test
}  // namespace actorflow
