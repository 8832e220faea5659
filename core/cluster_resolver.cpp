#include "actorflow/core/cluster_resolver.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "actorflow/core/slurm_hostlist.hpp"

namespace actorflow {

namespace {

using json = nlohmann::json;

constexpr const char kBatchStepId[] = "4294967294";  // SLURM_BATCH_SCRIPT: the batch script, not a step
constexpr int kMaxSlurmTasks = 1 << 20;             // a step's tasks (bounds what a typo allocates)

// A variable as read: its name and value (the first of several names that is set).
struct Variable {
  const char* name = nullptr;
  std::string value;
  bool set() const { return name != nullptr; }
};

Variable FirstSet(const EnvironmentReader& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = ReadVariable(env, name);
    if (v != nullptr && *v != '\0') return Variable{name, v};
  }
  return {};
}

// A decimal integer in lo..hi, or InvalidArgument naming `what` (a variable or flag).
Status ParseCount(const std::string& what, const std::string& text, int64_t lo, int64_t hi, int* out) {
  int64_t v = 0;
  bool ok = !text.empty() && text.size() <= 9;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) v = v * 10 + (c - '0');
  }
  if (!ok || v < lo || v > hi)
    return errors::InvalidArgument(what, "='", text, "': expects an integer from ", lo, " to ", hi);
  *out = static_cast<int>(v);
  return Status::OK();
}

Status Required(const Variable& v, const char* names) {
  if (v.set()) return Status::OK();
  return errors::InvalidArgument("--cluster slurm: ", names, " is unset (rule: a Slurm step's tasks, nodes and ",
                                 "tasks per node are in its environment; run under srun)");
}

// Where each rank runs: its node and its index among that node's tasks.
struct Placement {
  int node = -1;
  int local = -1;
};

// Lays ranks out on nodes as Slurm does: round robin over the nodes with room
// left, `chunk` consecutive ranks at a time (block: a whole node; cyclic: 1;
// plane: its size).
std::vector<Placement> LayOut(const std::vector<int>& counts, int64_t chunk) {
  std::vector<Placement> out;
  std::vector<int> used(counts.size(), 0);
  int64_t total = 0;
  for (int c : counts) total += c;
  while (static_cast<int64_t>(out.size()) < total) {
    for (size_t n = 0; n < counts.size(); ++n)
      for (int64_t k = 0; k < chunk && used[n] < counts[n]; ++k) out.push_back({static_cast<int>(n), used[n]++});
  }
  return out;
}

// SLURM_DISTRIBUTION's first method as a chunk size (block: the largest count).
Status DistributionChunk(const EnvironmentReader& env, const std::vector<int>& counts, int64_t* chunk,
                         std::string* name) {
  const int most = *std::max_element(counts.begin(), counts.end());
  *chunk = most;
  *name = "block";
  const Variable dist = FirstSet(env, {"SLURM_DISTRIBUTION"});
  if (!dist.set()) return Status::OK();
  const std::string first = dist.value.substr(0, dist.value.find_first_of(":,"));
  *name = first;
  if (first == "block" || first == "*") return Status::OK();
  if (first == "cyclic") {
    *chunk = 1;
    return Status::OK();
  }
  if (first.rfind("plane", 0) == 0) {
    // plane=N, or plane with the size in SLURM_DIST_PLANESIZE.
    const Variable planesize = FirstSet(env, {"SLURM_DIST_PLANESIZE"});
    const bool inline_size = first.size() > 6 && first[5] == '=';
    int n = 0;
    if (!inline_size && planesize.set())
      AF_RETURN_IF_ERROR(ParseCount("SLURM_DIST_PLANESIZE", planesize.value, 1, 1 << 20, &n));
    else
      AF_RETURN_IF_ERROR(ParseCount("SLURM_DISTRIBUTION's plane size", inline_size ? first.substr(6) : "", 1, 1 << 20, &n));
    *chunk = n;
    return Status::OK();
  }
  return errors::InvalidArgument("SLURM_DISTRIBUTION='", dist.value, "': ", first,
                                 " does not say where each rank runs (rule: block, cyclic or plane=N; srun -m block)");
}

Status ResolveSlurm(const ClusterResolverOptions& options, const EnvironmentReader& env, ResolvedCluster* out) {
  const Variable procid = FirstSet(env, {"SLURM_PROCID"});
  const Variable step = FirstSet(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
  if (!procid.set())
    return errors::InvalidArgument("--cluster slurm: SLURM_PROCID is unset: not a task of a Slurm job step (run it "
                                   "under srun)");
  if (!step.set() || step.value == kBatchStepId)
    return errors::InvalidArgument("--cluster slurm: SLURM_STEP_ID is ", step.set() ? "the batch script's" : "unset",
                                   ": this is a job's batch script, not a task of a job step (in an sbatch script, "
                                   "start the tasks with srun: srun actorflow launch --cluster slurm ...)");
  const Variable ntasks = FirstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"});
  const Variable nodelist = FirstSet(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  const Variable per_node = FirstSet(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  AF_RETURN_IF_ERROR(Required(ntasks, "SLURM_STEP_NUM_TASKS (or SLURM_NTASKS)"));
  AF_RETURN_IF_ERROR(Required(nodelist, "SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST)"));
  AF_RETURN_IF_ERROR(Required(per_node, "SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE)"));
  int tasks = 0, rank = 0;
  AF_RETURN_IF_ERROR(ParseCount(ntasks.name, ntasks.value, 1, kMaxSlurmTasks, &tasks));
  AF_RETURN_IF_ERROR(ParseCount("SLURM_PROCID", procid.value, 0, kMaxSlurmTasks, &rank));
  if (rank >= tasks)
    return errors::InvalidArgument("SLURM_PROCID=", rank, " is out of range: ", ntasks.name, "=", tasks,
                                   " (rule: 0 <= rank < tasks)");
  std::vector<std::string> hosts;
  Status s = ExpandHostlist(nodelist.value, &hosts);
  if (!s.ok())
    return errors::InvalidArgument(nodelist.name, "='", nodelist.value, "': ", s.message(),
                                   " (rule: a hostlist such as n[1-2,5],m7)");
  std::set<std::string> seen;
  for (const auto& h : hosts)
    if (!seen.insert(h).second)
      return errors::InvalidArgument(nodelist.name, "='", nodelist.value, "' names node '", h,
                                     "' twice (rule: each node once)");
  std::vector<int> counts;
  s = ExpandTasksPerNode(per_node.value, &counts);
  if (!s.ok())
    return errors::InvalidArgument(per_node.name, "='", per_node.value, "': ", s.message(),
                                   " (rule: counts such as 2(x3),1)");
  if (counts.size() != hosts.size())
    return errors::InvalidArgument(per_node.name, "='", per_node.value, "' gives counts for ", counts.size(),
                                   " nodes but ", nodelist.name, "='", nodelist.value, "' names ", hosts.size(),
                                   " (rule: one count per node)");
  int64_t placed = 0;
  for (int c : counts) placed += c;
  if (placed != tasks)
    return errors::InvalidArgument(per_node.name, "='", per_node.value, "' places ", placed, " tasks but ",
                                   ntasks.name, "=", tasks, " (rule: the counts sum to the tasks)");
  int64_t chunk = 0;
  std::string distribution;
  AF_RETURN_IF_ERROR(DistributionChunk(env, counts, &chunk, &distribution));
  const std::vector<Placement> layout = LayOut(counts, chunk);
  const Placement me = layout[static_cast<size_t>(rank)];
  // Where Slurm says this task runs must be where the layout puts it.
  const Variable localid = FirstSet(env, {"SLURM_LOCALID"});
  if (localid.set() && localid.value != std::to_string(me.local))
    return errors::InvalidArgument("SLURM_LOCALID=", localid.value, " but a ", distribution, " layout of ",
                                   per_node.name, "='", per_node.value, "' makes rank ", rank, " task ", me.local,
                                   " of node ", hosts[static_cast<size_t>(me.node)],
                                   " (rule: SLURM_LOCALID agrees with the layout; SLURM_DISTRIBUTION says which)");
  const Variable nodename = FirstSet(env, {"SLURMD_NODENAME"});
  if (nodename.set() && nodename.value != hosts[static_cast<size_t>(me.node)])
    return errors::InvalidArgument("SLURMD_NODENAME=", nodename.value, " but a ", distribution, " layout of ",
                                   nodelist.name, "='", nodelist.value, "' puts rank ", rank, " on node ",
                                   hosts[static_cast<size_t>(me.node)],
                                   " (rule: SLURMD_NODENAME agrees with the layout; SLURM_DISTRIBUTION says which)");
  // Ports: the base plus the index on the node.
  const int most = *std::max_element(counts.begin(), counts.end());
  if (options.port_base < 1 || options.port_base + most - 1 > 65535)
    return errors::InvalidArgument("--port-base ", options.port_base, ": a node's ", most,
                                   " tasks serve on ports from it up, which must stay in 1..65535");
  // Jobs: consecutive ranks, in the order listed.
  std::vector<std::pair<std::string, int>> jobs;
  if (options.jobs.empty()) {
    jobs = {{"worker", tasks}};
  } else {
    AF_RETURN_IF_ERROR(ParseJobCounts(options.jobs, &jobs));
    int64_t sum = 0;
    for (const auto& j : jobs) sum += j.second;
    if (sum != tasks)
      return errors::InvalidArgument("--jobs ", options.jobs, " has ", sum, " tasks but ", ntasks.name, "=", tasks,
                                     " (rule: the jobs' tasks sum to the Slurm tasks)");
  }
  json cluster = json::object();
  TaskId task;
  int next = 0;
  for (const auto& [job, n] : jobs) {
    json addresses = json::array();
    for (int i = 0; i < n; ++i, ++next) {
      const Placement p = layout[static_cast<size_t>(next)];
      addresses.push_back(hosts[static_cast<size_t>(p.node)] + ":" + std::to_string(options.port_base + p.local));
      if (next == rank) task = {job, i};
    }
    cluster[job] = std::move(addresses);
  }
  json doc = {{"cluster", cluster}, {"task", {{"type", task.job}, {"index", task.index}}}};
  ResolvedCluster r;
  s = ClusterSpec::Parse(doc.dump(), &r.cluster, &r.task);
  if (!s.ok()) return errors::InvalidArgument("--cluster slurm with --jobs ", options.jobs, ": ", s.message());
  r.local_index = me.local;
  r.host = hosts[static_cast<size_t>(me.node)];
  r.source = "Slurm step: SLURM_PROCID=" + std::to_string(rank) + " of " + ntasks.name + "=" +
             std::to_string(tasks) + " on " + nodelist.name + "=" + nodelist.value;
  *out = std::move(r);
  return Status::OK();
}

// This task's host and its index among the cluster's tasks on that host.
void PlaceInCluster(ResolvedCluster* r) {
  std::string address;
  uint16_t port = 0;
  if (!r->task.valid() || !r->cluster.Address(r->task, &address).ok() ||
      !SplitHostPort(address, &r->host, &port).ok())
    return;
  r->local_index = 0;
  for (const TaskId& t : r->cluster.tasks()) {
    if (t.job == r->task.job && t.index == r->task.index) break;
    std::string a, host;
    if (r->cluster.Address(t, &a).ok() && SplitHostPort(a, &host, &port).ok() && host == r->host) ++r->local_index;
  }
}

Status ResolveTfConfig(const EnvironmentReader& env, ResolvedCluster* out) {
  const Variable tf_config = FirstSet(env, {"TF_CONFIG"});
  if (!tf_config.set()) return errors::InvalidArgument("--cluster tf_config: the TF_CONFIG variable is unset");
  ResolvedCluster r;
  const Status s = ClusterSpec::Parse(tf_config.value, &r.cluster, &r.task);
  if (!s.ok()) return Status(s.code(), "TF_CONFIG environment variable: " + s.message());
  r.source = "TF_CONFIG";
  PlaceInCluster(&r);
  *out = std::move(r);
  return Status::OK();
}

Status ResolveSpec(const std::string& arg, ResolvedCluster* out) {
  std::string text = arg;
  const size_t first = arg.find_first_not_of(" \t\n");
  const bool inline_json = first != std::string::npos && arg[first] == '{';
  if (!inline_json) {
    std::ifstream f(arg);
    if (!f) return errors::InvalidArgument("--cluster: cannot read '", arg, "'");
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  ResolvedCluster r;
  const Status s = ClusterSpec::Parse(text, &r.cluster, &r.task);
  if (!s.ok()) return errors::InvalidArgument("--cluster ", inline_json ? "" : "'" + arg + "' ", s.message());
  r.source = inline_json ? "--cluster JSON" : "--cluster " + arg;
  PlaceInCluster(&r);
  *out = std::move(r);
  return Status::OK();
}

Status ResolveLocal(const ClusterResolverOptions& options, ResolvedCluster* out) {
  if (options.port_base < 1 || options.port_base > 65535)
    return errors::InvalidArgument("--port-base ", options.port_base, " is not in 1..65535");
  ResolvedCluster r;
  const std::string address = "127.0.0.1:" + std::to_string(options.port_base);
  AF_RETURN_IF_ERROR(ClusterSpec::Parse(json{{"worker", {address}}}.dump(), &r.cluster));
  r.task = {"worker", 0};
  r.host = "127.0.0.1";
  r.source = "one local task (TF_CONFIG unset, not in a Slurm step)";
  *out = std::move(r);
  return Status::OK();
}

}  // namespace

bool InsideSlurmStep(const EnvironmentReader& env) {
  const Variable step = FirstSet(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
  return FirstSet(env, {"SLURM_PROCID"}).set() && step.set() && step.value != kBatchStepId;
}

Status ParseJobCounts(const std::string& jobs, std::vector<std::pair<std::string, int>>* out) {
  std::vector<std::pair<std::string, int>> parsed;
  std::set<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = jobs.find(',', start);
    const std::string part = jobs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = part.find(':');
    const std::string name = part.substr(0, colon);
    int n = 0;
    if (colon == std::string::npos || !IsValidJobName(name))
      return errors::InvalidArgument("--jobs '", jobs, "': '", part,
                                     "' is not JOB:N with JOB as [a-z][a-z0-9_]* (rule: ps:1,worker:3)");
    AF_RETURN_IF_ERROR(ParseCount("--jobs " + name, part.substr(colon + 1), 1, kMaxSlurmTasks, &n));
    if (!names.insert(name).second)
      return errors::InvalidArgument("--jobs '", jobs, "' lists job '", name, "' twice (rule: each job once)");
    parsed.emplace_back(name, n);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out = std::move(parsed);
  return Status::OK();
}

Status ResolveCluster(const std::string& spec, const ClusterResolverOptions& options, const EnvironmentReader& env,
                      ResolvedCluster* out) {
  if (spec.empty()) return errors::InvalidArgument("--cluster needs FILE, JSON, tf_config, slurm or auto");
  if (spec == "tf_config") return ResolveTfConfig(env, out);
  if (spec == "slurm") return ResolveSlurm(options, env, out);
  if (spec == "auto") {
    if (FirstSet(env, {"TF_CONFIG"}).set()) return ResolveTfConfig(env, out);
    if (InsideSlurmStep(env)) return ResolveSlurm(options, env, out);
    return ResolveLocal(options, out);
  }
  return ResolveSpec(spec, out);
}

}  // namespace actorflow
