// `actorflow launch` (tools/launch_command.hpp): one process per task with
// TF_CONFIG set, output prefixed with the task and logged, a task that dies
// restarted up to --max-restarts times and then given up on (exit 1), the
// children ended by PID when the launcher is told to stop, usage errors exit
// 2. Inside a cluster manager, one launch per task: three launches with the
// variables srun gives a step's tasks (no Slurm needed), each becoming its
// task, exit codes passed on, the ps served until the chief (here the test)
// stops it; and Kubeflow's TF_CONFIG strings (DNS names, the sparse view,
// an evaluator). Every run is bounded (`timeout` or a waited-for PID), on
// loopback addresses.
#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "actorflow/master/server.hpp"
#include "spawn_util.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

extern char** environ;

namespace {

struct Result {
  int code = -1;
  std::string out;
};

// Runs `actorflow launch ARGS` through a shell, bounded by `timeout 60`, with
// TF_CONFIG set to `tf_config` (unset when empty), no Slurm step's variables
// but `vars` ("NAME=VALUE ...").
Result Launch(const std::string& args, const std::string& tf_config = "", const std::string& vars = "") {
  const std::string env = "env -u SLURM_PROCID -u SLURM_STEP_ID -u SLURM_STEPID " +
                          (tf_config.empty() ? std::string("-u TF_CONFIG") : "TF_CONFIG='" + tf_config + "'") + " " +
                          vars + " ";
  const std::string cmd = env + "timeout 60 " + AF_CLI_PATH + " launch " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  Result r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const char kTwoWorkers[] = R"('{"worker": ["127.0.0.1:1", "127.0.0.1:2"]}')";
const char kOneWorker[] = R"('{"worker": ["127.0.0.1:1"]}')";

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// Whether 127.0.0.1:port can be bound now.
bool Bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A port base with `n` free ports from it, below the ephemeral range (where
// the servers' transports take theirs).
int FreePorts(int n) {
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = 20000 + static_cast<int>(rng() % 12000);
    bool all = true;
    for (int i = 0; i < n && all; ++i) all = Bindable(base + i);
    if (all) return base;
  }
  FAIL("no " << n << " free ports in 20000..32000");
  return 0;
}

// `argv` started with `vars` added to the environment, its output (stdout and stderr) to `out`.
pid_t StartProcess(std::vector<std::string> all, const std::map<std::string, std::string>& vars,
                   const std::string& out) {
  return actorflow::test::SpawnWithEnvironment(std::move(all), vars, out);
}

// `actorflow launch ARGS`, as StartProcess.
pid_t StartLaunch(const std::vector<std::string>& args, const std::map<std::string, std::string>& vars,
                  const std::string& out) {
  std::vector<std::string> all = {AF_CLI_PATH, "launch"};
  all.insert(all.end(), args.begin(), args.end());
  return StartProcess(all, vars, out);
}

// Tells the ps tasks of `cluster` to stop, as train_distributed's chief does,
// from a Server of this process (worker 0, on a port of its own).
actorflow::Status StopPsTasks(const std::string& cluster) {
  actorflow::ServerOptions chief;
  AF_RETURN_IF_ERROR(actorflow::ClusterSpec::Parse(cluster, &chief.cluster));
  chief.has_cluster = true;
  chief.task = {"worker", 0};
  chief.port = 0;
  chief.num_threads = 2;
  std::unique_ptr<actorflow::Server> me;
  AF_RETURN_IF_ERROR(actorflow::Server::Create(chief, &me));
  return me->ShutdownTasks("ps", "training is over");
}

// The exit status of `pid` within `bound` (killed and -1 when it runs longer).
int WaitExit(pid_t pid, std::chrono::seconds bound) {
  int status = 0;
  pid_t got = 0;
  const bool exited = actorflow::test::WaitUntil([&] { return (got = ::waitpid(pid, &status, WNOHANG)) != 0; },
                                                 bound, std::chrono::milliseconds(10));
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return got == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The pid a launcher reports for its task ("[launch] ps:0 started (pid N)"), or -1.
pid_t StartedPid(const std::string& out, const std::string& label) {
  const std::string mark = "[launch] " + label + " started (pid ";
  const size_t at = out.find(mark);
  return at == std::string::npos ? -1 : std::stoi(out.substr(at + mark.size()));
}

// What srun gives task `rank` of `srun -n 3` on one node (localhost).
std::map<std::string, std::string> SrunVars(int rank) {
  return {{"SLURM_JOB_ID", "7"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEPID", "0"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_LOCALID", std::to_string(rank)},
          {"SLURM_NODEID", "0"},
          {"SLURMD_NODENAME", "localhost"},
          {"SLURM_NTASKS", "3"},
          {"SLURM_NPROCS", "3"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_STEP_NUM_NODES", "1"},
          {"SLURM_JOB_NODELIST", "localhost"},
          {"SLURM_NODELIST", "localhost"},
          {"SLURM_STEP_NODELIST", "localhost"},
          {"SLURM_TASKS_PER_NODE", "3"},
          {"SLURM_STEP_TASKS_PER_NODE", "3"},
          // What the flags override, and the launcher must not hand on.
          {"ACTORFLOW_BIND", "10.1.2.3"},
          {"ACTORFLOW_INSECURE", "1"}};
}

}  // namespace

TEST_CASE("launch: every task runs with its TF_CONFIG, its lines prefixed and logged", "[distributed]") {
  actorflow::test::TempDir dir("af_launch");
  Result r = Launch(std::string("--cluster ") + kTwoWorkers + " --log-dir " + dir.path() +
                    R"( -- sh -c 'echo "config $TF_CONFIG"')");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(Count(r.out, R"([worker:0] config {"cluster": {"worker":["127.0.0.1:1","127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}})") == 1);
  CHECK(Count(r.out, R"([worker:1] config {"cluster": {"worker":["127.0.0.1:1","127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}})") == 1);
  std::ifstream log(dir.path() + "/worker-1.log");
  std::stringstream text;
  text << log.rdbuf();
  CHECK(text.str().find(R"("index": 1)") != std::string::npos);
}

TEST_CASE("launch: a task that dies is restarted; after --max-restarts it is given up on, exit 1", "[distributed]") {
  actorflow::test::TempDir dir("af_launch");
  // Fails the first time, succeeds the second.
  const std::string marker = dir.path() + "/ran";
  Result once = Launch(std::string("--cluster ") + kOneWorker + " --max-restarts 1 -- sh -c 'if [ -f " + marker +
                       " ]; then echo second; else touch " + marker + "; echo first; exit 3; fi'");
  INFO(once.out);
  CHECK(once.code == 0);
  CHECK(Count(once.out, "[worker:0] first") == 1);
  CHECK(Count(once.out, "[worker:0] second") == 1);
  CHECK(Count(once.out, "worker:0 exited with 3: restarting it (1 of 1)") == 1);
  // Always fails: started 1 + 2 times, then given up.
  Result never = Launch(std::string("--cluster ") + kOneWorker + " --max-restarts 2 -- sh -c 'echo try; exit 3'");
  INFO(never.out);
  CHECK(never.code == 1);
  CHECK(Count(never.out, "[worker:0] try") == 3);
  CHECK(Count(never.out, "giving up") == 1);
  // A signal is a death too.
  Result killed = Launch(std::string("--cluster ") + kOneWorker + " -- sh -c 'kill -9 $$'");
  INFO(killed.out);
  CHECK(killed.code == 1);
  CHECK(Count(killed.out, "killed by signal 9") == 1);
}

TEST_CASE("launch: told to stop, it ends every task by PID and exits 1", "[distributed]") {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  posix_spawn_file_actions_t a;
  posix_spawn_file_actions_init(&a);
  posix_spawn_file_actions_adddup2(&a, out[1], 1);
  posix_spawn_file_actions_addclose(&a, out[0]);
  std::vector<std::string> args = {AF_CLI_PATH, "launch", "--cluster", R"({"worker": ["127.0.0.1:1"]})",
                                   "--grace-ms", "2000", "--", "sh", "-c", "echo pid $$; exec sleep 60"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t launcher = -1;
  REQUIRE(::posix_spawn(&launcher, AF_CLI_PATH, &a, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&a);
  ::close(out[1]);
  // The task's own pid, from its first line.
  std::string text;
  pid_t task = -1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char buf[512];
  while (task < 0 && std::chrono::steady_clock::now() < until) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    const size_t at = text.find("[worker:0] pid ");
    if (at != std::string::npos && text.find('\n', at) != std::string::npos) task = std::stoi(text.substr(at + 15));
  }
  INFO(text);
  REQUIRE(task > 0);
  REQUIRE(::kill(launcher, SIGTERM) == 0);
  int status = 0;
  pid_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((got = ::waitpid(launcher, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (got == 0) ::kill(launcher, SIGKILL), ::waitpid(launcher, &status, 0);
  REQUIRE(got == launcher);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(::kill(task, 0) == -1);  // ended and reaped by the launcher
  ::close(out[0]);
}

TEST_CASE("launch: usage errors exit 2 naming the problem", "[distributed]") {
  Result no_program = Launch(std::string("--cluster ") + kOneWorker);
  CHECK(no_program.code == 2);
  CHECK(no_program.out.find("--") != std::string::npos);
  Result bad_cluster = Launch(R"(--cluster '{"worker": ["nohostport"]}' -- true)");
  CHECK(bad_cluster.code == 2);
  CHECK(bad_cluster.out.find("--cluster") != std::string::npos);
  Result only_ps = Launch(R"(--cluster '{"ps": ["127.0.0.1:1"]}' -- true)");
  CHECK(only_ps.code == 2);
  Result no_cluster = Launch("-- true");
  CHECK(no_cluster.code == 2);
}

TEST_CASE("launch under srun: each Slurm task becomes its task; exit codes pass; the chief stops the ps",
          "[distributed]") {
  actorflow::test::TempDir dir("af_launch_slurm");
  const int base = FreePorts(3);
  const std::string p0 = std::to_string(base), p1 = std::to_string(base + 1), p2 = std::to_string(base + 2);
  // The same command line for every task, as srun starts it; worker 1 (rank 2) fails with 3.
  const std::vector<std::string> args = {
      "--cluster", "slurm", "--jobs", "ps:1,worker:2", "--port-base", p0, "--bind", "127.0.0.1",
      "--heartbeat-ms", "100", "--peer-timeout-ms", "1500", "--",
      "sh", "-c", R"(echo "config $TF_CONFIG"; env | grep ^ACTORFLOW_ | sort; exit $((SLURM_PROCID == 2 ? 3 : 0)))"};
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 3; ++rank)
    pids.push_back(StartLaunch(args, SrunVars(rank), dir / ("rank" + std::to_string(rank))));
  const int worker0 = WaitExit(pids[1], std::chrono::seconds(30));
  const int worker1 = WaitExit(pids[2], std::chrono::seconds(30));
  const std::string w0 = ReadFile(dir / "rank1"), w1 = ReadFile(dir / "rank2");
  INFO(w0 << w1);
  CHECK(worker0 == 0);
  CHECK(worker1 == 3);  // the task's own status, as srun collects it
  const std::string cluster = R"({"ps":["localhost:)" + p0 + R"("],"worker":["localhost:)" + p1 +
                              R"(","localhost:)" + p2 + R"("]})";
  CHECK(Count(w0, R"([worker:0] config {"cluster": )" + cluster + R"(, "task": {"type": "worker", "index": 0}})") == 1);
  CHECK(Count(w1, R"([worker:1] config {"cluster": )" + cluster + R"(, "task": {"type": "worker", "index": 1}})") == 1);
  // How to serve: the flags, over the inherited variables, each once.
  for (const std::string* out : {&w0, &w1}) {
    CHECK(Count(*out, "ACTORFLOW_BIND=") == 1);
    CHECK(Count(*out, "ACTORFLOW_BIND=127.0.0.1") == 1);
    CHECK(Count(*out, "ACTORFLOW_INSECURE=1") == 1);  // from the environment: no flag said otherwise
    CHECK(Count(*out, "ACTORFLOW_HEARTBEAT_MS=100") == 1);
    CHECK(Count(*out, "ACTORFLOW_PEER_TIMEOUT_MS=1500") == 1);
  }
  CHECK(Count(w0, "[launch] worker:0 of the cluster from Slurm step: SLURM_PROCID=1") == 1);
  CHECK(Count(w1, "worker:1 exited with 3: giving up") == 1);
  // The ps serves on its address until the chief stops it.
  std::string ps;
  REQUIRE(actorflow::test::WaitUntil(
      [&] { return (ps = ReadFile(dir / "rank0")).find("serving at actorflow://127.0.0.1:" + p0) != std::string::npos; },
      std::chrono::seconds(20), std::chrono::milliseconds(20)));
  const pid_t server = StartedPid(ps, "ps:0");
  CHECK(server > 0);
  const actorflow::Status stopped = StopPsTasks(cluster);
  INFO(stopped.ToString());
  CHECK(stopped.ok());
  const int ps_code = WaitExit(pids[0], std::chrono::seconds(30));
  ps = ReadFile(dir / "rank0");
  INFO(ps);
  CHECK(ps_code == 0);
  CHECK(Count(ps, "stopping (shutdown requested: training is over)") == 1);
  CHECK(Count(ps, "[launch] ps:0 finished") == 1);
  CHECK(::kill(server, 0) == -1);  // ended and reaped by its launcher
}

TEST_CASE("launch --cluster tf_config: Kubeflow's TF_CONFIG, one task per pod", "[distributed]") {
  const std::string print = R"( -- sh -c 'echo "config $TF_CONFIG"; exit 5')";
  // A worker of a TFJob: DNS names, "environment": "cloud"; it runs alone, its exit status passes.
  const std::string cluster = R"("cluster":{"ps":["mnist-ps-0.kubeflow.svc:2222"],)"
                              R"("worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"],)"
                              R"("evaluator":["mnist-evaluator-0.kubeflow.svc:2222"]})";
  const std::string seen = R"({"cluster": {"ps":["mnist-ps-0.kubeflow.svc:2222"],)"
                           R"("worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"]}, )";
  Result worker = Launch("--cluster tf_config" + print,
                         "{" + cluster + R"(,"task":{"type":"worker","index":1},"environment":"cloud"})");
  INFO(worker.out);
  CHECK(worker.code == 5);
  CHECK(Count(worker.out, "[worker:1] config " + seen + R"("task": {"type": "worker", "index": 1}})") == 1);
  CHECK(Count(worker.out, "[launch] worker:1 of the cluster from TF_CONFIG, on host mnist-worker-1.kubeflow.svc") == 1);
  CHECK(Count(worker.out, "[worker:0]") == 0);
  CHECK(Count(worker.out, "[ps:0]") == 0);
  // The evaluator runs the program beside the cluster.
  Result evaluator = Launch("--cluster auto" + print,
                            "{" + cluster + R"(,"task":{"type":"evaluator","index":0},"environment":"cloud"})");
  INFO(evaluator.out);
  CHECK(evaluator.code == 5);
  CHECK(Count(evaluator.out, "[evaluator:0] config " + seen + R"("task": {"type": "evaluator", "index": 0}})") == 1);
  // A dynamic worker's sparse view, handed on as it came (under "sparseCluster": the program
  // knows it sees only itself of its job).
  Result sparse = Launch("--cluster tf_config" + print,
                         R"({"sparseCluster":{"worker":{"3":"mnist-worker-3.kubeflow.svc:2222"},)"
                         R"("ps":["mnist-ps-0.kubeflow.svc:2222"]},"task":{"type":"worker","index":3}})");
  INFO(sparse.out);
  CHECK(sparse.code == 5);
  CHECK(Count(sparse.out, R"([worker:3] config {"sparseCluster": {"ps":["mnist-ps-0.kubeflow.svc:2222"],)"
                          R"("worker":{"3":"mnist-worker-3.kubeflow.svc:2222"}}, "task": {"type": "worker", "index": 3}})") == 1);

  // The TFJob's ps, on its port (its DNS name is for the others to dial): it serves until its
  // launcher is told to stop, which ends it by PID.
  actorflow::test::TempDir dir("af_launch_k8s");
  const std::string port = std::to_string(FreePorts(1));
  const pid_t launcher = StartLaunch(
      {"--cluster", "tf_config", "--", "false"},
      {{"TF_CONFIG", R"({"cluster":{"ps":["mnist-ps-0.kubeflow.svc:)" + port +
                         R"("],"worker":["mnist-worker-0.kubeflow.svc:2222"]},"task":{"type":"ps","index":0},)"
                         R"("environment":"cloud"})"}},
      dir / "ps");
  std::string ps;
  const bool serving = actorflow::test::WaitUntil(
      [&] { return (ps = ReadFile(dir / "ps")).find("serving at actorflow://127.0.0.1:" + port) != std::string::npos; },
      std::chrono::seconds(20), std::chrono::milliseconds(20));
  const pid_t server = StartedPid(ps, "ps:0");
  ::kill(launcher, SIGTERM);
  const int code = WaitExit(launcher, std::chrono::seconds(30));
  INFO(ReadFile(dir / "ps"));
  CHECK(serving);
  CHECK(server > 0);
  CHECK(code == 1);
  CHECK(::kill(server, 0) == -1);  // ended and reaped by its launcher
}

TEST_CASE("launch inside a cluster manager: usage errors exit 2 naming the variable or flag", "[distributed]") {
  Result outside = Launch("--cluster slurm -- true");
  CHECK(outside.code == 2);
  CHECK(outside.out.find("SLURM_PROCID") != std::string::npos);
  Result open = Launch(std::string("--cluster ") + kOneWorker + " --bind 0.0.0.0 -- true");
  CHECK(open.code == 2);
  CHECK(open.out.find("refusing to bind 0.0.0.0") != std::string::npos);
  Result mtls = Launch(std::string("--cluster ") + kOneWorker + " --security mtls --cert /no/c.pem -- true");
  CHECK(mtls.code == 2);
  CHECK(mtls.out.find("--security mtls") != std::string::npos);
  Result passphrase = Launch(std::string("--cluster ") + kOneWorker + " --key-passphrase-file /x -- true");
  CHECK(passphrase.code == 2);
  CHECK(passphrase.out.find("--key-passphrase-file") != std::string::npos);
  Result jobs = Launch("--cluster slurm --jobs ps:1,worker:2 -- true", "",
                       "SLURM_PROCID=0 SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NODELIST=localhost "
                       "SLURM_STEP_TASKS_PER_NODE=2");
  CHECK(jobs.code == 2);
  CHECK(jobs.out.find("--jobs ps:1,worker:2 has 3 tasks but SLURM_STEP_NUM_TASKS=2") != std::string::npos);
  Result env = Launch(std::string("--cluster ") + kOneWorker + " -- true", "", "ACTORFLOW_HEARTBEAT_MS=soon");
  CHECK(env.code == 2);
  CHECK(env.out.find("ACTORFLOW_HEARTBEAT_MS") != std::string::npos);
}

TEST_CASE("examples/kubernetes: the TF_CONFIG each pod gets, through launch and entrypoint.sh", "[distributed]") {
  const std::string examples = std::string(AF_TEST_DATA_DIR) + "/../../examples/kubernetes";
  // tfjob.yaml: what the training operator gives pod mnist-worker-1 (Go's encoding of its TFConfig),
  // through the manifest's command.
  const std::string tfjob = ReadFile(examples + "/tfjob.yaml");
  CHECK(Count(tfjob, R"(command: ["actorflow", "launch", "--cluster", "tf_config", "--",)") == 1);
  Result worker = Launch(R"(--cluster tf_config -- sh -c 'echo "config $TF_CONFIG"')",
                         R"({"cluster":{"ps":["mnist-ps-0.kubeflow.svc:2222"],"worker":["mnist-worker-0.kubeflow.svc:2222",)"
                         R"("mnist-worker-1.kubeflow.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
  INFO(worker.out);
  CHECK(worker.code == 0);
  CHECK(Count(worker.out, R"([worker:1] config {"cluster": {"ps":["mnist-ps-0.kubeflow.svc:2222"],"worker":)"
                          R"(["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"]}, )"
                          R"("task": {"type": "worker", "index": 1}})") == 1);

  // statefulset.yaml: entrypoint.sh makes TF_CONFIG from the pod's name, with the variables the manifest sets.
  const std::string manifest = ReadFile(examples + "/statefulset.yaml");
  for (const char* var : {"POD_NAME", "NAMESPACE", "SERVICE", "PS_REPLICAS", "WORKER_REPLICAS", "PORT",
                          "STAY_AFTER_SUCCESS"}) {
    INFO(var);
    const std::string item = std::string("- name: ") + var;
    CHECK(Count(manifest, item + "\n") + Count(manifest, item + " ") == 2);  // in both StatefulSets
  }
  const std::string entry = "env -u SLURM_PROCID -u SLURM_STEP_ID -u TF_CONFIG NAMESPACE=train SERVICE=actorflow "
                            "PS_REPLICAS=1 WORKER_REPLICAS=2 PORT=2222 ACTORFLOW=" AF_CLI_PATH " timeout 60 sh " +
                            examples + "/entrypoint.sh";
  auto shell = actorflow::test::Shell(std::string("POD_NAME=actorflow-worker-1 ") + entry +
                                      R"( sh -c 'echo "config $TF_CONFIG"; exit 7' 2>&1)");
  INFO(shell.out);
  CHECK(shell.exit_code == 7);  // the task's status, through launch and the entry point
  CHECK(Count(shell.out, R"([worker:1] config {"cluster": {"ps":["actorflow-ps-0.actorflow.train.svc:2222"],)"
                         R"("worker":["actorflow-worker-0.actorflow.train.svc:2222",)"
                         R"("actorflow-worker-1.actorflow.train.svc:2222"]}, "task": {"type": "worker", "index": 1}})") == 1);
  shell = actorflow::test::Shell("POD_NAME=actorflow-evaluator-0 " + entry + " true 2>&1");
  CHECK(shell.exit_code == 2);
  CHECK(shell.out.find("not PREFIX-ps-N or PREFIX-worker-N") != std::string::npos);

  // The ps pod serves on its port until the chief stops it; its entry point then exits 0.
  actorflow::test::TempDir dir("af_k8s_entry");
  const std::string port = std::to_string(FreePorts(1));
  const pid_t pod = StartProcess({"/bin/sh", examples + "/entrypoint.sh", "true"},
                                 {{"POD_NAME", "actorflow-ps-0"}, {"NAMESPACE", "train"}, {"SERVICE", "actorflow"},
                                  {"PS_REPLICAS", "1"}, {"WORKER_REPLICAS", "2"}, {"PORT", port},
                                  {"ACTORFLOW", AF_CLI_PATH}, {"DONE_DIR", dir.path()}},
                                 dir / "ps");
  const bool serving = actorflow::test::WaitUntil(
      [&] { return ReadFile(dir / "ps").find("serving at actorflow://127.0.0.1:" + port) != std::string::npos; },
      std::chrono::seconds(20), std::chrono::milliseconds(20));
  const actorflow::Status stopped =
      serving ? StopPsTasks(R"({"ps": ["127.0.0.1:)" + port + R"("], "worker": ["127.0.0.1:1"]})")
              : actorflow::errors::Unavailable("the ps never served");
  const int code = WaitExit(pod, std::chrono::seconds(30));
  INFO(ReadFile(dir / "ps"));
  CHECK(serving);
  CHECK(stopped.ok());
  CHECK(code == 0);
  CHECK(!std::filesystem::exists(dir / "done"));  // STAY_AFTER_SUCCESS unset: no marker, no waiting
}
