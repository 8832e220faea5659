// `actorflow launch` (tools/launch_command.hpp): one process per task with
// TF_CONFIG set, output prefixed with the task and logged, a task that dies
// restarted up to --max-restarts times and then given up on (exit 1), the
// children ended by PID when the launcher is told to stop, usage errors exit
// 2. Every run is bounded (`timeout`), on loopback addresses nobody dials.
#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "test_util.hpp"

extern char** environ;

namespace {

struct Result {
  int code = -1;
  std::string out;
};

// Runs `actorflow launch ARGS` through a shell, bounded by `timeout 60`.
Result Launch(const std::string& args) {
  const std::string cmd = std::string("timeout 60 ") + AF_CLI_PATH + " launch " + args + " 2>&1";
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
