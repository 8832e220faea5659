#include "actorflow/client/session.hpp"

#include <atomic>

#include "actorflow/core/ids.hpp"
#include "actorflow/master/local_master.hpp"
#include "actorflow/master/remote_master.hpp"
#include "actorflow/master/server.hpp"

namespace actorflow {

namespace {
std::atomic<uint64_t> g_next_session{1};

// A master that only reports why the session has none (a bad target).
class NoMaster final : public MasterInterface {
 public:
  explicit NoMaster(Status why) : why_(std::move(why)) {}
  Status Create(const proto::GraphDef&) override { return why_; }
  Status Extend(const proto::GraphDef&) override { return why_; }
  Status Run(const RunOptions&, const std::vector<std::pair<std::string, Tensor>>&, const std::vector<std::string>&,
             const std::vector<std::string>&, std::vector<Tensor>*, RunMetadata*) override {
    return why_;
  }
  Status Close() override { return Status::OK(); }
  Status ResetContainers(const std::vector<std::string>&) override { return why_; }
  size_t num_cached_executables() const override { return 0; }
  std::map<std::string, std::string> LastPlacement() const override { return {}; }
  const CostModel& cost_model() const override { return costs_; }

 private:
  Status why_;
  CostModel costs_;
};

std::unique_ptr<MasterInterface> MakeMaster(SessionOptions options) {
  // Unique across processes: sessions of many clients meet on a shared task.
  static const uint64_t process = NewIncarnation();
  std::string handle = "session_" + std::to_string(process) + "_" + std::to_string(g_next_session.fetch_add(1));
  if (options.target.empty()) return std::make_unique<LocalMaster>(options, handle);
  if (Server* server = Server::FindInProcess(options.target)) {
    options.runtime = server->runtime();
    if (server->options().has_cluster)
      return std::make_unique<LocalMaster>(options, handle, server->options().cluster, server->options().task);
    return std::make_unique<LocalMaster>(options, handle);
  }
  for (const char* scheme : {"actorflow://", "grpc://"}) {
    const std::string prefix = scheme;
    if (options.target.rfind(prefix, 0) == 0) {
      std::string address = options.target.substr(prefix.size());
      if (Status s = CheckHostPort(address); !s.ok())
        return std::make_unique<NoMaster>(errors::InvalidArgument("bad session target '", options.target, "': ",
                                                                  s.message()));
      return std::make_unique<RemoteMaster>(options, address);
    }
  }
  return std::make_unique<NoMaster>(errors::InvalidArgument(
      "bad session target '", options.target, "': expected \"\" (this process), a Server's target, "
      "\"actorflow://host:port\" or \"grpc://host:port\""));
}
}  // namespace

Session::Session(SessionOptions options) : master_(MakeMaster(std::move(options))) {}

Session::~Session() = default;  // the master closes itself

Status Session::Create(const proto::GraphDef& graph) { return master_->Create(graph); }

Status Session::Extend(const proto::GraphDef& graph) { return master_->Extend(graph); }

Status Session::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs, RunMetadata* metadata) {
  return master_->Run(options, feeds, fetches, targets, outputs, metadata);
}

Status Session::Close() { return master_->Close(); }

Status Session::ResetContainers(const std::vector<std::string>& containers) {
  return master_->ResetContainers(containers);
}

size_t Session::num_cached_executables() const { return master_->num_cached_executables(); }

std::map<std::string, std::string> Session::LastPlacement() const { return master_->LastPlacement(); }

const CostModel& Session::cost_model() const { return master_->cost_model(); }

}  // namespace actorflow
