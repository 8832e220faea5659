// SlurmCluster: a real one-node Slurm cluster on this machine for the tests
// (issue 31): munged with its own key and socket, slurmctld and slurmd in the
// foreground, all started by the fixture as its children, every file
// (slurm.conf, munge key and socket, state, spool, PID files, logs) in a
// temporary directory, on loopback ports picked free. Nothing of the
// system's own Slurm or munge is used or started: the clients this fixture
// runs (srun, sinfo, sbatch, ...) read SLURM_CONF, which names its
// slurm.conf, whose AuthInfo names its munge socket. The daemons listen on
// ports picked free on loopback, on every address (Slurm's
// CommunicationParameters=NoInAddrAny binds srun and slurmd to what the host
// name resolves to, not loopback on every CI machine, and slurmctld binds
// every address regardless): munge's authentication with the fixture's own
// key admits nobody else.
//
// Contract:
//  - Unavailable() says why no cluster can start here (not root; a binary of
//    slurm-wlm or munge missing), empty when it can: the test skips with it
//    (AF_SKIP_OUTSIDE_CI: setup.sh installs both, so in CI it is a failure).
//  - The constructor starts the cluster and returns once the node is idle,
//    bounded by kStartBoundS; a daemon that exits or a node that does not
//    come up is a test failure (FAIL) whose message carries the daemons'
//    logs, after everything started was ended.
//  - Run(srun args) / Exec(program args) run a client bounded by `timeout`
//    (exit 124 when it ran past), with the test process's environment less
//    any SLURM_*, SBATCH_*, SALLOC_* variables (a test run inside a real Slurm
//    job must not reach that cluster) plus SLURM_CONF; stdout and stderr
//    together come back.
//  - The destructor cancels every job of the cluster, then ends slurmd,
//    slurmctld and munged by PID (SIGTERM, SIGKILL after kStopGraceS),
//    reaps them, and removes the directory.
//  - The node declares kCpus CPUs whatever the hardware has
//    (SlurmdParameters=config_overrides): steps of more tasks than cores run.
//  - Checks (REQUIRE, FAIL) only on the test's main thread.
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "wait_until.hpp"

extern char** environ;

namespace actorflow {
namespace test {

class SlurmCluster {
 public:
  static constexpr int kCpus = 16;         // the node's CPUs (config_overrides: more than the cores)
  static constexpr int kStartBoundS = 30;  // the most start-up may take
  static constexpr int kStopGraceS = 10;   // SIGTERM to SIGKILL
  static constexpr char kNode[] = "localhost";

  struct Result {
    int code = -1;  // exit code; 124: ran past its bound; -1: no normal exit
    std::string out;
  };

  /// Why no cluster can start here; empty when one can.
  static std::string Unavailable() {
    if (::geteuid() != 0) return "the Slurm test cluster needs root (slurmd runs tasks as their user)";
    for (const char* b : {"munged", "slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scancel", "squeue", "timeout"})
      if (Which(b).empty()) return std::string(b) + " not found: apt-get install slurm-wlm munge (setup.sh)";
    return "";
  }

  SlurmCluster() {
    try {
      Up();
    } catch (...) {
      Down();
      throw;
    }
  }
  ~SlurmCluster() { Down(); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  /// `srun ARGS`, bounded by `timeout_s`.
  Result Run(const std::vector<std::string>& srun_args, int timeout_s = 60) const {
    std::vector<std::string> argv = {"srun"};
    argv.insert(argv.end(), srun_args.begin(), srun_args.end());
    return Exec(argv, timeout_s);
  }

  /// Any client (`sbatch`, `squeue`, ...; argv[0] found on PATH, /usr/bin or
  /// /usr/sbin) against this cluster, bounded by `timeout_s`.
  Result Exec(const std::vector<std::string>& argv, int timeout_s = 60) const {
    Result r;
    std::vector<std::string> full = {Which("timeout"), "-k", "5", std::to_string(timeout_s), Which(argv.at(0))};
    full.insert(full.end(), argv.begin() + 1, argv.end());
    int out[2];
    if (::pipe(out) != 0) return r;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    const int err = Spawn(full, &fa, &pid);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    if (err == 0) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) r.out.append(buf, static_cast<size_t>(n));
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    } else {
      r.out = "posix_spawn " + full[0] + ": " + std::strerror(err);
    }
    ::close(out[0]);
    return r;
  }

  /// The cluster's directory (slurm.conf, logs); a test may keep files here.
  const std::string& dir() const { return dir_; }
  std::string conf() const { return dir_ + "/slurm.conf"; }
  /// The environment assignment a shell command needs to reach this cluster.
  std::string ConfEnv() const { return "SLURM_CONF=" + conf(); }

  /// The daemons' logs (the last `tail` bytes of each), for a failure's message.
  std::string Logs(size_t tail = 6000) const {
    std::ostringstream o;
    for (const char* f : {"munged.out", "munged.log", "slurmctld.log", "slurmctld.out", "slurmd.log", "slurmd.out"}) {
      std::ifstream in(dir_ + "/" + f);
      if (!in) continue;
      std::stringstream s;
      s << in.rdbuf();
      std::string text = s.str();
      if (text.size() > tail) text = "..." + text.substr(text.size() - tail);
      o << "---- " << f << "\n" << text << "\n";
    }
    return o.str();
  }

  /// A loopback TCP port nobody listens on now (the kernel's pick).
  static int FreePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    if (fd >= 0) ::close(fd);
    return port;
  }

  /// The full path of `program` (PATH, then /usr/sbin, /usr/bin, /sbin, /bin), empty when none.
  static std::string Which(const std::string& program) {
    if (program.find('/') != std::string::npos) return program;
    std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
    dirs += ":/usr/sbin:/usr/bin:/sbin:/bin";
    std::stringstream s(dirs);
    for (std::string d; std::getline(s, d, ':');)
      if (!d.empty() && ::access((d + "/" + program).c_str(), X_OK) == 0) return d + "/" + program;
    return "";
  }

 private:
  struct Daemon {
    const char* name;
    pid_t pid = -1;
  };

  void Up() {
    char tmpl[] = "/tmp/af_slurm_XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    // munged requires its socket's directory to be searchable by all (and
    // not writable by others); its key readable by its owner only.
    REQUIRE(::chmod(dir_.c_str(), 0755) == 0);
    for (const char* d : {"state", "spool"}) REQUIRE(::mkdir((dir_ + "/" + d).c_str(), 0755) == 0);
    WriteKey(dir_ + "/munge.key");
    const std::string sock = dir_ + "/munge.sock";
    Start(&munged_, {Which("munged"), "--foreground", "--socket=" + sock, "--key-file=" + dir_ + "/munge.key",
                     "--pid-file=" + dir_ + "/munged.pid", "--seed-file=" + dir_ + "/munged.seed",
                     "--log-file=" + dir_ + "/munged.log", "--num-threads=2"},
          "munged.out");
    const auto bound = std::chrono::seconds(kStartBoundS);
    const auto until = std::chrono::steady_clock::now() + bound;
    auto left = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    };
    struct stat st {};
    if (!WaitUntil([&] { return !Alive(munged_) || ::stat(sock.c_str(), &st) == 0; }, left(),
                   std::chrono::milliseconds(20)) ||
        !Alive(munged_))
      FAIL("munged did not create its socket " << sock << "\n" << Logs());
    WriteConf(sock);
    Start(&slurmctld_, {Which("slurmctld"), "-D", "-f", conf()}, "slurmctld.out");
    Start(&slurmd_, {Which("slurmd"), "-D", "-N", kNode, "-f", conf()}, "slurmd.out");
    std::string state;
    const bool idle = WaitUntil(
        [&] {
          if (!Alive(munged_) || !Alive(slurmctld_) || !Alive(slurmd_)) return true;
          Result r = Exec({"sinfo", "-h", "-n", kNode, "-o", "%T"}, 5);
          state = r.out;
          return r.code == 0 && r.out == "idle\n";
        },
        left(), std::chrono::milliseconds(200));
    for (Daemon* d : {&munged_, &slurmctld_, &slurmd_})
      if (!Alive(*d)) FAIL(d->name << " exited while the Slurm test cluster started\n" << Logs());
    if (!idle)
      FAIL("the Slurm test cluster's node is not idle after " << kStartBoundS << " s (sinfo: " << state << ")\n"
                                                              << Logs());
  }

  void Down() {
    if (Alive(slurmctld_)) {
      // Every job ends first: its slurmstepd and tasks are not our children.
      Exec({"scancel", "--user=root", "--full"}, 10);
      WaitUntil([&] { return Exec({"squeue", "-h", "-o", "%i"}, 5).out.empty(); }, std::chrono::seconds(10),
                std::chrono::milliseconds(100));
    }
    for (Daemon* d : {&slurmd_, &slurmctld_, &munged_}) Stop(d);
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  static void WriteKey(const std::string& path) {
    // 1024 bits from the kernel's generator (what mungekey writes), mode 0600.
    std::ifstream rnd("/dev/urandom", std::ios::binary);
    std::string key(128, '\0');
    REQUIRE(rnd.read(&key[0], static_cast<std::streamsize>(key.size())));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()));
    ::close(fd);
  }

  void WriteConf(const std::string& munge_socket) const {
    int ctld_port = FreePort(), slurmd_port = FreePort();
    while (slurmd_port == ctld_port) slurmd_port = FreePort();
    REQUIRE(ctld_port > 0);
    REQUIRE(slurmd_port > 0);
    std::ofstream c(conf());
    c << "# The one-node test cluster of tests/slurm_cluster.hpp: every path in " << dir_ << "\n"
      << "ClusterName=aftest\n"
      << "SlurmctldHost=" << kNode << "(127.0.0.1)\n"
      << "SlurmctldPort=" << ctld_port << "\nSlurmdPort=" << slurmd_port << "\n"
      << "SlurmUser=root\nSlurmdUser=root\n"
      << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << munge_socket << "\n"
      << "StateSaveLocation=" << dir_ << "/state\nSlurmdSpoolDir=" << dir_ << "/spool\n"
      << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\nSlurmdPidFile=" << dir_ << "/slurmd.pid\n"
      << "SlurmctldLogFile=" << dir_ << "/slurmctld.log\nSlurmdLogFile=" << dir_ << "/slurmd.log\n"
      << "SlurmctldDebug=info\nSlurmdDebug=info\n"
      // No cgroups, accounting or MPI: processes tracked by their parents, tasks run as they are.
      << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
      << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
      << "MpiDefault=none\nSwitchType=switch/none\nMailProg=/bin/true\n"
      << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
      << "ReturnToService=2\nSlurmdTimeout=60\nInactiveLimit=0\nKillWait=5\nMinJobAge=10\n"
      << "SlurmdParameters=config_overrides\n"
      << "NodeName=" << kNode << " NodeAddr=127.0.0.1 CPUs=" << kCpus << " State=UNKNOWN\n"
      << "PartitionName=test Nodes=" << kNode << " Default=YES MaxTime=INFINITE State=UP\n";
    REQUIRE(c.good());
  }

  /// The environment of every child: ours less any Slurm job's, plus SLURM_CONF.
  std::vector<std::string> ChildEnv() const {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string v = *e;
      if (v.rfind("SLURM_", 0) == 0 || v.rfind("SBATCH_", 0) == 0 || v.rfind("SALLOC_", 0) == 0) continue;
      env.push_back(v);
    }
    env.push_back(ConfEnv());
    return env;
  }

  int Spawn(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* fa, pid_t* pid) const {
    std::vector<std::string> env = ChildEnv();
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    return ::posix_spawn(pid, a[0], fa, nullptr, a.data(), e.data());
  }

  /// Starts a daemon in the foreground, its stdout and stderr in `out_file`.
  /// Through util-linux's setpriv where there is one: the daemon gets SIGTERM
  /// when the test process dies (a crash, CTest's timeout) before ending it.
  void Start(Daemon* d, std::vector<std::string> argv, const char* out_file) {
    const std::string setpriv = Which("setpriv");
    if (!setpriv.empty()) argv.insert(argv.begin(), {setpriv, "--pdeathsig", "TERM", "--"});
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string out = dir_ + "/" + out_file;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int err = Spawn(argv, &fa, &d->pid);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
      d->pid = -1;
      FAIL("posix_spawn " << argv[0] << ": " << std::strerror(err));
    }
  }

  /// Whether the daemon still runs (reaps it when it has exited).
  static bool Alive(Daemon& d) {
    if (d.pid <= 0) return false;
    int status = 0;
    if (::waitpid(d.pid, &status, WNOHANG) == 0) return true;
    d.pid = -1;
    return false;
  }

  static void Stop(Daemon* d) {
    if (d->pid <= 0) return;
    ::kill(d->pid, SIGTERM);
    int status = 0;
    pid_t got = 0;
    WaitUntil([&] { return (got = ::waitpid(d->pid, &status, WNOHANG)) != 0; }, std::chrono::seconds(kStopGraceS),
              std::chrono::milliseconds(10));
    if (got == 0) {
      ::kill(d->pid, SIGKILL);
      ::waitpid(d->pid, &status, 0);
    }
    d->pid = -1;
  }

  std::string dir_;
  Daemon munged_{"munged"}, slurmctld_{"slurmctld"}, slurmd_{"slurmd"};
};

}  // namespace test
}  // namespace actorflow
