#include "actorflow/core/cluster_spec.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace actorflow {

namespace {

using json = nlohmann::json;

constexpr const char* kChief = "chief";
constexpr const char* kEvaluator = "evaluator";

// A task index written as a JSON object key: decimal digits only.
bool ParseIndex(const std::string& key, int* out) {
  if (key.empty() || key.size() > 9) return false;
  for (char c : key)
    if (c < '0' || c > '9') return false;
  *out = std::atoi(key.c_str());
  return true;
}

// A job's tasks, by index. `sparse`: TF_CONFIG's partial view, whose
// indices need not be dense from 0.
Status ParseJob(const std::string& job, const json& tasks, bool sparse, std::map<int, std::string>* out) {
  if (tasks.is_array()) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].is_string())
        return errors::InvalidArgument("cluster: task ", i, " of job '", job, "' is not a \"host:port\" string");
      (*out)[static_cast<int>(i)] = tasks[i].get<std::string>();
    }
  } else if (tasks.is_object()) {
    // JobDef's map from task index to address.
    for (auto it = tasks.begin(); it != tasks.end(); ++it) {
      int index = -1;
      if (!ParseIndex(it.key(), &index))
        return errors::InvalidArgument("cluster: job '", job, "' has task id '", it.key(),
                                       "': task ids are non-negative integers");
      if (!it.value().is_string())
        return errors::InvalidArgument("cluster: task ", index, " of job '", job,
                                       "' is not a \"host:port\" string");
      (*out)[index] = it.value().get<std::string>();
    }
    int expected = 0;
    for (const auto& entry : *out) {
      if (entry.first != expected && !sparse)
        return errors::InvalidArgument("cluster: job '", job, "' has no task ", expected,
                                       ": task ids must be dense from 0 (rule: dense task ids; only TF_CONFIG's "
                                       "view of a cluster may be sparse)");
      ++expected;
    }
  } else {
    return errors::InvalidArgument("cluster: job '", job,
                                   "' must be a list of \"host:port\" addresses or an object from task id to address");
  }
  if (out->empty()) return errors::InvalidArgument("cluster: job '", job, "' has no tasks");
  for (const auto& [index, address] : *out) {
    const Status s = CheckHostPort(address);
    if (!s.ok()) return errors::InvalidArgument("cluster: task ", index, " of job '", job, "': ", s.message());
  }
  return Status::OK();
}

Status ParseTask(const json& t, TaskId* task) {
  if (!t.is_object())
    return errors::InvalidArgument("TF_CONFIG: \"task\" must be an object {\"type\": ..., \"index\": ...}");
  auto type = t.find("type");
  if (type == t.end() || !type->is_string() || type->get<std::string>().empty())
    return errors::InvalidArgument("TF_CONFIG: the task's \"type\" must be set (rule: task type present)");
  auto index = t.find("index");
  if (index == t.end())
    return errors::InvalidArgument("TF_CONFIG: the task's \"index\" must be set (rule: task index present)");
  if (!index->is_number_integer())
    return errors::InvalidArgument("TF_CONFIG: the task's \"index\" must be an integer");
  const int64_t i = index->get<int64_t>();
  if (i < 0 || i > (int64_t{1} << 30))
    return errors::InvalidArgument("TF_CONFIG: task index ", i, " is out of range (rule: index non-negative)");
  task->job = type->get<std::string>();
  task->index = static_cast<int>(i);
  return Status::OK();
}

}  // namespace

bool IsValidJobName(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::string TaskId::name() const { return "/job:" + job + "/replica:0/task:" + std::to_string(index); }

Status CheckHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return errors::InvalidArgument("address '", address, "' is not \"host:port\"");
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3)
      return errors::InvalidArgument("address '", address,
                                     "': an IPv6 host is written in brackets, \"[::1]:2222\"");
  } else {
    if (host.find(':') != std::string::npos)
      return errors::InvalidArgument("address '", address, "': an IPv6 host is written in brackets, \"[::1]:2222\"");
    for (char c : host)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
            c == '_'))
        return errors::InvalidArgument("address '", address, "': host '", host, "' is not a host name or address");
  }
  if (port.size() > 5) return errors::InvalidArgument("address '", address, "': port '", port, "' is not in 1..65535");
  for (char c : port)
    if (c < '0' || c > '9')
      return errors::InvalidArgument("address '", address, "': port '", port, "' is not a number");
  const int p = std::atoi(port.c_str());
  if (p < 1 || p > 65535) return errors::InvalidArgument("address '", address, "': port ", p, " is not in 1..65535");
  return Status::OK();
}

bool UnspecifiedHost(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::"; }

Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port) {
  AF_RETURN_IF_ERROR(CheckHostPort(address));
  const size_t colon = address.rfind(':');
  *host = address.substr(0, colon);
  if (host->front() == '[') *host = host->substr(1, host->size() - 2);
  *port = static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1));
  return Status::OK();
}

Status ClusterSpec::Parse(const std::string& text, ClusterSpec* out, TaskId* task) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return errors::InvalidArgument("cluster: not valid JSON");
  if (!doc.is_object()) return errors::InvalidArgument("cluster: expected a JSON object of jobs");
  const json* cluster = &doc;
  const bool tf_config = doc.contains("cluster") || doc.contains("sparseCluster") || doc.contains("task");
  // Kubeflow's dynamic workers: the sparse view under "sparseCluster".
  const bool kubeflow_sparse = doc.contains("sparseCluster");
  if (tf_config) {
    if (doc.contains("cluster") && kubeflow_sparse)
      return errors::InvalidArgument("TF_CONFIG: both \"cluster\" and \"sparseCluster\": give one");
    auto c = doc.find(kubeflow_sparse ? "sparseCluster" : "cluster");
    if (c == doc.end() || !c->is_object())
      return errors::InvalidArgument("TF_CONFIG: \"", kubeflow_sparse ? "sparseCluster" : "cluster",
                                     "\" must be an object of jobs");
    cluster = &*c;
  }
  TaskId parsed;
  if (tf_config && doc.contains("task")) AF_RETURN_IF_ERROR(ParseTask(doc["task"], &parsed));
  ClusterSpec spec;
  std::map<std::string, std::string> owner;  // address -> "job:index", for duplicates
  for (auto it = cluster->begin(); it != cluster->end(); ++it) {
    const std::string& job = it.key();
    if (!IsValidJobName(job))
      return errors::InvalidArgument("cluster: job name '", job, "' is not [a-z][a-z0-9_]*");
    if (kubeflow_sparse && it.value().empty()) continue;  // a job this task does not see
    std::map<int, std::string> addresses;
    AF_RETURN_IF_ERROR(ParseJob(job, it.value(), tf_config, &addresses));
    if (kubeflow_sparse && job == parsed.job && it.value().is_array() && addresses.size() == 1 && parsed.index > 0)
      addresses = {{parsed.index, addresses.begin()->second}};  // the operator's view of a ps: itself alone
    if (job == kEvaluator) continue;  // beside the cluster, not in it
    if (job == kChief && addresses.size() > 1)
      return errors::InvalidArgument("cluster: job 'chief' has ", addresses.size(),
                                     " tasks: a cluster has at most one chief (rule: one chief)");
    for (const auto& [index, address] : addresses) {
      const std::string me = job + ":" + std::to_string(index);
      auto [seen, fresh] = owner.emplace(address, me);
      if (!fresh)
        return errors::InvalidArgument("cluster: address '", address, "' is given to both ", seen->second,
                                       " and ", me, " (rule: no duplicate address)");
    }
    spec.jobs_[job] = std::move(addresses);
  }
  if (spec.jobs_.empty()) return errors::InvalidArgument("cluster: no jobs");
  if (parsed.valid()) AF_RETURN_IF_ERROR(spec.CheckTask(parsed));
  // Kubeflow's view lists only this task of its own job, whatever it lists:
  // worker 0's {"worker": ["w0"]} is not a cluster of one worker.
  if (kubeflow_sparse && parsed.valid()) spec.partial_.insert(parsed.job);
  *out = std::move(spec);
  if (task) *task = parsed;
  return Status::OK();
}

Status ClusterSpec::FromEnvironment(ClusterSpec* out, TaskId* task, bool* found) {
  const char* v = std::getenv("TF_CONFIG");
  *found = v != nullptr && *v != '\0';
  if (!*found) return Status::OK();
  const Status s = Parse(v, out, task);
  if (!s.ok()) return Status(s.code(), "TF_CONFIG environment variable: " + s.message());
  return Status::OK();
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> out;
  for (const auto& entry : jobs_) out.push_back(entry.first);
  return out;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<int> ClusterSpec::task_indices(const std::string& job) const {
  std::vector<int> out;
  auto it = jobs_.find(job);
  if (it != jobs_.end())
    for (const auto& entry : it->second) out.push_back(entry.first);
  return out;
}

bool ClusterSpec::IsDense(const std::string& job) const {
  if (partial_.count(job)) return false;
  auto it = jobs_.find(job);
  return it == jobs_.end() || it->second.empty() || it->second.rbegin()->first + 1 == static_cast<int>(it->second.size());
}

Status ClusterSpec::Address(const TaskId& task, std::string* address) const {
  auto it = jobs_.find(task.job);
  if (it != jobs_.end()) {
    auto t = it->second.find(task.index);
    if (t != it->second.end()) {
      *address = t->second;
      return Status::OK();
    }
  }
  return errors::NotFound("the cluster has no task ", task.job, ":", task.index);
}

std::vector<TaskId> ClusterSpec::tasks() const {
  std::vector<TaskId> out;
  for (const auto& [job, tasks] : jobs_)
    for (const auto& entry : tasks) out.push_back({job, entry.first});
  return out;
}

TaskId ClusterSpec::chief() const {
  if (num_tasks(kChief) > 0) return {kChief, task_indices(kChief).front()};
  std::string ignored;
  if (Address({"worker", 0}, &ignored).ok()) return {"worker", 0};
  return {};
}

Status ClusterSpec::CheckTask(const TaskId& task) const {
  if (task.job.empty()) return errors::InvalidArgument("task: a job name is needed (rule: task type present)");
  if (task.index < 0)
    return errors::InvalidArgument("task: index ", task.index, " is negative (rule: index non-negative)");
  if (task.job == kEvaluator) return Status::OK();  // runs beside the cluster
  const int n = num_tasks(task.job);
  if (n == 0)
    return errors::InvalidArgument("task: the cluster has no job '", task.job, "' (rule: task type in the cluster)");
  std::string ignored;
  if (Address(task, &ignored).ok()) return Status::OK();
  if (IsDense(task.job))
    return errors::InvalidArgument("task: job '", task.job, "' has ", n, " tasks, so index ", task.index,
                                   " is out of range (rule: index in range)");
  return errors::InvalidArgument("task: the sparse job '", task.job, "' does not list index ", task.index,
                                 " (rule: index in range)");
}

std::string ClusterSpec::ToJson() const {
  json j = json::object();
  for (const auto& [job, tasks] : jobs_) {
    if (IsDense(job)) {
      json list = json::array();
      for (const auto& entry : tasks) list.push_back(entry.second);
      j[job] = std::move(list);
    } else {
      json by_index = json::object();
      for (const auto& [index, address] : tasks) by_index[std::to_string(index)] = address;
      j[job] = std::move(by_index);
    }
  }
  return j.dump();
}

std::string ClusterSpec::ToTfConfig(const TaskId& task) const {
  return std::string(partial_.empty() ? "{\"cluster\": " : "{\"sparseCluster\": ") + ToJson() + ", \"task\": {\"type\": " + json(task.job).dump() +
         ", \"index\": " + std::to_string(task.index) + "}}";
}

}  // namespace actorflow
