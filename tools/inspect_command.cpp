#include "tools/inspect_command.hpp"

#include <iostream>
#include <set>

#include <map>

#include "actorflow/client/saved_model.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/ops/attrs.hpp"
#include "tools/cli_common.hpp"

namespace actorflow {
namespace cli {

namespace {

// The node name of an input string: "^ctrl", "node:1", "node".
std::string InputNode(const std::string& input) {
  std::string name = !input.empty() && input[0] == '^' ? input.substr(1) : input;
  const size_t colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(0, colon);
}

std::string ShapeText(const proto::NodeDef& nd) {
  PartialTensorShape shape;
  if (!GetNodeAttr(nd, "shape", &shape).ok()) return "unknown shape";
  return shape.unknown_rank() ? "unknown shape" : shape.DebugString();
}

// The graph's placeholders, the nodes nothing consumes and the ops this build lacks.
void PrintGraph(const proto::GraphDef& def, const std::string& indent) {
  std::set<std::string> consumed;
  for (const auto& nd : def.node())
    for (const auto& in : nd.input()) consumed.insert(InputNode(in));
  std::cout << indent << "inputs (placeholders):\n";
  int inputs = 0;
  for (const auto& nd : def.node()) {
    if (nd.op() != "Placeholder" && nd.op() != "PlaceholderWithDefault" && nd.op() != "PlaceholderV2") continue;
    DataType dtype = DT_INVALID;
    (void)GetNodeAttr(nd, "dtype", &dtype);
    std::cout << indent << "  " << nd.name() << ":0  " << (dtype == DT_INVALID ? std::string("?") : DataTypeString(dtype))
              << "  " << ShapeText(nd) << (nd.op() == "PlaceholderWithDefault" ? "  (has a default)" : "") << "\n";
    ++inputs;
  }
  if (inputs == 0) std::cout << indent << "  none\n";
  std::cout << indent << "outputs (nodes nothing consumes):\n";
  int outputs = 0;
  for (const auto& nd : def.node()) {
    if (consumed.count(nd.name())) continue;
    std::cout << indent << "  " << nd.name() << "  (" << nd.op() << ")\n";
    ++outputs;
  }
  if (outputs == 0) std::cout << indent << "  none\n";
  const std::vector<UnregisteredOp> unknown = UnregisteredOps(def);
  std::cout << indent << "ops this build lacks:" << (unknown.empty() ? " none\n" : "\n");
  for (const UnregisteredOp& u : unknown)
    std::cout << indent << "  " << u.op << "  (" << u.nodes << (u.nodes == 1 ? " node" : " nodes") << ", first '"
              << u.first_node << "'" << (u.in_function_library ? ", in a function of the graph's library" : "") << ")\n";
}

std::string TensorInfoText(const proto::TensorInfo& t) {
  std::string text = t.name().empty() ? std::string("(not a dense tensor)") : t.name();
  text += "  " + (t.dtype() == 0 ? std::string("?") : DataTypeString(static_cast<DataType>(t.dtype())));
  if (t.has_tensor_shape()) {
    const PartialTensorShape shape = PartialShapeFromProto(t.tensor_shape());
    text += "  " + (shape.unknown_rank() ? std::string("unknown shape") : shape.DebugString());
  }
  return text;
}

int InspectSavedModel(const std::string& dir) {
  proto::SavedModel model;
  const Status read = ReadSavedModel(dir, &model);
  if (!read.ok()) return UsageError(read);
  std::cout << "SavedModel '" << dir << "': " << model.meta_graphs_size() << " meta graph"
            << (model.meta_graphs_size() == 1 ? "" : "s") << "\n";
  for (const auto& meta : model.meta_graphs()) {
    std::cout << "meta graph tagged " << TagSetString(meta);
    if (!meta.meta_info_def().tensorflow_version().empty())
      std::cout << " (TensorFlow " << meta.meta_info_def().tensorflow_version() << ")";
    std::cout << ": " << meta.graph_def().node_size() << " nodes, "
              << (meta.has_saver_def() ? "variables restored by '" + meta.saver_def().restore_op_name() + "'"
                                       : std::string("no saver"))
              << "\n  signatures:" << (meta.signature_def().empty() ? " none\n" : "\n");
    std::map<std::string, proto::SignatureDef> sigs(meta.signature_def().begin(), meta.signature_def().end());
    for (const auto& [key, sig] : sigs) {
      std::cout << "    '" << key << "' (" << sig.method_name() << ")\n";
      std::map<std::string, proto::TensorInfo> in(sig.inputs().begin(), sig.inputs().end());
      std::map<std::string, proto::TensorInfo> out(sig.outputs().begin(), sig.outputs().end());
      for (const auto& [k, t] : in) std::cout << "      input  " << k << ": " << TensorInfoText(t) << "\n";
      for (const auto& [k, t] : out) std::cout << "      output " << k << ": " << TensorInfoText(t) << "\n";
    }
    PrintGraph(meta.graph_def(), "  ");
    if (meta.graph_def().library().function_size() > 0)
      std::cout << "  its graph's library has " << meta.graph_def().library().function_size()
                << " functions (a TensorFlow 2 SavedModel): calls of them are inlined when it loads\n";
  }
  return kExitOk;
}

}  // namespace

int InspectCommand(const std::vector<std::string>& argv) {
  std::string path, saved_model;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--graph" && i + 1 < argv.size() && path.empty() && saved_model.empty()) {
      path = argv[++i];
    } else if (argv[i] == "--saved-model" && i + 1 < argv.size() && path.empty() && saved_model.empty()) {
      saved_model = argv[++i];
    } else if (argv[i] == "--help" || argv[i] == "-h") {
      std::cout << "usage: actorflow inspect --graph FILE | --saved-model DIR\n";
      return kExitOk;
    } else {
      return UsageError(
          errors::InvalidArgument("inspect expects --graph FILE or --saved-model DIR, got '", argv[i], "'"));
    }
  }
  if (!saved_model.empty()) return InspectSavedModel(saved_model);
  if (path.empty()) return UsageError(errors::InvalidArgument("--graph FILE or --saved-model DIR is required"));
  proto::GraphDef def;
  const Status read = ReadGraphDefFile(path, &def);
  if (!read.ok()) return UsageError(read);
  std::cout << "graph '" << path << "': " << def.node_size() << " nodes, producer " << def.versions().producer()
            << "\n";
  PrintGraph(def, "");
  return kExitOk;
}

}  // namespace cli
}  // namespace actorflow
