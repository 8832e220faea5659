#include "tools/launch_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "actorflow/core/cluster_spec.hpp"
#include "tools/cli_common.hpp"

extern char** environ;

namespace actorflow {
namespace cli {

extern const char kLaunchUsage[] = R"(usage: actorflow launch --cluster FILE|JSON [--max-restarts N] [--log-dir D] [--grace-ms N]
                        -- PROGRAM [ARGS...]
Runs every task of the cluster on this machine, one process each, with TF_CONFIG set
({"cluster": ..., "task": {"type": JOB, "index": I}}): ps tasks run 'actorflow server' on
their address, every other task runs PROGRAM ARGS. Each line a task prints is prefixed
with the task ("[worker:1] ...").
  --cluster FILE|JSON   TensorFlow's ClusterSpec (the file, or the JSON itself)
  --max-restarts N      restart a task that dies (a signal or a non-zero exit) up to N
                        times (default 0)
  --log-dir D           also write each task's output to D/JOB-INDEX.log
  --grace-ms N          between SIGTERM and SIGKILL when ending tasks (default 5000)
Exit status: 0 every non-ps task finished with 0 (the ps tasks are then stopped); 1 a task
failed more than --max-restarts times, or SIGINT/SIGTERM (every task is ended by PID:
SIGTERM, then SIGKILL); 2 usage error.
)";

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

// One process of a task (a task restarted has one after another).
struct Task {
  std::string job;
  int index = 0;
  bool is_ps = false;
  pid_t pid = -1;
  int restarts = 0;
  bool running = false;
  bool finished = false;  // exited 0
  std::string label;      // "worker:1"
  std::unique_ptr<std::ofstream> log;
};

// An output pipe of a process, read until its end.
struct Stream {
  Task* task;
  int fd;
  std::string partial;
};

std::string SelfPath() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "actorflow";
  buf[n] = '\0';
  return buf;
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  return "ended";
}

class Launcher {
 public:
  Launcher(ClusterSpec cluster, std::vector<std::string> program, int max_restarts, std::string log_dir, int grace_ms)
      : cluster_(std::move(cluster)),
        program_(std::move(program)),
        max_restarts_(max_restarts),
        log_dir_(std::move(log_dir)),
        grace_ms_(grace_ms) {}

  int Run() {
    for (const TaskId& t : cluster_.tasks()) {
      auto task = std::make_unique<Task>();
      task->job = t.job;
      task->index = t.index;
      task->is_ps = t.job == "ps";
      task->label = t.job + ":" + std::to_string(t.index);
      if (!log_dir_.empty())
        task->log = std::make_unique<std::ofstream>(log_dir_ + "/" + t.job + "-" + std::to_string(t.index) + ".log",
                                                    std::ios::app);
      tasks_.push_back(std::move(task));
    }
    bool any_program = false;
    for (auto& t : tasks_) any_program = any_program || !t->is_ps;
    if (!any_program) {
      std::cerr << "actorflow launch: the cluster has no task to run the program (only ps tasks)" << std::endl;
      return kExitUsage;
    }
    for (auto& t : tasks_)
      if (!Spawn(t.get())) return EndAll(kExitStepFailed);
    while (true) {
      Pump(100);
      Reap();
      if (g_stop) {
        Say("stopping on a signal: ending every task");
        return EndAll(kExitStepFailed);
      }
      if (failed_) return EndAll(kExitStepFailed);
      bool done = true;
      for (auto& t : tasks_) done = done && (t->is_ps || t->finished);
      if (done) {
        bool any_ps = false;
        for (auto& t : tasks_) any_ps = any_ps || (t->is_ps && !t->finished);
        Say(any_ps ? "every worker finished: stopping the ps tasks" : "every worker finished");
        return EndAll(kExitOk);
      }
    }
  }

 private:
  void Say(const std::string& line) { std::cout << "[launch] " << line << std::endl; }

  bool Spawn(Task* t) {
    std::vector<std::string> args;
    if (t->is_ps) {
      args = {SelfPath(), "server", "--cluster", cluster_.ToJson(), "--job", t->job, "--task",
              std::to_string(t->index)};
    } else {
      args = program_;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      Say(std::string("cannot make a pipe: ") + std::strerror(errno));
      return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);  // its own group: ended with everything it started
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    // The environment, with this task's TF_CONFIG.
    const std::string tf_config = "TF_CONFIG={\"cluster\": " + cluster_.ToJson() + ", \"task\": {\"type\": \"" +
                                  t->job + "\", \"index\": " + std::to_string(t->index) + "}}";
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "TF_CONFIG=", 10) != 0) env_store.emplace_back(*e);
    env_store.push_back(tf_config);
    std::vector<char*> env, argv;
    for (auto& e : env_store) env.push_back(e.data());
    env.push_back(nullptr);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      Say(t->label + ": cannot start '" + args[0] + "': " + std::strerror(rc));
      failed_ = true;
      return false;
    }
    t->pid = pid;
    t->running = true;
    streams_.push_back(Stream{t, fds[0], ""});
    Say(t->label + " started (pid " + std::to_string(pid) + ")");
    return true;
  }

  // Prints what the tasks wrote, line by line; waits up to `timeout_ms` for some.
  void Pump(int timeout_ms) {
    if (streams_.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
      return;
    }
    std::vector<pollfd> fds;
    for (auto& s : streams_) fds.push_back(pollfd{s.fd, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n <= 0) return;
    char buf[65536];
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Stream& s = streams_[i];
      const ssize_t got = ::read(s.fd, buf, sizeof buf);
      if (got > 0) {
        s.partial.append(buf, static_cast<size_t>(got));
        size_t nl;
        while ((nl = s.partial.find('\n')) != std::string::npos) {
          Emit(*s.task, s.partial.substr(0, nl));
          s.partial.erase(0, nl + 1);
        }
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (!s.partial.empty()) Emit(*s.task, s.partial);
        ::close(s.fd);
        s.fd = -1;
      }
    }
    streams_.erase(std::remove_if(streams_.begin(), streams_.end(), [](const Stream& s) { return s.fd < 0; }),
                   streams_.end());
  }

  void Emit(Task& t, const std::string& line) {
    std::cout << "[" << t.label << "] " << line << "\n" << std::flush;
    if (t.log) *t.log << line << "\n" << std::flush;
  }

  // Takes the exit of every task that ended; restarts or gives up.
  void Reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      Task* t = nullptr;
      for (auto& task : tasks_)
        if (task->pid == pid) t = task.get();
      if (!t) continue;
      t->running = false;
      t->pid = -1;
      if (stopping_) continue;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        t->finished = true;
        Say(t->label + " finished");
        continue;
      }
      if (t->restarts < max_restarts_) {
        ++t->restarts;
        Say(t->label + " " + Describe(status) + ": restarting it (" + std::to_string(t->restarts) + " of " +
            std::to_string(max_restarts_) + ")");
        if (!Spawn(t)) failed_ = true;
        continue;
      }
      Say(t->label + " " + Describe(status) + (max_restarts_ > 0 ? " after " + std::to_string(max_restarts_) +
                                                                        " restarts: giving up"
                                                                  : ": giving up (--max-restarts 0)"));
      failed_ = true;
    }
  }

  bool AnyRunning() const {
    for (auto& t : tasks_)
      if (t->running) return true;
    return false;
  }

  // Ends every running task by PID (its group): SIGTERM, then SIGKILL after the grace period.
  int EndAll(int code) {
    stopping_ = true;
    for (auto& t : tasks_)
      if (t->running) ::kill(-t->pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms_);
    while (AnyRunning() && std::chrono::steady_clock::now() < deadline) {
      Pump(20);
      Reap();
    }
    for (auto& t : tasks_)
      if (t->running) {
        Say(t->label + " did not stop within " + std::to_string(grace_ms_) + " ms: killing it");
        ::kill(-t->pid, SIGKILL);
      }
    while (AnyRunning()) {
      Pump(20);
      Reap();
    }
    while (!streams_.empty()) Pump(20);  // what they wrote last
    return code;
  }

  ClusterSpec cluster_;
  std::vector<std::string> program_;
  int max_restarts_;
  std::string log_dir_;
  int grace_ms_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<Stream> streams_;
  bool failed_ = false;
  bool stopping_ = false;
};

}  // namespace

int LaunchCommand(const std::vector<std::string>& argv) {
  // The program is what follows "--".
  std::vector<std::string> flags, program;
  bool after = false;
  for (const auto& a : argv) {
    if (!after && a == "--") {
      after = true;
      continue;
    }
    (after ? program : flags).push_back(a);
  }
  bool help = false;
  std::string cluster_arg, log_dir;
  int max_restarts = 0, grace_ms = 5000;
  Status parsed = ParseFlags(flags, {"--cluster", "--max-restarts", "--log-dir", "--grace-ms"}, &help,
                             [&](const std::string& flag, const std::string& value) -> Status {
                               if (flag == "--cluster") return SetOnce(flag, value, &cluster_arg);
                               if (flag == "--log-dir") return SetOnce(flag, value, &log_dir);
                               if (flag == "--max-restarts") return ParseInt(flag, value, 0, 1000, &max_restarts);
                               return ParseInt(flag, value, 0, 3600000, &grace_ms);
                             });
  if (help) {
    std::cout << kLaunchUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  if (cluster_arg.empty()) return UsageError(errors::InvalidArgument("--cluster is required"));
  if (program.empty()) return UsageError(errors::InvalidArgument("no program: put it after '--'"));
  ClusterSpec cluster;
  Status s = ParseClusterArg(cluster_arg, &cluster, nullptr);
  if (!s.ok()) return UsageError(s);
  if (!log_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);
    if (ec) return UsageError(errors::InvalidArgument("--log-dir: cannot create '", log_dir, "': ", ec.message()));
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  Launcher launcher(std::move(cluster), std::move(program), max_restarts, log_dir, grace_ms);
  return launcher.Run();
}

}  // namespace cli
}  // namespace actorflow
