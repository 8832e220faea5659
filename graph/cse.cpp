#include "actorflow/graph/cse.hpp"

#include "actorflow/graph/control_flow_info.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace actorflow {

namespace {

// Ops whose nodes stand for a value from outside (a feed, a transfer) rather
// than a computation, even though they are not marked stateful.
constexpr const char* kNeverMerged[] = {"_Arg",  "_Retval", "Placeholder", "PlaceholderWithDefault", "Send",
                                        "Recv",  "_Send",   "_Recv",       "_HostSend",              "_HostRecv"};

bool HasRefType(const DataTypeVector& types) { return std::any_of(types.begin(), types.end(), IsRefType); }

void AppendInt(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }

void AppendBytes(std::string* out, const std::string& bytes) {
  AppendInt(out, bytes.size());
  out->append(bytes);
}

// The node's attrs as bytes that are equal exactly when the attrs are: names
// sorted, each value serialized deterministically (nested maps sorted too).
std::string CanonicalAttrs(const proto::NodeDef& def) {
  std::vector<const std::string*> names;
  names.reserve(def.attr_size());
  for (const auto& kv : def.attr()) names.push_back(&kv.first);
  std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  std::string out;
  for (const std::string* name : names) {
    std::string value;
    {
      google::protobuf::io::StringOutputStream stream(&value);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      def.attr().at(*name).SerializeToCodedStream(&coded);
    }
    AppendBytes(&out, *name);
    AppendBytes(&out, value);
  }
  return out;
}

// Everything that makes `n` equivalent to another node but its attrs (only
// their hash `attrs_hash` here): op, devices, the classes of its data inputs with their
// ports, and the set of classes of its control inputs. False when an input
// has no class yet (a loop's back edge) or a data input is missing: such a
// node is merged with nothing.
bool ClassKey(const Node& n, size_t attrs_hash, const std::vector<int>& cls, std::string* key) {
  std::vector<std::pair<int, int>> data(n.num_inputs(), {-1, -1});
  std::vector<int> control;
  for (const Edge* e : n.in_edges()) {
    const int c = cls[e->src->id()];
    if (c < 0) return false;
    if (e->IsControlEdge()) control.push_back(c);
    else if (e->dst_input >= 0 && e->dst_input < n.num_inputs()) data[e->dst_input] = {c, e->src_output};
  }
  std::sort(control.begin(), control.end());
  control.erase(std::unique(control.begin(), control.end()), control.end());
  key->clear();
  AppendBytes(key, n.type_string());
  AppendBytes(key, n.requested_device());
  AppendBytes(key, n.assigned_device());
  AppendInt(key, attrs_hash);
  for (const auto& [c, port] : data) {
    if (c < 0) return false;
    AppendInt(key, static_cast<uint32_t>(c));
    AppendInt(key, static_cast<uint32_t>(port));
  }
  AppendInt(key, control.size());
  for (int c : control) AppendInt(key, static_cast<uint32_t>(c));
  return true;
}

}  // namespace

bool IsCseCandidate(const Node& n) {
  if (n.is_stateful() || IsControlFlowOp(n.type_string())) return false;
  for (const char* op : kNeverMerged)
    if (n.type_string() == op) return false;
  return !HasRefType(n.input_types()) && !HasRefType(n.output_types());
}

Status EliminateCommonSubexpressions(Graph* g, int* num_removed) {
  if (num_removed) *num_removed = 0;
  std::vector<Node*> order;
  AF_RETURN_IF_ERROR(TopologicalOrder(*g, &order));

  // Value numbering: every node gets the class of the nodes equivalent to it.
  // Inputs are numbered before their consumers, so a consumer's key already
  // names its inputs' classes, not the nodes themselves.
  std::vector<int> cls(g->num_node_ids(), -1);
  std::vector<std::vector<Node*>> members;                   // by class, in topological order
  std::unordered_map<std::string, std::vector<int>> by_key;  // several classes only on an attr hash collision
  std::string key, attrs;
  for (Node* n : order) {
    int c = -1;
    const bool candidate = IsCseCandidate(*n);
    if (candidate) attrs = CanonicalAttrs(n->def());
    if (candidate && ClassKey(*n, std::hash<std::string>{}(attrs), cls, &key)) {
      std::vector<int>& bucket = by_key[key];
      for (int other : bucket) {
        if (CanonicalAttrs(members[other].front()->def()) == attrs) {
          c = other;
          break;
        }
      }
      if (c < 0) bucket.push_back(static_cast<int>(members.size()));
    }
    if (c < 0) {
      c = static_cast<int>(members.size());
      members.emplace_back();
    }
    cls[n->id()] = c;
    members[c].push_back(n);
  }

  // Each class keeps its node with the smallest id; the others hand it their consumers.
  std::vector<Node*> doomed;
  for (const auto& m : members) {
    if (m.size() < 2) continue;
    Node* keep = *std::min_element(m.begin(), m.end(), [](Node* a, Node* b) { return a->id() < b->id(); });
    for (Node* n : m) {
      if (n == keep) continue;
      const std::vector<Edge*> out = n->out_edges();
      for (const Edge* e : out) g->ReplaceEdgeSource(e, keep, e->src_output);
      doomed.push_back(n);
    }
  }
  g->RemoveNodes(doomed);
  if (num_removed) *num_removed = static_cast<int>(doomed.size());
  return Status::OK();
}

}  // namespace actorflow
