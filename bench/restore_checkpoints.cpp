// restore_checkpoints DIR: whether every checkpoint a training run kept in DIR
// restores (bench/chaos.sh): each one its state file lists is opened and every
// tensor read back, checksums checked, and holds the same tensors (names,
// dtypes, shapes) as the newest. Prints one JSON line:
//   {"dir":"...","checkpoints":3,"restored":3,"errors":[]}
// exit 0 when every one restores (and there is at least one), else 1.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/checkpoint_state.hpp"

using namespace actorflow;

namespace {

std::string Json(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

// Every tensor of `prefix` read back; its tensors' dtypes and shapes in *layout.
Status Restore(const std::string& prefix, std::map<std::string, std::string>* layout) {
  std::unique_ptr<BundleReader> r;
  AF_RETURN_IF_ERROR(BundleReader::Open(prefix, &r));
  for (const std::string& name : r->TensorNames()) {
    Tensor t;
    AF_RETURN_IF_ERROR(r->Lookup(name, &t));
    (*layout)[name] = DataTypeString(t.dtype()) + t.shape().DebugString();
  }
  if (layout->empty()) return errors::DataLoss(prefix, " holds no tensor");
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CHECKPOINT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  CheckpointState state;
  std::vector<std::string> problems;
  int restored = 0;
  Status s = ReadCheckpointState(dir, &state);
  if (!s.ok()) problems.push_back(s.ToString());
  std::map<std::string, std::string> newest;
  if (s.ok() && !(s = Restore(state.latest, &newest)).ok()) problems.push_back(s.ToString());
  for (const std::string& prefix : state.all) {
    std::map<std::string, std::string> layout;
    Status r = Restore(prefix, &layout);
    if (r.ok() && layout != newest)
      r = errors::DataLoss(prefix, " holds other tensors than the newest checkpoint, ", state.latest);
    if (r.ok()) ++restored;
    else problems.push_back(r.ToString());
  }
  std::string errors;
  for (const auto& p : problems) errors += (errors.empty() ? "" : ",") + Json(p);
  std::printf("{\"dir\":%s,\"checkpoints\":%zu,\"restored\":%d,\"errors\":[%s]}\n", Json(dir).c_str(), state.all.size(),
              restored, errors.c_str());
  return problems.empty() && restored > 0 ? 0 : 1;
}
