#include "client/session.hpp"

#include <atomic>

#include "master/local_master.hpp"

namespace actorflow {

namespace {
std::atomic<uint64_t> g_next_session{1};
}  // namespace

Session::Session(SessionOptions options)
    : master_(std::make_unique<LocalMaster>(options, "session_" + std::to_string(g_next_session.fetch_add(1)))) {}

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
