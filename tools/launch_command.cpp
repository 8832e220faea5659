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

#include "actorflow/core/cluster_resolver.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/master/server_environment.hpp"
#include "tools/cli_common.hpp"
#include "tools/task_flags.hpp"

extern char** environ;

namespace actorflow {
namespace cli {

extern const char kLaunchUsage[] = R"(usage: actorflow launch --cluster FILE|JSON|tf_config|slurm|auto [--jobs JOB:N,...] [--port-base P]
                        [--bind ADDR] [--insecure] [--security none|mtls --cert F --key F --ca F]
                        [--heartbeat-ms N] [--peer-timeout-ms N]
                        [--max-restarts N] [--min-workers N [--max-workers M]] [--log-dir D]
                        [--grace-ms N] [--finish-wait-ms N] -- PROGRAM [ARGS...]
Runs tasks of a cluster, one process each, with TF_CONFIG set ({"cluster": ..., "task":
{"type": JOB, "index": I}}): ps tasks run 'actorflow server' on their address, every other
task runs PROGRAM ARGS with the ACTORFLOW_* variables saying how to serve (ACTORFLOW_BIND,
ACTORFLOW_INSECURE, ACTORFLOW_TLS_CERT, _KEY, _CA, ACTORFLOW_HEARTBEAT_MS,
ACTORFLOW_PEER_TIMEOUT_MS). Each line a task prints is prefixed with the task ("[worker:1] ...").
Which tasks: a cluster that does not name this process's task (a FILE or JSON of jobs) runs
every task, on this machine; one that does (tf_config, slurm, auto, TF_CONFIG's form with
"task") runs that task only, for a cluster manager that starts one launch per task:
  srun -n 3 actorflow launch --cluster slurm --jobs ps:1,worker:2 --port-base 7000 -- PROG
  (Kubernetes: one pod per task, TF_CONFIG from Kubeflow's TFJob or the pod's ordinal).
  --cluster FILE|JSON   TensorFlow's ClusterSpec (the file, or the JSON itself)
  --cluster tf_config   the TF_CONFIG variable (DNS names, Kubeflow's sparse "sparseCluster")
  --cluster slurm       this Slurm task's place in its job step (SLURM_PROCID, SLURM_STEP_*)
  --cluster auto        tf_config if TF_CONFIG is set, else slurm inside a Slurm step, else one
                        local worker task at 127.0.0.1:P
  --jobs JOB:N,...      slurm: ranks go to the jobs in that order (default: every task a worker)
  --port-base P         slurm: a task serves on its node at P plus its index among the node's
                        tasks (default 8888)
  --bind ADDR           the address every task serves on (default 127.0.0.1; across machines
                        0.0.0.0, which needs --insecure or --security mtls)
  --insecure            allow a non-loopback --bind in plaintext
  --security none|mtls  mutual TLS with --cert F --key F --ca F (checked now; PEM files every
                        task can read, the key unencrypted)
  --heartbeat-ms N      heartbeat interval to peers (default 500)
  --peer-timeout-ms N   a peer silent this long is down (default 3000)
  --max-restarts N      restart a task that dies (a signal or a non-zero exit) up to N
                        times (default 0)
  --min-workers N       elastic (every task of a cluster here): a non-ps task that dies more
                        than --max-restarts times is given up, not an error, while at least N
                        of them are running or finished with 0 (the program goes on without
                        it: train_distributed --mode allreduce --elastic); default: all of them.
                        The programs get ACTORFLOW_MIN_WORKERS=N: an elastic all-reduce group
                        needs that many live members (a worker cut off does not train alone).
                        With --max-workers M only the first M non-ps tasks are started (the
                        cluster's others are slots for workers that join later, started
                        elsewhere), and the programs get ACTORFLOW_MAX_WORKERS=M: a rendezvous
                        round completes at once when M have answered.
                        Once a worker finishes with 0, training is over: a worker that fails
                        then is not restarted (nor an error), and one still running after
                        --finish-wait-ms N (default 90000: more than a chief's wait for
                        the others) is ended (SIGTERM, then SIGKILL). Except the chief (the
                        "chief" task, else worker 0) of a cluster with ps tasks: it ends
                        the training (evaluates, saves, stops the ps tasks), so it is
                        restarted then too, with its own --finish-wait-ms from its restart
                        (two in all at most), and is never given up: past --max-restarts,
                        or ended by the launcher (still running past its window), it
                        fails the launch
  --log-dir D           also write each task's output to D/JOB-INDEX.log
  --grace-ms N          between SIGTERM and SIGKILL when ending tasks (default 5000)
The ACTORFLOW_* variables above, when set, are defaults the flags override.
Exit status, every task of a cluster: 0 every non-ps task finished with 0, or was given up
with at least --min-workers of them finished with 0 (the ps tasks are then stopped); 1 a task
failed more than --max-restarts times (with --min-workers: a ps task, a ps cluster's chief, or
fewer than N workers left), or a ps cluster's chief ended past its --finish-wait-ms, or SIGINT/SIGTERM (every task is ended by PID: SIGTERM, then SIGKILL); 2 usage error.
One task: 0 it finished with 0 (a ps task: when the chief stopped it); its own exit status
(128+N for signal N) when it failed more than --max-restarts times; 1 on SIGINT/SIGTERM
(the task is ended by PID); 2 usage error.
)";

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

// One process of a task (a task restarted has one after another).
struct Task {
  std::string job;
  int index = 0;
  bool is_ps = false;
  bool is_chief = false;  // the cluster's chief: its "chief" task, or worker 0 without one
  pid_t pid = -1;
  int restarts = 0;
  bool running = false;
  bool finished = false;  // exited 0
  bool given_up = false;  // died for good, with --min-workers others left
  bool ending = false;    // ended by the launcher after training was over (--min-workers)
  std::chrono::steady_clock::time_point started;  // its latest process's start
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

// What a launcher runs and how.
struct LaunchPlan {
  ClusterSpec cluster;
  std::vector<TaskId> tasks;  // the whole cluster, or this process's task
  bool one_task = false;      // a cluster manager's launch: this process's task only
  ServerOptions serve;        // how every task serves (bind, TLS, heartbeats)
  std::vector<std::string> program;
  int max_restarts = 0;
  int min_workers = 0;  // 0: every non-ps task must finish
  int max_workers = 0;  // > 0: start only the first this many non-ps tasks (the others: slots to join later)
  std::string log_dir;
  int grace_ms = 5000;
  int finish_wait_ms = 90000;  // --min-workers: how long the others may run on once one finished
};

class Launcher {
 public:
  explicit Launcher(LaunchPlan plan)
      : cluster_(std::move(plan.cluster)),
        run_(std::move(plan.tasks)),
        one_task_(plan.one_task),
        serve_(std::move(plan.serve)),
        program_(std::move(plan.program)),
        max_restarts_(plan.max_restarts),
        min_workers_(plan.min_workers),
        max_workers_(plan.max_workers),
        log_dir_(std::move(plan.log_dir)),
        grace_ms_(plan.grace_ms),
        finish_wait_ms_(plan.finish_wait_ms) {}

  int Run() {
    int programs = 0;
    for (const TaskId& t : run_) {
      if (max_workers_ > 0 && t.job != "ps" && ++programs > max_workers_) continue;  // a slot for a later joiner
      auto task = std::make_unique<Task>();
      task->job = t.job;
      task->index = t.index;
      task->is_ps = t.job == "ps";
      task->is_chief = t.job == cluster_.chief().job && t.index == cluster_.chief().index;
      has_ps_ = has_ps_ || task->is_ps;
      task->label = t.job + ":" + std::to_string(t.index);
      if (!log_dir_.empty())
        task->log = std::make_unique<std::ofstream>(log_dir_ + "/" + t.job + "-" + std::to_string(t.index) + ".log",
                                                    std::ios::app);
      tasks_.push_back(std::move(task));
    }
    bool any_program = false;
    for (auto& t : tasks_) any_program = any_program || !t->is_ps;
    if (!any_program && !one_task_) {
      std::cerr << "actorflow launch: the cluster has no task to run the program (only ps tasks)" << std::endl;
      return kExitUsage;
    }
    for (auto& t : tasks_)
      if (!Spawn(t.get())) return EndAll(kExitStepFailed);
    while (true) {
      Pump(100);
      Reap();
      EndLateWorkers();
      if (g_stop) {
        Say("stopping on a signal: ending every task");
        return EndAll(kExitStepFailed);
      }
      if (failed_) return EndAll(one_task_ && failed_status_ >= 0 ? failed_status_ : kExitStepFailed);
      bool done = true;
      for (auto& t : tasks_) done = done && ((t->is_ps && !one_task_) || t->finished || t->given_up);
      if (done) {
        bool any_ps = false;
        for (auto& t : tasks_) any_ps = any_ps || (t->is_ps && !t->finished);
        if (!one_task_) Say(any_ps ? "every worker finished: stopping the ps tasks" : "every worker finished");
        return EndAll(kExitOk);
      }
    }
  }

 private:
  void Say(const std::string& line) { std::cout << "[launch] " << line << std::endl; }

  // Whether an inherited "NAME=VALUE" is one the launcher sets itself.
  static bool Replaced(const char* entry) {
    const std::string name(entry, std::strcspn(entry, "="));
    if (name == "TF_CONFIG") return true;
    const auto& names = ServerEnvironmentNames();
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  bool Spawn(Task* t) {
    const TaskId id{t->job, t->index};
    std::vector<std::string> args;
    if (t->is_ps) {
      args = {SelfPath(), "server", "--cluster", cluster_.ToTfConfig(id)};
      for (auto& a : ServeArgs(serve_)) args.push_back(a);
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
    // The environment, with this task's TF_CONFIG and how it serves instead of what it inherited.
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e)
      if (!Replaced(*e) && !(min_workers_ > 0 && std::strncmp(*e, "ACTORFLOW_MIN_WORKERS=", 22) == 0) &&
          !(max_workers_ > 0 && std::strncmp(*e, "ACTORFLOW_MAX_WORKERS=", 22) == 0))
        env_store.emplace_back(*e);
    env_store.push_back("TF_CONFIG=" + cluster_.ToTfConfig(id));
    for (auto& v : ServerEnvironment(serve_)) env_store.push_back(v);
    if (min_workers_ > 0) env_store.push_back("ACTORFLOW_MIN_WORKERS=" + std::to_string(min_workers_));
    if (max_workers_ > 0) env_store.push_back("ACTORFLOW_MAX_WORKERS=" + std::to_string(max_workers_));
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
    t->started = std::chrono::steady_clock::now();
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
        if (min_workers_ > 0 && !t->is_ps && over_by_.empty()) {
          over_by_ = t->label;
          over_at_ = std::chrono::steady_clock::now();
        }
        continue;
      }
      // Elastic: once a worker finished, training is over; one that fails
      // then (its peers gone) or that the launcher ended is not restarted.
      // But the chief of a cluster with ps tasks ends the training (the last
      // evaluation and checkpoint; it stops the ps tasks): like a TFJob's
      // chief, it is restarted until it finishes, the ps tasks kept for it.
      const bool chief_ends = t->is_chief && has_ps_ && !t->ending;
      const bool over = min_workers_ > 0 && !t->is_ps && (!over_by_.empty() || t->ending) && !chief_ends;
      if (!over && t->restarts < max_restarts_) {
        ++t->restarts;
        Say(t->label + " " + Describe(status) + ": restarting it (" + std::to_string(t->restarts) + " of " +
            std::to_string(max_restarts_) + ")");
        if (!Spawn(t)) failed_ = true;
        continue;
      }
      if (over) {  // after the end: neither restarted nor counted against --min-workers
        t->given_up = true;
        Say(t->label + (t->ending ? " ended" : " " + Describe(status)) + ": training is over (" + over_by_ +
            " finished): not restarting it");
        if (!(t->is_chief && has_ps_)) continue;
        // A ps cluster's chief that the launcher had to end (still running
        // past its window: hung) never ended the training: the launch fails.
        Say(t->label + " is the chief: the training's end (its evaluation, last checkpoint, the ps tasks "
                       "stopped) is lost");
        failed_ = true;
        failed_status_ = 1;
        continue;
      }
      Say(t->label + " " + Describe(status) + (max_restarts_ > 0 ? " after " + std::to_string(max_restarts_) +
                                                                        " restarts: giving up"
                                                                  : ": giving up (--max-restarts 0)"));
      if (chief_ends && min_workers_ > 0) {  // never given up: without it the training has no end
        Say(t->label + " is the chief: the training's end (its evaluation, last checkpoint, the ps tasks "
                       "stopped) is lost");
      } else if (min_workers_ > 0 && !t->is_ps) {  // elastic: the others go on while enough of them remain
        t->given_up = true;
        int left = 0;
        for (auto& w : tasks_) left += !w->is_ps && !w->given_up;
        if (left >= min_workers_) {
          Say(std::to_string(left) + " workers left (--min-workers " + std::to_string(min_workers_) +
              "): going on without " + t->label);
          continue;
        }
        Say("fewer than --min-workers " + std::to_string(min_workers_) + " workers left");
      }
      failed_ = true;
      failed_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    }
  }

  // --min-workers: the workers still running finish_wait_ms_ after one
  // finished (cut off from the others, they would wait or retry for long)
  // are ended by PID: SIGTERM, then SIGKILL after the grace period.
  void EndLateWorkers() {
    if (over_by_.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    for (auto& t : tasks_) {
      if (!t->running || t->is_ps) continue;
      // A chief restarted after the end has its own finish_wait_ms_ from its
      // restart, up to one more in all (one failing again and again ends).
      const auto wait = std::chrono::milliseconds(finish_wait_ms_);
      const bool restarted = t->started > over_at_;
      const auto since = restarted ? std::min(t->started, over_at_ + wait) : over_at_;
      if (!t->ending && now - since >= wait) {
        Say(t->label + " still running " + std::to_string(finish_wait_ms_) + " ms after " +
            (restarted ? "its restart (" + over_by_ + " finished before it)" : over_by_ + " finished") +
            ": ending it");
        t->ending = true;
        ::kill(-t->pid, SIGTERM);
      } else if (t->ending && now - since >= std::chrono::milliseconds(finish_wait_ms_ + grace_ms_)) {
        ::kill(-t->pid, SIGKILL);
      }
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
  std::vector<TaskId> run_;
  bool one_task_;
  ServerOptions serve_;
  std::vector<std::string> program_;
  int max_restarts_;
  int min_workers_;
  int max_workers_;
  std::string log_dir_;
  int grace_ms_;
  int finish_wait_ms_;
  // --min-workers: a worker finished with 0, so training is over: no more
  // restarts, and workers still running after finish_wait_ms_ are ended.
  std::string over_by_;
  std::chrono::steady_clock::time_point over_at_;
  std::vector<std::unique_ptr<Task>> tasks_;
  bool has_ps_ = false;  // the cluster has ps tasks (its chief ends the training)
  std::vector<Stream> streams_;
  bool failed_ = false;
  int failed_status_ = -1;  // the exit status of the task given up on (one task: the launcher's)
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
  LaunchPlan plan;
  TaskFlags task_flags;
  std::set<std::string> known = {"--max-restarts", "--min-workers", "--max-workers", "--log-dir", "--grace-ms",
                                 "--finish-wait-ms"};
  known.insert(kTaskFlags.begin(), kTaskFlags.end());
  known.erase("--key-passphrase-file");  // its programs get no passphrase (ACTORFLOW_TLS_* has none)
  Status parsed = ParseFlags(
      flags, known, &help,
      [&](const std::string& flag, const std::string& value) -> Status {
        bool taken = false;
        AF_RETURN_IF_ERROR(ParseTaskFlag(flag, value, &task_flags, &taken));
        if (taken) return Status::OK();
        if (flag == "--log-dir") return SetOnce(flag, value, &plan.log_dir);
        if (flag == "--max-restarts") return ParseInt(flag, value, 0, 1000, &plan.max_restarts);
        if (flag == "--min-workers") return ParseInt(flag, value, 1, 100000, &plan.min_workers);
        if (flag == "--finish-wait-ms") return ParseInt(flag, value, 0, 3600000, &plan.finish_wait_ms);
        if (flag == "--max-workers") return ParseInt(flag, value, 1, 100000, &plan.max_workers);
        return ParseInt(flag, value, 0, 3600000, &plan.grace_ms);
      },
      {kServeSwitch});
  if (help) {
    std::cout << kLaunchUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  if (task_flags.cluster.empty()) return UsageError(errors::InvalidArgument("--cluster is required"));
  if (program.empty()) return UsageError(errors::InvalidArgument("no program: put it after '--'"));
  Status s = ApplyServeFlags(task_flags.serve, nullptr, &plan.serve);
  if (s.ok()) s = CheckBindSecurity(plan.serve);
  if (!s.ok()) return UsageError(s);
  ResolvedCluster resolved;
  s = ResolveCluster(task_flags.cluster, task_flags.resolver, nullptr, &resolved);
  if (!s.ok()) return UsageError(s);
  plan.cluster = std::move(resolved.cluster);
  plan.one_task = resolved.task.valid();
  if (plan.min_workers > 0 && !plan.one_task) {
    int workers = 0;
    for (const TaskId& t : plan.cluster.tasks()) workers += t.job != "ps";
    if (plan.min_workers > workers)
      return UsageError(errors::InvalidArgument("--min-workers ", plan.min_workers, ": the cluster has ", workers,
                                                " non-ps tasks"));
    if (plan.max_workers > 0 && (plan.max_workers < plan.min_workers || plan.max_workers > workers))
      return UsageError(errors::InvalidArgument("--max-workers ", plan.max_workers, ": between --min-workers (",
                                                plan.min_workers, ") and the cluster's ", workers, " non-ps tasks"));
  }
  if (plan.max_workers > 0 && (plan.min_workers == 0 || plan.one_task))
    return UsageError(errors::InvalidArgument("--max-workers needs --min-workers and a whole cluster"));
  if (plan.min_workers > 0 && plan.one_task)
    return UsageError(errors::InvalidArgument(
        "--min-workers: this launch runs one task of the cluster (", resolved.source,
        "); whether the others go on without a task is their program's (train_distributed --elastic)"));
  plan.tasks = plan.one_task ? std::vector<TaskId>{resolved.task} : plan.cluster.tasks();
  plan.program = std::move(program);
  if (!plan.log_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(plan.log_dir, ec);
    if (ec)
      return UsageError(errors::InvalidArgument("--log-dir: cannot create '", plan.log_dir, "': ", ec.message()));
  }
  if (plan.one_task)
    std::cout << "[launch] " << resolved.task.job << ":" << resolved.task.index << " of the cluster from "
              << resolved.source << (resolved.host.empty() ? "" : ", on host " + resolved.host)
              << " (task " << resolved.local_index << " there)" << std::endl;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  Launcher launcher(std::move(plan));
  return launcher.Run();
}

}  // namespace cli
}  // namespace actorflow
