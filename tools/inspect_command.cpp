#include "tools/inspect_command.hpp"

#include <iostream>
#include <set>

#include "core/proto/graph.pb.h"
#include "core/tensor_shape.hpp"
#include "graph/graph_def_io.hpp"
#include "ops/attrs.hpp"
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

}  // namespace

int InspectCommand(const std::vector<std::string>& argv) {
  std::string path;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--graph" && i + 1 < argv.size() && path.empty()) {
      path = argv[++i];
    } else if (argv[i] == "--help" || argv[i] == "-h") {
      std::cout << "usage: actorflow inspect --graph FILE\n";
      return kExitOk;
    } else {
      return UsageError(errors::InvalidArgument("inspect expects --graph FILE, got '", argv[i], "'"));
    }
  }
  if (path.empty()) return UsageError(errors::InvalidArgument("--graph is required"));
  proto::GraphDef def;
  const Status read = ReadGraphDefFile(path, &def);
  if (!read.ok()) return UsageError(read);

  std::set<std::string> consumed;
  for (const auto& nd : def.node())
    for (const auto& in : nd.input()) consumed.insert(InputNode(in));
  std::cout << "graph '" << path << "': " << def.node_size() << " nodes, producer " << def.versions().producer()
            << "\n";
  std::cout << "inputs (placeholders):\n";
  int inputs = 0;
  for (const auto& nd : def.node()) {
    if (nd.op() != "Placeholder" && nd.op() != "PlaceholderWithDefault" && nd.op() != "PlaceholderV2") continue;
    DataType dtype = DT_INVALID;
    (void)GetNodeAttr(nd, "dtype", &dtype);
    std::cout << "  " << nd.name() << ":0  " << (dtype == DT_INVALID ? std::string("?") : DataTypeString(dtype)) << "  "
              << ShapeText(nd) << (nd.op() == "PlaceholderWithDefault" ? "  (has a default)" : "") << "\n";
    ++inputs;
  }
  if (inputs == 0) std::cout << "  none\n";
  std::cout << "outputs (nodes nothing consumes):\n";
  int outputs = 0;
  for (const auto& nd : def.node()) {
    if (consumed.count(nd.name())) continue;
    std::cout << "  " << nd.name() << "  (" << nd.op() << ")\n";
    ++outputs;
  }
  if (outputs == 0) std::cout << "  none\n";
  const std::vector<UnregisteredOp> unknown = UnregisteredOps(def);
  std::cout << "ops this build lacks:" << (unknown.empty() ? " none\n" : "\n");
  for (const UnregisteredOp& u : unknown)
    std::cout << "  " << u.op << "  (" << u.nodes << (u.nodes == 1 ? " node" : " nodes") << ", first '" << u.first_node
              << "'" << (u.in_function_library ? ", a function of the graph's library" : "") << ")\n";
  return kExitOk;
}

}  // namespace cli
}  // namespace actorflow
