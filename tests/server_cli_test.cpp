// `actorflow server` as a program: configuration errors exit 2 naming the
// flag or file (a plaintext server on a non-loopback address is refused);
// SIGINT, SIGTERM and a ShutdownRequest from a cluster member each end it
// with exit 0; and `actorflow run --target actorflow://HOST:PORT` prints what
// a local run prints, the graph running in the server's process.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "local_cluster.hpp"
#include "test_util.hpp"
#include "actorflow/master/cluster_view.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/net/protocol.hpp"

using namespace actorflow;
using test::LocalCluster;

namespace {

using Result = actorflow::test::ShellResult;
using actorflow::test::Shell;

// The server's stderr goes to stdout here, to be checked.
Result ServerCli(const std::string& args) {
  return Shell(std::string("env -u TF_CONFIG timeout 60 ") + AF_CLI_PATH + " server " + args + " 2>&1");
}

}  // namespace

TEST_CASE("actorflow server: configuration errors exit 2 naming the flag or file", "[distributed]") {
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--job ps --task 0 --port 0 --bogus 1", "--bogus"},
           {"--job ps --task 0 --port 0 --bind 0.0.0.0", "refusing to bind 0.0.0.0"},
           {"--job ps --task 0 --port 0 --security mtls", "--security mtls"},
           {"--job ps --task 0 --port 0 --security tls", "--security"},
           {"--cluster /no/such/cluster.json --job ps --task 0", "/no/such/cluster.json"},
           {"--cluster '{\"ps\": [\"nohost\"]}' --job ps --task 0", "host:port"},
           {"--cluster '{\"ps\": [\"127.0.0.1:1\"]}' --job ps --task 3", "task"},
           {"--port 0", "job"},
           {"--job ps --task 0 --port 70000", "--port"},
           {"--job ps --task 0 --port 0 --devices cpu:0", "--devices"},
           {"--cluster slurm", "SLURM_PROCID is unset"},  // not in a Slurm step
           {"--cluster tf_config", "TF_CONFIG variable is unset"},
           {"--cluster auto --port-base 70000", "--port-base"},
       }) {
    INFO(c.args);
    Result r = ServerCli(c.args);
    INFO(r.out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.find(c.says) != std::string::npos);
  }
}

TEST_CASE("actorflow server: the ACTORFLOW_* variables are defaults its flags override", "[distributed]") {
  const std::string server = std::string("env -u TF_CONFIG -u SLURM_PROCID timeout 60 ") + AF_CLI_PATH + " server ";
  // A non-loopback bind from the environment is refused like the flag's.
  Result r = Shell("ACTORFLOW_BIND=0.0.0.0 " + server + "--job ps --task 0 --port 0 2>&1");
  INFO(r.out);
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("refusing to bind 0.0.0.0") != std::string::npos);
  r = Shell("ACTORFLOW_PEER_TIMEOUT_MS=soon " + server + "--job ps --task 0 --port 0 2>&1");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("ACTORFLOW_PEER_TIMEOUT_MS") != std::string::npos);
  // The flag wins: it serves on loopback until told to stop (here: its port file, then SIGTERM).
  actorflow::test::TempDir dir("af_server_env");
  r = Shell("ACTORFLOW_BIND=0.0.0.0 " + server + "--job ps --task 0 --port 0 --bind 127.0.0.1 --port-file " +
            dir.path() + "/port & pid=$!; for i in $(seq 200); do [ -f " + dir.path() +
            "/port ] && break; sleep 0.05; done; kill -TERM $pid; wait $pid; echo \"exit $?\"");
  INFO(r.out);
  CHECK(r.out.find("serving at actorflow://127.0.0.1:") != std::string::npos);
  CHECK(r.out.find("exit 0") != std::string::npos);
}

TEST_CASE("actorflow server: SIGINT, SIGTERM and a ShutdownRequest each end it cleanly", "[distributed]") {
  LocalCluster cluster;
  auto& a = cluster.Start("ps", 0);
  auto& b = cluster.Start("ps", 1);
  auto& w = cluster.Start("worker", 0);
  LocalCluster::Signal(a, SIGINT);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  pid_t got = 0;
  while ((got = ::waitpid(a.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(got == a.pid);
  a.pid = -1;
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(LocalCluster::Stop(&b, false) == 0);  // SIGTERM

  // A ShutdownRequest from a member of the cluster (here, a task in this process).
  ServerOptions o;
  o.task = TaskId{"chief", 0};
  o.port = 0;
  o.num_threads = 1;
  std::unique_ptr<actorflow::Server> self;
  REQUIRE(actorflow::Server::Create(o, &self).ok());
  caf::actor task;
  REQUIRE(ConnectToTask(self->runtime()->system(), "127.0.0.1:" + std::to_string(w.port), std::chrono::seconds(10),
                        &task)
              .ok());
  StatusResponse resp;
  REQUIRE(self->runtime()->channels()->Ask(task, ShutdownRequest{"training is over"}, std::chrono::seconds(10), &resp)
              .ok());
  CHECK(resp.status.ok());
  const auto until2 = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((got = ::waitpid(w.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until2)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(got == w.pid);
  w.pid = -1;
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("actorflow run --target actorflow://HOST:PORT prints what a local run prints", "[distributed]") {
  LocalCluster cluster;
  auto& ps = cluster.Start("ps", 0);
  const std::string graph = std::string(AF_TEST_DATA_DIR) + "/tf_linear.pbtxt";
  const std::string step = " --graph " + graph + " --feed 'x=[[1.0,2.0],[3.0,4.0]]' --fetch y";
  Result local = Shell(std::string("timeout 60 ") + AF_CLI_PATH + " run" + step);
  REQUIRE(local.exit_code == 0);
  for (const char* scheme : {"actorflow://", "grpc://"}) {
    Result remote = Shell(std::string("timeout 60 ") + AF_CLI_PATH + " run --target " + scheme + "127.0.0.1:" +
                          std::to_string(ps.port) + step);
    INFO(scheme);
    CHECK(remote.exit_code == 0);
    CHECK(remote.out == local.out);
  }
  Result nobody = Shell(std::string("timeout 60 ") + AF_CLI_PATH + " run --target actorflow://127.0.0.1:1" + step +
                        " 2>&1");
  CHECK(nobody.exit_code != 0);
  CHECK(nobody.out.find("127.0.0.1:1") != std::string::npos);
}
