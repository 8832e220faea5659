// ClusterSpec and TF_CONFIG (core/cluster_spec.hpp): TensorFlow's formats,
// and each of TensorFlow's rules refused with a message saying which.
#include <catch2/catch.hpp>

#include <stdlib.h>  // setenv, unsetenv

#include <map>
#include <string>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/server_environment.hpp"

using namespace actorflow;

namespace {
// The InvalidArgument message of parsing `json`; FAILs if it parses.
std::string Refusal(const std::string& json) {
  ClusterSpec spec;
  TaskId task;
  const Status s = ClusterSpec::Parse(json, &spec, &task);
  INFO(json);
  REQUIRE(!s.ok());
  CHECK(s.code() == Code::kInvalidArgument);
  return s.message();
}
}  // namespace

TEST_CASE("cluster spec: TF_CONFIG as TensorFlow writes it, with the task this process is") {
  ClusterSpec spec;
  TaskId task;
  const Status s = ClusterSpec::Parse(
      R"({"cluster": {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "localhost:2224"],
                      "ps": ["[::1]:2225"]},
          "task": {"type": "worker", "index": 1}})",
      &spec, &task);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(spec.jobs() == std::vector<std::string>{"chief", "ps", "worker"});
  CHECK(spec.num_tasks("worker") == 2);
  CHECK(spec.num_tasks("nope") == 0);
  CHECK(task.job == "worker");
  CHECK(task.index == 1);
  CHECK(task.name() == "/job:worker/replica:0/task:1");
  std::string address;
  REQUIRE(spec.Address(task, &address).ok());
  CHECK(address == "localhost:2224");
  CHECK(errors::IsNotFound(spec.Address({"worker", 2}, &address)));
  CHECK(spec.chief().job == "chief");
  CHECK(spec.tasks().size() == 4);
  // The jobs' object alone is a cluster too; ToJson reads back the same.
  ClusterSpec again;
  REQUIRE(ClusterSpec::Parse(spec.ToJson(), &again).ok());
  CHECK(again.ToJson() == spec.ToJson());
}

TEST_CASE("cluster spec: task ids as a dense map; without a chief, worker 0 is the chief; evaluators stand aside") {
  ClusterSpec spec;
  TaskId task;
  REQUIRE(ClusterSpec::Parse(R"({"worker": {"1": "h:2001", "0": "h:2000"}, "evaluator": ["h:3000"]})", &spec, &task)
              .ok());
  CHECK(!task.valid());  // no "task": the cluster alone
  std::string address;
  REQUIRE(spec.Address({"worker", 0}, &address).ok());
  CHECK(address == "h:2000");
  CHECK(spec.chief().job == "worker");
  CHECK(spec.chief().index == 0);
  CHECK(spec.num_tasks("evaluator") == 0);
  REQUIRE(ClusterSpec::Parse(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "evaluator", "index": 0}})", &spec,
                             &task)
              .ok());
  CHECK(task.job == "evaluator");
}

TEST_CASE("cluster spec: each of TensorFlow's rules is refused, saying which") {
  CHECK(Refusal("not json").find("not valid JSON") != std::string::npos);
  CHECK(Refusal(R"(["h:1"])").find("object of jobs") != std::string::npos);
  CHECK(Refusal("{}").find("no jobs") != std::string::npos);
  CHECK(Refusal(R"({"Worker": ["h:1"]})").find("[a-z][a-z0-9_]*") != std::string::npos);
  CHECK(Refusal(R"({"worker": []})").find("no tasks") != std::string::npos);
  CHECK(Refusal(R"({"chief": ["h:1", "h:2"]})").find("one chief") != std::string::npos);
  CHECK(Refusal(R"({"worker": {"0": "h:1", "2": "h:2"}})").find("dense task ids") != std::string::npos);
  CHECK(Refusal(R"({"worker": {"x": "h:1"}})").find("non-negative integers") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["h:1"], "ps": ["h:1"]})").find("duplicate address") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["h"]})").find("not \"host:port\"") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["h:0"]})").find("1..65535") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["h:70000"]})").find("1..65535") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["h:8x"]})").find("not a number") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["::1:2222"]})").find("brackets") != std::string::npos);
  CHECK(Refusal(R"({"worker": ["bad host:1"]})").find("host name") != std::string::npos);
  CHECK(Refusal(R"({"worker": [7]})").find("\"host:port\" string") != std::string::npos);
  CHECK(Refusal(R"({"cluster": ["h:1"]})").find("\"cluster\" must be an object") != std::string::npos);
  CHECK(Refusal(R"({"cluster": {"worker": ["h:1"]}, "task": {"index": 0}})").find("task type present") !=
        std::string::npos);
  CHECK(Refusal(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}})").find("task index present") !=
        std::string::npos);
  CHECK(Refusal(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": -1}})")
            .find("non-negative") != std::string::npos);
  CHECK(Refusal(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}})")
            .find("index in range") != std::string::npos);
  CHECK(Refusal(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}})")
            .find("task type in the cluster") != std::string::npos);
  CHECK(Refusal(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": "0"}})")
            .find("integer") != std::string::npos);
}

TEST_CASE("cluster spec: TF_CONFIG is read from the environment verbatim") {
  ClusterSpec spec;
  TaskId task;
  bool found = true;
  unsetenv("TF_CONFIG");
  REQUIRE(ClusterSpec::FromEnvironment(&spec, &task, &found).ok());
  CHECK(!found);
  setenv("TF_CONFIG", R"({"cluster": {"ps": ["127.0.0.1:2225"]}, "task": {"type": "ps", "index": 0}})", 1);
  REQUIRE(ClusterSpec::FromEnvironment(&spec, &task, &found).ok());
  CHECK(found);
  CHECK(task.name() == "/job:ps/replica:0/task:0");
  setenv("TF_CONFIG", R"({"cluster": {"chief": ["a:1", "b:2"]}})", 1);
  const Status s = ClusterSpec::FromEnvironment(&spec, &task, &found);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("TF_CONFIG environment variable") != std::string::npos);
  unsetenv("TF_CONFIG");
}

TEST_CASE("server environment: ACTORFLOW_* variables set how a task serves", "[cluster]") {
  std::map<std::string, std::string> vars;
  const EnvironmentReader env = [&vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  ServerOptions o;
  REQUIRE(ApplyServerEnvironment(&o, env).ok());  // nothing set: unchanged
  CHECK(o.bind == "127.0.0.1");
  CHECK_FALSE(o.insecure);
  vars = {{"ACTORFLOW_BIND", "10.9.0.2"}, {"ACTORFLOW_INSECURE", "1"}, {"ACTORFLOW_PEER_TIMEOUT_MS", "900"},
          {"ACTORFLOW_HEARTBEAT_MS", "100"}};
  REQUIRE(ApplyServerEnvironment(&o, env).ok());
  CHECK(o.bind == "10.9.0.2");
  CHECK(o.insecure);
  CHECK(o.peer_timeout_ms == 900);
  CHECK(o.heartbeat_ms == 100);
  // What a launcher passes on reads back the same.
  std::map<std::string, std::string> passed;
  for (const std::string& kv : ServerEnvironment(o)) passed[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  ServerOptions back;
  vars = passed;
  REQUIRE(ApplyServerEnvironment(&back, env).ok());
  CHECK(back.bind == o.bind);
  CHECK(back.insecure);
  CHECK(back.peer_timeout_ms == 900);

  vars = {{"ACTORFLOW_PEER_TIMEOUT_MS", "soon"}};
  Status s = ApplyServerEnvironment(&o, env);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("ACTORFLOW_PEER_TIMEOUT_MS"));
  vars = {{"ACTORFLOW_TLS_CERT", "/x.pem"}};
  s = ApplyServerEnvironment(&o, env);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("go together"));
  vars = {{"ACTORFLOW_TLS_CERT", "/nonexistent/c.pem"}, {"ACTORFLOW_TLS_KEY", "/nonexistent/k.pem"},
          {"ACTORFLOW_TLS_CA", "/nonexistent/ca.pem"}};
  s = ApplyServerEnvironment(&o, env);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("/nonexistent/"));
  vars = {{"ACTORFLOW_INSECURE", "yes please"}};
  CHECK(ApplyServerEnvironment(&o, env).code() == Code::kInvalidArgument);
}
