// ClusterFixture: the distributed tests' cluster. Tasks run as real
// `actorflow server` processes (tests/local_cluster.hpp); this process joins
// as a worker task with a Server of its own, where the sessions' masters run.
//
// Contract: the constructor starts every remote task (each waited for, at
// most 10 s), then this process's Server, and REQUIREs that it was created;
// this process takes the lowest worker index no process has (the index
// LocalCluster::ClusterJson gives its placeholder address). The Server ends
// before the processes (members in that order). Checks run on the test's main
// thread only.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/master/run_options.hpp"
#include "actorflow/master/server.hpp"
#include "local_cluster.hpp"

namespace actorflow {
namespace test {

/// A task of a ClusterFixture run as an `actorflow server` process, with
/// `extra` command-line arguments.
struct RemoteTask {
  RemoteTask(std::string job, int index, std::vector<std::string> extra = {},
             std::map<std::string, std::string> env = {})
      : job(std::move(job)), index(index), extra(std::move(extra)), env(std::move(env)) {}
  std::string job;
  int index;
  std::vector<std::string> extra;
  std::map<std::string, std::string> env;  // added to its environment
};

struct ClusterFixture {
  LocalCluster processes;
  std::unique_ptr<Server> server;  // this process's task
  ClusterSpec spec;                // the cluster this process joined

  /// Starts `remote`, then this process's Server with LocalCluster's worker
  /// options, changed by `adjust` when given.
  explicit ClusterFixture(const std::vector<RemoteTask>& remote,
                          const std::function<void(ServerOptions*)>& adjust = nullptr) {
    for (const auto& t : remote) processes.Start(t.job, t.index, t.extra, t.env);
    ServerOptions o = processes.WorkerTaskOptions();
    o.task.index = OwnWorkerIndex(remote);
    if (adjust) adjust(&o);
    spec = o.cluster;
    Status s = Server::Create(o, &server);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }

  /// A session's options: its master in this process, the devices of
  /// `device_filters` only (every device when empty), found within 10 s.
  SessionOptions Options(std::vector<std::string> device_filters = {}) const {
    SessionOptions so;
    so.target = server->target();
    so.device_find_timeout_ms = 10000;
    so.device_filters = std::move(device_filters);
    return so;
  }

 private:
  static int OwnWorkerIndex(const std::vector<RemoteTask>& remote) {
    auto taken = [&](int i) {
      for (const auto& t : remote)
        if (t.job == "worker" && t.index == i) return true;
      return false;
    };
    int i = 0;
    while (taken(i)) ++i;
    return i;
  }
};

}  // namespace test
}  // namespace actorflow
