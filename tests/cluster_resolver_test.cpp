// Cluster resolvers (core/cluster_resolver.hpp) and Slurm's compressed lists
// (core/slurm_hostlist.hpp): hostlists and tasks-per-node strings expanded as
// Slurm writes them; a Slurm task placed in its step from srun's variables
// (several layouts, step over job variables, roles by --jobs, ports); TF_CONFIG
// as TensorFlow and Kubeflow's training operator write it (DNS names,
// "environment": "cloud", the sparse view of dynamic workers, evaluators);
// auto's precedence; and every malformed input refused naming its variable.
// The environment is a map given to the resolver: nothing here calls setenv.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "actorflow/core/cluster_resolver.hpp"
#include "actorflow/core/slurm_hostlist.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

using Vars = std::map<std::string, std::string>;

EnvironmentReader Reader(const Vars& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::vector<std::string> Hosts(const std::string& list) {
  std::vector<std::string> hosts;
  const Status s = ExpandHostlist(list, &hosts);
  INFO(list << ": " << s.ToString());
  REQUIRE(s.ok());
  return hosts;
}

std::vector<int> Counts(const std::string& text) {
  std::vector<int> counts;
  const Status s = ExpandTasksPerNode(text, &counts);
  INFO(text << ": " << s.ToString());
  REQUIRE(s.ok());
  return counts;
}

ResolvedCluster Resolve(const std::string& spec, const Vars& vars, const std::string& jobs = "", int port_base = 8888) {
  ClusterResolverOptions options;
  options.jobs = jobs;
  options.port_base = port_base;
  ResolvedCluster r;
  const Status s = ResolveCluster(spec, options, Reader(vars), &r);
  INFO(spec << " " << jobs << ": " << s.ToString());
  REQUIRE(s.ok());
  return r;
}

// The InvalidArgument message of resolving; FAILs if it resolves.
std::string Refusal(const std::string& spec, const Vars& vars, const std::string& jobs = "", int port_base = 8888) {
  ClusterResolverOptions options;
  options.jobs = jobs;
  options.port_base = port_base;
  ResolvedCluster r;
  const Status s = ResolveCluster(spec, options, Reader(vars), &r);
  INFO(spec << " " << jobs);
  REQUIRE(!s.ok());
  CHECK(s.code() == Code::kInvalidArgument);
  return s.message();
}

std::string AddressOf(const ClusterSpec& cluster, const std::string& job, int index) {
  std::string address;
  REQUIRE(cluster.Address({job, index}, &address).ok());
  return address;
}

// What srun puts in the environment of task `rank` of `srun -N 2 -n 4` in a
// job of 2 nodes: an `env | grep SLURM` of a real step (as in the anchors'
// gist), the job's and the step's variables both present.
Vars TwoNodesTwoTasks(int rank) {
  return {{"SLURM_JOB_ID", "4111"},
          {"SLURM_JOBID", "4111"},
          {"SLURM_JOB_NAME", "bash"},
          {"SLURM_JOB_NODELIST", "gnode[37,40]"},
          {"SLURM_NODELIST", "gnode[37,40]"},
          {"SLURM_JOB_NUM_NODES", "2"},
          {"SLURM_NNODES", "2"},
          {"SLURM_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_NTASKS", "4"},
          {"SLURM_NPROCS", "4"},
          {"SLURM_JOB_CPUS_PER_NODE", "40(x2)"},
          {"SLURM_CPUS_ON_NODE", "40"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEPID", "0"},
          {"SLURM_STEP_NODELIST", "gnode[37,40]"},
          {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_NUM_TASKS", "4"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_STEP_LAUNCHER_PORT", "42791"},
          {"SLURM_SRUN_COMM_HOST", "10.1.5.37"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_LOCALID", std::to_string(rank % 2)},
          {"SLURM_NODEID", std::to_string(rank / 2)},
          {"SLURMD_NODENAME", rank < 2 ? "gnode37" : "gnode40"},
          {"SLURM_GTIDS", rank < 2 ? "0,1" : "2,3"},
          {"SLURM_TASK_PID", "21345"},
          {"SLURM_CLUSTER_NAME", "ada"},
          {"SLURM_SUBMIT_DIR", "/home/user"}};
}

}  // namespace

TEST_CASE("slurm hostlist: ranges, lists, zero padding, several brackets, in order", "[cluster]") {
  CHECK(Hosts("n1") == std::vector<std::string>{"n1"});
  CHECK(Hosts("n[1-2,5],m7") == std::vector<std::string>{"n1", "n2", "n5", "m7"});
  CHECK(Hosts("o[3-4,6,7-9]") == std::vector<std::string>{"o3", "o4", "o6", "o7", "o8", "o9"});
  CHECK(Hosts("n[1-2],m5,o[3-4,6,7-9]") ==
        std::vector<std::string>{"n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"});  // TensorFlow's example
  CHECK(Hosts("nid[001-003]") == std::vector<std::string>{"nid001", "nid002", "nid003"});
  CHECK(Hosts("nid[008-010]") == std::vector<std::string>{"nid008", "nid009", "nid010"});
  CHECK(Hosts("n[8-10]") == std::vector<std::string>{"n8", "n9", "n10"});
  CHECK(Hosts("gnode[10,20,25,37]") == std::vector<std::string>{"gnode10", "gnode20", "gnode25", "gnode37"});
  CHECK(Hosts("n[1-2]-ib") == std::vector<std::string>{"n1-ib", "n2-ib"});
  CHECK(Hosts("r[1-2]-n[1-2]") == std::vector<std::string>{"r1-n1", "r1-n2", "r2-n1", "r2-n2"});
  CHECK(Hosts("[1-2]") == std::vector<std::string>{"1", "2"});
  CHECK(Hosts("node.cluster.org,localhost") == std::vector<std::string>{"node.cluster.org", "localhost"});
  CHECK(Hosts("n[0-65535]").size() == 65536);
}

TEST_CASE("slurm hostlist: malformed lists are refused saying what is wrong", "[cluster]") {
  struct Case {
    std::string list, says;
  };
  for (const Case& c : std::vector<Case>{{"", "empty item"},
                                         {"n1,,n2", "empty item"},
                                         {"n1,", "empty item"},
                                         {"n[1-2", "'[' without ']'"},
                                         {"n1-2]", "']' without '['"},
                                         {"n[2-1]", "goes down"},
                                         {"n[a-b]", "not N or N-M"},
                                         {"n[1-]", "not N or N-M"},
                                         {"n[1,,2]", "not N or N-M"},
                                         {"n[]", "empty brackets"},
                                         {"n[[1]]", "nested"},
                                         {"n 1", "not a host name character"},
                                         {"n[0-65536]", "more than 65536"},
                                         {"n[1-999999999]", "more than 65536"},
                                         {"a[0-999]b[0-999]", "more than 65536"}}) {
    std::vector<std::string> hosts;
    const Status s = ExpandHostlist(c.list, &hosts);
    INFO("'" << c.list << "': " << s.ToString());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains(c.says));
  }
}

TEST_CASE("slurm tasks per node: counts and repeats, in order; malformed ones refused", "[cluster]") {
  CHECK(Counts("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(Counts("3(x2),2,1") == std::vector<int>{3, 3, 2, 1});  // TensorFlow's example
  CHECK(Counts("1") == std::vector<int>{1});
  CHECK(Counts("1(x4)") == std::vector<int>{1, 1, 1, 1});
  for (const std::string bad : {"", "x", "2,,1", "2(3)", "2(x3", "2(x)", "-1", "2(x3)1", "1.5"}) {
    std::vector<int> counts;
    const Status s = ExpandTasksPerNode(bad, &counts);
    INFO("'" << bad << "'");
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("COUNT or COUNT(xREPEAT)"));
  }
  for (const std::string bad : {"0", "2(x0)", "1,0"}) {
    std::vector<int> counts;
    INFO("'" << bad << "'");
    CHECK_THAT(ExpandTasksPerNode(bad, &counts).message(), Catch::Contains("positive"));
  }
}

TEST_CASE("slurm: a real step of 2 nodes x 2 tasks; every task a worker, ports from the base", "[cluster]") {
  for (int rank = 0; rank < 4; ++rank) {
    const ResolvedCluster r = Resolve("slurm", TwoNodesTwoTasks(rank));
    CHECK(r.task.job == "worker");
    CHECK(r.task.index == rank);
    CHECK(r.local_index == rank % 2);
    CHECK(r.host == (rank < 2 ? "gnode37" : "gnode40"));
    CHECK_THAT(r.source, Catch::Contains("SLURM_PROCID=" + std::to_string(rank)));
    CHECK(r.cluster.jobs() == std::vector<std::string>{"worker"});
    CHECK(r.cluster.ToJson() ==
          R"({"worker":["gnode37:8888","gnode37:8889","gnode40:8888","gnode40:8889"]})");
  }
  // The same step, roles by --jobs in the order listed, another port base.
  const ResolvedCluster ps = Resolve("slurm", TwoNodesTwoTasks(0), "ps:1,worker:3", 7000);
  CHECK(ps.task.name() == "/job:ps/replica:0/task:0");
  CHECK(AddressOf(ps.cluster, "ps", 0) == "gnode37:7000");
  CHECK(AddressOf(ps.cluster, "worker", 0) == "gnode37:7001");
  CHECK(AddressOf(ps.cluster, "worker", 2) == "gnode40:7001");
  const ResolvedCluster w = Resolve("slurm", TwoNodesTwoTasks(3), "ps:1,worker:3", 7000);
  CHECK(w.task.name() == "/job:worker/replica:0/task:2");
  CHECK(w.cluster.ToJson() == ps.cluster.ToJson());  // every task sees the same cluster
  // Listed the other way round, the ranks go the other way.
  const ResolvedCluster first = Resolve("slurm", TwoNodesTwoTasks(0), "worker:3,ps:1");
  CHECK(first.task.name() == "/job:worker/replica:0/task:0");
  CHECK(AddressOf(first.cluster, "ps", 0) == "gnode40:8889");
  // A chief, workers and a ps, as TensorFlow's MultiWorker and PS strategies have them.
  const ResolvedCluster chief = Resolve("slurm", TwoNodesTwoTasks(1), "chief:1,worker:2,ps:1");
  CHECK(chief.task.name() == "/job:worker/replica:0/task:0");
  CHECK(chief.cluster.chief().job == "chief");
}

TEST_CASE("slurm: the variables a real srun -n 3 gave (tests/data/slurm_env_3tasks.txt)", "[cluster]") {
  // The dump slurm_test records from a live one-node cluster: "# task N", then its SLURM_* lines.
  std::ifstream in(std::string(AF_TEST_DATA_DIR) + "/slurm_env_3tasks.txt");
  REQUIRE(in);
  std::vector<Vars> tasks;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# task ", 0) == 0) tasks.emplace_back();
    const size_t eq = line.find('=');
    if (!tasks.empty() && line[0] != '#' && eq != std::string::npos)
      tasks.back()[line.substr(0, eq)] = line.substr(eq + 1);
  }
  REQUIRE(tasks.size() == 3);
  const char* roles[] = {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"};
  for (int rank = 0; rank < 3; ++rank) {
    INFO("task " << rank);
    CHECK(InsideSlurmStep(Reader(tasks[rank])));
    const ResolvedCluster r = Resolve("auto", tasks[rank], "ps:1,worker:2", 7100);
    CHECK(r.task.name() == roles[rank]);
    CHECK(r.local_index == rank);
    CHECK(r.host == "localhost");
    CHECK(r.cluster.ToJson() == R"({"ps":["localhost:7100"],"worker":["localhost:7101","localhost:7102"]})");
  }
}

TEST_CASE("slurm: the step's variables win over the job's; the job's serve when the step has none", "[cluster]") {
  // A job of 4 tasks on 2 nodes; this step runs 3 tasks on one node of it.
  Vars step = TwoNodesTwoTasks(0);
  step["SLURM_STEP_NODELIST"] = "gnode40";
  step["SLURM_STEP_NUM_NODES"] = "1";
  step["SLURM_STEP_NUM_TASKS"] = "3";
  step["SLURM_STEP_TASKS_PER_NODE"] = "3";
  step["SLURM_PROCID"] = "2";
  step["SLURM_LOCALID"] = "2";
  step["SLURMD_NODENAME"] = "gnode40";
  const ResolvedCluster r = Resolve("slurm", step, "ps:1,worker:2");
  CHECK(r.task.name() == "/job:worker/replica:0/task:1");
  CHECK(r.cluster.ToJson() == R"({"ps":["gnode40:8888"],"worker":["gnode40:8889","gnode40:8890"]})");
  CHECK_THAT(r.source, Catch::Contains("SLURM_STEP_NUM_TASKS=3"));
  // Without the STEP_ variables (an older srun), the job's.
  Vars job = TwoNodesTwoTasks(2);
  for (const char* v : {"SLURM_STEP_NODELIST", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE"}) job.erase(v);
  const ResolvedCluster j = Resolve("slurm", job);
  CHECK(j.task.name() == "/job:worker/replica:0/task:2");
  CHECK(j.host == "gnode40");
  CHECK_THAT(j.source, Catch::Contains("SLURM_NTASKS=4"));
  CHECK_THAT(j.source, Catch::Contains("SLURM_JOB_NODELIST=gnode[37,40]"));
  // SLURM_NODELIST and SLURM_NPROCS, the oldest names, are read last.
  job.erase("SLURM_JOB_NODELIST");
  job.erase("SLURM_NTASKS");
  CHECK_THAT(Resolve("slurm", job).source, Catch::Contains("SLURM_NPROCS=4 on SLURM_NODELIST"));
}

TEST_CASE("slurm: uneven nodes, cyclic and plane layouts, zero-padded node names", "[cluster]") {
  // srun -n 5 over nid[001-003] with 2,2,1 tasks (block: consecutive ranks share a node).
  Vars v = {{"SLURM_STEP_ID", "3"},
            {"SLURM_STEP_NUM_TASKS", "5"},
            {"SLURM_STEP_NODELIST", "nid[001-003]"},
            {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
            {"SLURM_PROCID", "4"}};
  ResolvedCluster r = Resolve("slurm", v, "ps:2,worker:3", 5000);
  CHECK(r.cluster.ToJson() ==
        R"({"ps":["nid001:5000","nid001:5001"],"worker":["nid002:5000","nid002:5001","nid003:5000"]})");
  CHECK(r.task.name() == "/job:worker/replica:0/task:2");
  CHECK(r.host == "nid003");
  CHECK(r.local_index == 0);
  // srun -m cyclic: round robin over the nodes with room left.
  v["SLURM_DISTRIBUTION"] = "cyclic";
  v["SLURM_PROCID"] = "4";
  v["SLURM_LOCALID"] = "1";
  v["SLURMD_NODENAME"] = "nid002";
  r = Resolve("slurm", v, "", 5000);
  CHECK(r.cluster.ToJson() ==
        R"({"worker":["nid001:5000","nid002:5000","nid003:5000","nid001:5001","nid002:5001"]})");
  CHECK(r.host == "nid002");
  CHECK(r.local_index == 1);
  v["SLURM_DISTRIBUTION"] = "cyclic:block,Pack";  // the first method says where tasks go
  CHECK(Resolve("slurm", v, "", 5000).host == "nid002");
  // plane=2: blocks of two, round robin. 6 tasks on 2 nodes of 3: 0 1 4 | 2 3 5.
  Vars plane = {{"SLURM_STEP_ID", "0"},
                {"SLURM_STEP_NUM_TASKS", "6"},
                {"SLURM_STEP_NODELIST", "a,b"},
                {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"},
                {"SLURM_DISTRIBUTION", "plane=2"},
                {"SLURM_PROCID", "4"}};
  r = Resolve("slurm", plane);
  CHECK(r.cluster.ToJson() == R"({"worker":["a:8888","a:8889","b:8888","b:8889","a:8890","b:8890"]})");
  CHECK(r.local_index == 2);
  plane["SLURM_DISTRIBUTION"] = "plane";
  plane["SLURM_DIST_PLANESIZE"] = "2";
  CHECK(Resolve("slurm", plane).local_index == 2);
}

TEST_CASE("slurm: malformed variables are refused, naming the variable and the rule", "[cluster]") {
  struct Case {
    const char* what;
    Vars vars;
    std::string jobs;
    std::vector<std::string> says;
  };
  auto with = [](Vars v, const std::string& name, const std::string& value) {
    if (value.empty()) v.erase(name);
    else v[name] = value;
    return v;
  };
  const Vars ok = TwoNodesTwoTasks(1);
  const std::vector<Case> cases = {
      {"no rank", with(ok, "SLURM_PROCID", ""), "", {"SLURM_PROCID is unset"}},
      {"the batch script", with(with(ok, "SLURM_STEP_ID", ""), "SLURM_STEPID", ""), "", {"SLURM_STEP_ID", "srun"}},
      {"the batch step", with(with(ok, "SLURM_STEP_ID", "4294967294"), "SLURM_STEPID", ""), "", {"batch script"}},
      {"no task count", with(with(with(ok, "SLURM_STEP_NUM_TASKS", ""), "SLURM_NTASKS", ""), "SLURM_NPROCS", ""),
       "", {"SLURM_STEP_NUM_TASKS", "unset"}},
      {"no nodes", with(with(with(ok, "SLURM_STEP_NODELIST", ""), "SLURM_JOB_NODELIST", ""), "SLURM_NODELIST", ""),
       "", {"SLURM_STEP_NODELIST", "unset"}},
      {"no counts", with(with(ok, "SLURM_STEP_TASKS_PER_NODE", ""), "SLURM_TASKS_PER_NODE", ""), "",
       {"SLURM_STEP_TASKS_PER_NODE", "unset"}},
      {"rank not a number", with(ok, "SLURM_PROCID", "one"), "", {"SLURM_PROCID='one'", "integer"}},
      {"rank out of range", with(ok, "SLURM_PROCID", "4"), "", {"SLURM_PROCID=4", "SLURM_STEP_NUM_TASKS=4", "rank < tasks"}},
      {"task count not a number", with(ok, "SLURM_STEP_NUM_TASKS", "4x"), "", {"SLURM_STEP_NUM_TASKS='4x'"}},
      {"bad hostlist", with(ok, "SLURM_STEP_NODELIST", "gnode[37,40"), "", {"SLURM_STEP_NODELIST='gnode[37,40'", "hostlist"}},
      {"a node twice", with(ok, "SLURM_STEP_NODELIST", "gnode[37,37]"), "", {"SLURM_STEP_NODELIST", "each node once"}},
      {"bad counts", with(ok, "SLURM_STEP_TASKS_PER_NODE", "2(x2"), "", {"SLURM_STEP_TASKS_PER_NODE='2(x2'", "2(x3),1"}},
      {"counts for other nodes", with(ok, "SLURM_STEP_TASKS_PER_NODE", "1(x4)"), "",
       {"SLURM_STEP_TASKS_PER_NODE='1(x4)'", "SLURM_STEP_NODELIST", "one count per node"}},
      {"counts not the tasks", with(ok, "SLURM_STEP_TASKS_PER_NODE", "3,2"), "",
       {"SLURM_STEP_TASKS_PER_NODE='3,2' places 5", "SLURM_STEP_NUM_TASKS=4", "sum to the tasks"}},
      {"jobs not the tasks", ok, "ps:1,worker:2", {"--jobs ps:1,worker:2 has 3 tasks", "SLURM_STEP_NUM_TASKS=4"}},
      {"jobs malformed", ok, "ps,worker:3", {"--jobs", "'ps' is not JOB:N"}},
      {"a job without tasks", ok, "ps:0,worker:4", {"--jobs ps='0'"}},
      {"a bad job name", ok, "PS:1,worker:3", {"--jobs", "[a-z][a-z0-9_]*"}},
      {"a job twice", ok, "worker:1,worker:3", {"--jobs", "twice"}},
      {"two chiefs", ok, "chief:2,worker:2", {"--cluster slurm", "one chief"}},
      {"another local id", with(ok, "SLURM_LOCALID", "0"), "", {"SLURM_LOCALID=0", "block", "SLURM_DISTRIBUTION"}},
      {"another node", with(ok, "SLURMD_NODENAME", "gnode40"), "", {"SLURMD_NODENAME=gnode40", "gnode37"}},
      {"an arbitrary layout", with(ok, "SLURM_DISTRIBUTION", "arbitrary"), "", {"SLURM_DISTRIBUTION='arbitrary'"}},
      {"a plane without size", with(ok, "SLURM_DISTRIBUTION", "plane"), "", {"SLURM_DISTRIBUTION's plane size"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string message = Refusal("slurm", c.vars, c.jobs);
    INFO(message);
    for (const auto& s : c.says) CHECK_THAT(message, Catch::Contains(s));
  }
  // Ports past 65535.
  CHECK_THAT(Refusal("slurm", ok, "", 65535), Catch::Contains("--port-base 65535"));
}

TEST_CASE("tf_config: as Kubeflow's TFJob writes it: DNS names, environment cloud, evaluators aside", "[cluster]") {
  const std::string cluster =
      R"("cluster":{"ps":["mnist-ps-0.kubeflow.svc:2222"],)"
      R"("worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"],)"
      R"("evaluator":["mnist-evaluator-0.kubeflow.svc:2222"]})";
  const Vars worker = {
      {"TF_CONFIG", "{" + cluster + R"(,"task":{"type":"worker","index":1},"environment":"cloud"})"}};
  ResolvedCluster r = Resolve("tf_config", worker);
  CHECK(r.task.name() == "/job:worker/replica:0/task:1");
  CHECK(r.host == "mnist-worker-1.kubeflow.svc");
  CHECK(r.local_index == 0);
  CHECK(r.source == "TF_CONFIG");
  CHECK(r.cluster.jobs() == std::vector<std::string>{"ps", "worker"});  // the evaluator stands aside
  CHECK(AddressOf(r.cluster, "ps", 0) == "mnist-ps-0.kubeflow.svc:2222");
  // The evaluator's own TF_CONFIG: it runs beside the cluster.
  r = Resolve("tf_config", {{"TF_CONFIG", "{" + cluster + R"(,"task":{"type":"evaluator","index":0},"environment":"cloud"})"}});
  CHECK(r.task.job == "evaluator");
  CHECK(r.host.empty());
  CHECK(r.cluster.num_tasks("evaluator") == 0);
  // A custom cluster domain (CUSTOM_CLUSTER_DOMAIN), a chief, and TensorFlow's own names.
  r = Resolve("tf_config",
              {{"TF_CONFIG", R"({"cluster":{"chief":["job-chief-0.ns.svc.cluster.local:2222"],)"
                             R"("worker":["job-worker-0.ns.svc.cluster.local:2222"]},)"
                             R"("task":{"type":"chief","index":0},"environment":"cloud","rpc_layer":"grpc"})"}});
  CHECK(r.task.name() == "/job:chief/replica:0/task:0");
  CHECK(r.cluster.chief().job == "chief");
  // Several tasks on one host: the task's index among them.
  r = Resolve("tf_config", {{"TF_CONFIG", R"({"cluster":{"ps":["h1:2222"],"worker":["h1:2223","h2:2222"]},)"
                                          R"("task":{"type":"worker","index":0}})"}});
  CHECK(r.host == "h1");
  CHECK(r.local_index == 1);
}

TEST_CASE("tf_config: the sparse view of Kubeflow's dynamic workers, and TensorFlow's own sparse form", "[cluster]") {
  // enableDynamicWorker: a worker sees itself and the ps tasks, under "sparseCluster".
  ResolvedCluster r = Resolve(
      "tf_config", {{"TF_CONFIG", R"({"sparseCluster":{"worker":{"3":"mnist-worker-3.kubeflow.svc:2222"},)"
                                  R"("ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"]},)"
                                  R"("task":{"type":"worker","index":3}})"}});
  CHECK(r.task.name() == "/job:worker/replica:0/task:3");
  CHECK(r.host == "mnist-worker-3.kubeflow.svc");
  CHECK(r.cluster.num_tasks("worker") == 1);
  CHECK(r.cluster.task_indices("worker") == std::vector<int>{3});
  CHECK_FALSE(r.cluster.IsDense("worker"));
  CHECK(r.cluster.IsDense("ps"));
  CHECK(r.cluster.num_tasks("ps") == 2);
  std::string address;
  CHECK(errors::IsNotFound(r.cluster.Address({"worker", 0}, &address)));
  CHECK(!r.cluster.chief().valid());  // no worker 0 in sight
  CHECK(r.cluster.tasks().size() == 3);
  // What a launcher hands on reads back the same.
  ClusterSpec again;
  TaskId task;
  REQUIRE(ClusterSpec::Parse(r.cluster.ToTfConfig(r.task), &again, &task).ok());
  CHECK(again.ToJson() == r.cluster.ToJson());
  CHECK(r.cluster.ToJson() ==
        R"({"ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"],)"
        R"("worker":{"3":"mnist-worker-3.kubeflow.svc:2222"}})");
  CHECK(task.name() == r.task.name());
  // Worker 0 (the chief) sees {"worker": ["w0"]}: not a cluster of one worker, and still not
  // once a launcher has handed it on.
  r = Resolve("tf_config", {{"TF_CONFIG", R"({"sparseCluster":{"worker":["mnist-worker-0.kubeflow.svc:2222"],)"
                                          R"("ps":["mnist-ps-0.kubeflow.svc:2222"]},"task":{"type":"worker","index":0}})"}});
  CHECK(r.cluster.task_indices("worker") == std::vector<int>{0});
  CHECK_FALSE(r.cluster.IsDense("worker"));
  CHECK(r.cluster.IsDense("ps"));
  REQUIRE(ClusterSpec::Parse(r.cluster.ToTfConfig(r.task), &again, &task).ok());
  CHECK_FALSE(again.IsDense("worker"));
  CHECK(task.index == 0);
  // A ps task's view: itself alone (the operator writes it as a one-address list), no workers.
  r = Resolve("tf_config", {{"TF_CONFIG", R"({"sparseCluster":{"worker":{},"ps":["mnist-ps-1.kubeflow.svc:2222"]},)"
                                          R"("task":{"type":"ps","index":1}})"}});
  CHECK(r.task.name() == "/job:ps/replica:0/task:1");
  CHECK(AddressOf(r.cluster, "ps", 1) == "mnist-ps-1.kubeflow.svc:2222");
  CHECK(r.cluster.jobs() == std::vector<std::string>{"ps"});
  // TensorFlow's sparse ClusterSpec under "cluster".
  r = Resolve("tf_config", {{"TF_CONFIG", R"({"cluster":{"worker":{"1":"w1:2222"},"ps":["p0:2222"]},)"
                                          R"("task":{"type":"worker","index":1}})"}});
  CHECK(r.task.index == 1);
  CHECK(r.cluster.task_indices("worker") == std::vector<int>{1});
  // Its task must be one it lists.
  CHECK_THAT(Refusal("tf_config", {{"TF_CONFIG", R"({"cluster":{"worker":{"1":"w1:2222"}},)"
                                                 R"("task":{"type":"worker","index":2}})"}}),
             Catch::Contains("does not list index 2 (rule: index in range)"));
  CHECK_THAT(Refusal("tf_config", {{"TF_CONFIG", R"({"cluster":{"worker":["a:1"]},"sparseCluster":{"worker":["a:1"]}})"}}),
             Catch::Contains("both"));
}

TEST_CASE("tf_config: unset or malformed TF_CONFIG is refused naming it", "[cluster]") {
  CHECK_THAT(Refusal("tf_config", {}), Catch::Contains("TF_CONFIG variable is unset"));
  CHECK_THAT(Refusal("tf_config", {{"TF_CONFIG", "{not json"}}), Catch::Contains("TF_CONFIG environment variable"));
  CHECK_THAT(Refusal("tf_config", {{"TF_CONFIG", R"({"cluster":{"worker":["a:1"]},"task":{"type":"ps","index":0}})"}}),
             Catch::Contains("TF_CONFIG environment variable"));
}

TEST_CASE("auto: TF_CONFIG first, then a Slurm step, then one local task; files and JSON", "[cluster]") {
  Vars both = TwoNodesTwoTasks(3);
  both["TF_CONFIG"] = R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":1}})";
  ResolvedCluster r = Resolve("auto", both);
  CHECK(r.source == "TF_CONFIG");
  CHECK(r.host == "b");
  both.erase("TF_CONFIG");
  r = Resolve("auto", both);
  CHECK_THAT(r.source, Catch::Contains("Slurm step"));
  CHECK(r.task.index == 3);
  // An sbatch script has SLURM_PROCID but is no step: one local task.
  Vars batch = TwoNodesTwoTasks(0);
  batch.erase("SLURM_STEP_ID");
  batch.erase("SLURM_STEPID");
  CHECK_FALSE(InsideSlurmStep(Reader(batch)));
  r = Resolve("auto", batch, "", 9100);
  CHECK(r.task.name() == "/job:worker/replica:0/task:0");
  CHECK(r.cluster.ToJson() == R"({"worker":["127.0.0.1:9100"]})");
  CHECK_THAT(r.source, Catch::Contains("one local task"));
  CHECK(Resolve("auto", {}).cluster.ToJson() == R"({"worker":["127.0.0.1:8888"]})");
  // A cluster of jobs alone names no task; TF_CONFIG's form does; a file the same.
  r = Resolve(R"({"worker": ["127.0.0.1:1", "127.0.0.1:2"]})", {});
  CHECK(!r.task.valid());
  CHECK(r.source == "--cluster JSON");
  test::TempDir dir("af_resolver");
  const std::string file = dir.path() + "/cluster.json";
  std::ofstream(file) << R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}})";
  r = Resolve(file, {});
  CHECK(r.task.index == 1);
  CHECK(r.local_index == 1);
  CHECK(r.source == "--cluster " + file);
  CHECK_THAT(Refusal(dir.path() + "/none.json", {}), Catch::Contains("--cluster: cannot read"));
  CHECK_THAT(Refusal(R"({"worker": ["nohostport"]})", {}), Catch::Contains("--cluster"));
  CHECK_THAT(Refusal("", {}), Catch::Contains("tf_config, slurm or auto"));
}
