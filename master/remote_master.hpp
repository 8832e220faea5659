// RemoteMaster: a client's MasterInterface whose master runs in another
// process, the server named by the session target "actorflow://host:port" (or
// "grpc://host:port"). Every call is a CAF request to the session actor the
// server's master service created (master/master_service.hpp); feeds and
// fetches travel in those messages. Every wait is bounded by the session's
// device_find_timeout_ms (connecting, Create, Extend, Close) or watches the
// session actor (Run): a server that dies fails the call with Unavailable.
#pragma once

#include <caf/actor.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actorflow/master/master_interface.hpp"

namespace actorflow {

class ChannelPool;
struct ClientNet;

class RemoteMaster final : public MasterInterface {
 public:
  /// `address`: "host:port".
  RemoteMaster(SessionOptions options, std::string address);
  ~RemoteMaster() override;

  Status Create(const proto::GraphDef& graph) override;
  Status Extend(const proto::GraphDef& graph) override;
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  Status Close() override;
  Status ResetContainers(const std::vector<std::string>& containers) override;
  size_t num_cached_executables() const override;
  std::map<std::string, std::string> LastPlacement() const override;
  const CostModel& cost_model() const override { return cost_model_; }

 private:
  Status Connect();
  Status Network();  // the process's client network (secured when options_.tls is set)
  Status Call(caf::message msg, std::chrono::milliseconds timeout, caf::message* reply);

  SessionOptions options_;
  std::string address_;
  ClientNet* net_ = nullptr;  // set by Connect
  CostModel cost_model_;  // stays empty: the remote master keeps the costs
  mutable std::mutex mu_;
  caf::actor session_;
  caf::actor client_;  // stands for this client: the session watches it
  bool closed_ = false;
  size_t num_cached_ = 0;
  std::map<std::string, std::string> placement_;
};

}  // namespace actorflow
