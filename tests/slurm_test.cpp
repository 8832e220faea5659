// A real Slurm (issue 31): a one-node cluster of Debian's slurm-wlm and munge
// started by the test (tests/slurm_cluster.hpp: root, loopback ports, every
// file in a temporary directory, each daemon ended by PID).
//  - What a step's tasks see: `srun -n 3` gives each task its rank, local id
//    and the step's layout in SLURM_* variables, the very ones (names and
//    layout) of tests/data/slurm_env_3tasks.txt, the dump other tests use as
//    a real Slurm's layout.
//  - The distributed example through srun: `srun -n 3 actorflow launch
//    --cluster slurm --jobs ps:1,worker:2 --port-base P -- train_distributed
//    --mode sync`: each Slurm task resolves its role from its rank (task 0
//    the ps, serving; tasks 1 and 2 the workers, running the program with
//    TF_CONFIG), training reaches the example's accuracy, the chief stops the
//    ps task and every task exits 0.
// Without root or without slurm-wlm and munge the cases skip (a failure in
// CI, where setup.sh installs both); a cluster that does not come up fails
// with the daemons' logs.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "slurm_cluster.hpp"
#include "test_util.hpp"

using actorflow::test::SlurmCluster;

namespace {

using Env = std::map<std::string, std::string>;


// NAME=VALUE lines (comments and blank lines left out).
Env ParseEnv(const std::string& text) {
  Env env;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// tests/data/slurm_env_3tasks.txt: one block of SLURM_* lines per task, each
// opened by a line "# task N".
std::vector<Env> RecordedTasks() {
  const std::string text = ReadFile(std::string(AF_TEST_DATA_DIR) + "/slurm_env_3tasks.txt");
  std::vector<Env> tasks;
  std::istringstream in(text);
  std::string block;
  bool open = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# task ", 0) == 0) {
      if (open) tasks.push_back(ParseEnv(block));
      block.clear();
      open = true;
    } else if (open) {
      block += line + "\n";
    }
  }
  if (open) tasks.push_back(ParseEnv(block));
  return tasks;
}

// Writes the dump RecordedTasks reads from the tasks' environment files
// PREFIX.0, PREFIX.1, PREFIX.2 (their SLURM_* lines, sorted).
void WriteDump(const std::string& path, const std::string& prefix) {
  std::ofstream o(path);
  o << "# The SLURM_* environment of each task of `srun -n 3` on the one-node test cluster\n"
       "# (tests/slurm_cluster.hpp: NodeName=localhost, 16 CPUs), Slurm 22.05 (Debian 12's slurm-wlm),\n"
       "# recorded by AF_SLURM_ENV_DUMP=FILE build/tests/slurm_test; slurm_test checks that a live step\n"
       "# still has these variables and, for those describing the layout, these values.\n";
  for (int i = 0; i < 3; ++i) {
    o << "# task " << i << "\n";
    for (const auto& [name, value] : ParseEnv(ReadFile(prefix + "." + std::to_string(i))))
      if (name.rfind("SLURM", 0) == 0) o << name << "=" << value << "\n";
  }
}

}  // namespace

TEST_CASE("slurm: srun -n 3 gives each task its rank and the step's layout, as the recorded dump has them",
          "[slurm]") {
  const std::string why = SlurmCluster::Unavailable();
  if (!why.empty()) AF_SKIP_OUTSIDE_CI(why);
  SlurmCluster slurm;
  // Each task writes its environment to a file of its own.
  const std::string out = slurm.dir() + "/env";
  SlurmCluster::Result r = slurm.Run({"-n", "3", "sh", "-c", "env > " + out + ".$SLURM_PROCID"});
  INFO(r.out << "\n" << slurm.Logs());
  REQUIRE(r.code == 0);
  if (const char* dump = std::getenv("AF_SLURM_ENV_DUMP")) WriteDump(dump, out);  // re-records the dump
  const std::vector<Env> recorded = RecordedTasks();
  REQUIRE(recorded.size() == 3);
  std::string job_id;
  for (int i = 0; i < 3; ++i) {
    Env env = ParseEnv(ReadFile(out + "." + std::to_string(i)));
    INFO("task " << i);
    // This task's place.
    CHECK(env["SLURM_PROCID"] == std::to_string(i));
    CHECK(env["SLURM_LOCALID"] == std::to_string(i));
    CHECK(env["SLURM_NODEID"] == "0");
    CHECK(env["SLURMD_NODENAME"] == SlurmCluster::kNode);
    // The step's layout, the same in every task.
    CHECK(env["SLURM_STEP_NUM_TASKS"] == "3");
    CHECK(env["SLURM_STEP_NUM_NODES"] == "1");
    CHECK(env["SLURM_STEP_NODELIST"] == SlurmCluster::kNode);
    CHECK(env["SLURM_STEP_TASKS_PER_NODE"] == "3");
    CHECK(env["SLURM_NTASKS"] == "3");
    CHECK(env["SLURM_JOB_NODELIST"] == SlurmCluster::kNode);
    CHECK(env["SLURM_TASKS_PER_NODE"] == "3");
    CHECK(env["SLURM_GTIDS"] == "0,1,2");
    CHECK(env["SLURM_CONF"] == slurm.conf());
    if (i == 0) job_id = env["SLURM_JOB_ID"];
    CHECK(!job_id.empty());
    CHECK(env["SLURM_JOB_ID"] == job_id);
    // The recorded dump is this layout: every variable it names is set here,
    // and those that describe the layout (not the run: ids, ports, PIDs,
    // paths) have its values.
    for (const auto& [name, value] : recorded[i]) {
      INFO(name << "=" << value << " recorded");
      REQUIRE(env.count(name) == 1);
      static const std::regex varies(
          "SLURM_(JOB_?ID|TASK_PID|SRUN_COMM_PORT|STEP_LAUNCHER_PORT|CONF|SUBMIT_DIR|SUBMIT_HOST|WORKING_CLUSTER|"
          "CLUSTER_NAME|JOB_NAME|JOB_PARTITION|PRIO_PROCESS|UMASK|JOB_UID|JOB_GID|JOB_USER)");
      if (!std::regex_match(name, varies)) CHECK(env[name] == value);
    }
  }
}
