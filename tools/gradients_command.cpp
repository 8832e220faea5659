#include "tools/gradients_command.hpp"

#include <iostream>
#include <set>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "tools/cli_common.hpp"

namespace actorflow {
namespace cli {


namespace {

struct GradientsArgs {
  bool help = false;
  std::string graph_path;
  std::string out_path;
  std::vector<std::string> ys, xs;  // tensor names as given
};

Status ParseGradientsArgs(const std::vector<std::string>& argv, GradientsArgs* args) {
  static const std::set<std::string> kFlags = {"--graph", "--out", "--y", "--x"};
  AF_RETURN_IF_ERROR(ParseFlags(argv, kFlags, &args->help, [&](const std::string& flag, const std::string& value) {
    if (flag == "--graph") return SetOnce(flag, value, &args->graph_path);
    if (flag == "--out") return SetOnce(flag, value, &args->out_path);
    if (value.empty()) return errors::InvalidArgument(flag, " needs a tensor name");
    (flag == "--y" ? args->ys : args->xs).push_back(value);
    return Status::OK();
  }));
  if (args->help) return Status::OK();
  if (args->graph_path.empty()) return errors::InvalidArgument("--graph is required");
  if (args->out_path.empty()) return errors::InvalidArgument("--out is required");
  if (args->ys.empty()) return errors::InvalidArgument("at least one --y is required");
  if (args->xs.empty()) return errors::InvalidArgument("at least one --x is required");
  return Status::OK();
}

// The Output named `name` ("node" or "node:port") in the scope's graph.
Status FindTensor(const Scope& scope, const std::string& flag, const std::string& name, Output* out) {
  std::string node_name;
  int port = 0;
  if (!ParseTensorName(name, &node_name, &port) || port < 0)
    return errors::InvalidArgument(flag, " '", name, "' is not a tensor name (expected NAME or NAME:PORT)");
  Node* node = scope.graph()->FindNode(node_name);
  if (node == nullptr) return errors::NotFound(flag, " '", name, "': the graph has no node named '", node_name, "'");
  if (port >= node->num_outputs())
    return errors::InvalidArgument(flag, " '", name, "': node '", node_name, "' (op '", node->type_string(),
                                   "') has ", node->num_outputs(), " outputs");
  *out = Output(node, port);
  return Status::OK();
}

// Loads the graph, adds the gradients, returns the graph and their names.
Status BuildGradients(const GradientsArgs& args, proto::GraphDef* out, std::vector<std::string>* names) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(ReadGraphDefFile(args.graph_path, &def));
  const Scope root = Scope::NewRootScope();
  AF_RETURN_IF_ERROR(root.ImportGraphDef(def));
  OutputList ys(args.ys.size()), xs(args.xs.size()), grads;
  for (size_t i = 0; i < ys.size(); ++i) AF_RETURN_IF_ERROR(FindTensor(root, "--y", args.ys[i], &ys[i]));
  for (size_t i = 0; i < xs.size(); ++i) AF_RETURN_IF_ERROR(FindTensor(root, "--x", args.xs[i], &xs[i]));
  AF_RETURN_IF_ERROR(AddSymbolicGradients(root, ys, xs, &grads));
  AF_RETURN_IF_ERROR(root.ToGraphDef(out));
  names->clear();
  for (const Output& g : grads) names->push_back(g.name());
  return Status::OK();
}

}  // namespace

int GradientsCommand(const std::vector<std::string>& argv) {
  GradientsArgs args;
  const Status parsed = ParseGradientsArgs(argv, &args);
  if (args.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  proto::GraphDef def;
  std::vector<std::string> names;
  const Status built = CatchOutOfMemory("building the gradients", [&] { return BuildGradients(args, &def, &names); });
  if (!built.ok()) return CommandError(built, errors::IsResourceExhausted(built) ? kExitStepFailed : kExitUsage);
  const Status written = CatchOutOfMemory("writing the graph to '" + args.out_path + "'",
                                          [&] { return WriteGraphDefFile(args.out_path, def); });
  if (!written.ok()) return CommandError(written, kExitStepFailed);
  for (const std::string& name : names) std::cout << name << '\n';
  return kExitOk;
}

}  // namespace cli
}  // namespace actorflow
