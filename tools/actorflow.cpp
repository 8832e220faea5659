// actorflow: the command-line front end of the actorflow runtime.
//
//   actorflow run (--graph FILE | --saved-model DIR [--tag TAGS] [--signature KEY])
//                 [--feed NAME[:PORT]=VALUE]... [--fetch NAME[:PORT]]...
//                 [--target NAME]... [--timeout-ms N] [--steps FILE] [--trace FILE]
//                 [--no-optimize] [--devices cpu:N[,gpu:M]] [--show-placement]
//                 [--full-values | --summarize N] [--memory-limit BYTES]
//   actorflow graph --graph FILE --dot OUT [--feed NAME[:PORT]]... [--fetch NAME[:PORT]]...
//                   [--target NAME]... [--devices cpu:N[,gpu:M]] [--placed] [--partitioned]
//   actorflow gradients --graph FILE --y NAME[:PORT] [--y ...] --x NAME[:PORT] [--x ...] --out FILE
//   actorflow records convert-idx|convert-csv|count|print ...   (tools/records_command.hpp)
//   actorflow inspect --graph FILE | --saved-model DIR
//   actorflow ops
//   actorflow help
//
// Each command is in its own file: `run` in tools/run_command.hpp (its steps
// are run and reported by tools/run_steps.hpp), `graph` in
// tools/graph_command.hpp, `gradients` in tools/gradients_command.hpp, `ops`
// in tools/ops_command.hpp, `records` in tools/records_command.hpp. This file
// holds main, the usage text and the dispatch to each command.
#include <exception>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "tools/cli_common.hpp"
#include "tools/gradients_command.hpp"
#include "tools/graph_command.hpp"
#include "tools/inspect_command.hpp"
#include "tools/ops_command.hpp"
#include "tools/records_command.hpp"
#include "tools/run_command.hpp"
#include "tools/launch_command.hpp"
#include "tools/server_command.hpp"

namespace actorflow {
namespace cli {

extern const char kUsage[] = R"(usage:
  actorflow run (--graph FILE | --saved-model DIR [--tag TAGS] [--signature KEY])
                [--feed NAME[:PORT]=VALUE]... [--fetch NAME[:PORT]]... [--target NAME]...
                [--timeout-ms N] [--steps FILE] [--trace FILE]
                [--no-optimize] [--devices cpu:N[,gpu:M]] [--soft-placement]
                [--show-placement] [--full-values | --summarize N] [--memory-limit BYTES]
  actorflow graph --graph FILE --dot OUT [--feed NAME[:PORT]]... [--fetch NAME[:PORT]]...
                  [--target NAME]... [--devices cpu:N[,gpu:M]] [--placed] [--partitioned]
  actorflow gradients --graph FILE --y NAME[:PORT] [--y ...] --x NAME[:PORT] [--x ...] --out FILE
  actorflow records convert-idx|convert-csv|count|print ...
  actorflow inspect --graph FILE | --saved-model DIR
  actorflow ops
  actorflow help

run   Loads the GraphDef in FILE (.pb or .pbtxt), or a SavedModel, into a session
      and runs steps, printing one JSON line per step on stdout.
      --graph FILE          the graph to load
      --saved-model DIR     or the SavedModel to load (TensorFlow 1 style: the meta graph,
                            its variables/ restored, its main op run with its assets):
                            feeds and fetches may then name the signature's input and
                            output keys; with no --fetch and no --target, every output
                            of the signature is fetched
      --tag TAGS            the meta graph to load, by its tags, comma-separated
                            (default serve)
      --signature KEY       the signature whose keys feeds and fetches may use (default
                            serving_default)
      --feed NAME=VALUE     feeds a tensor; VALUE is JSON: a scalar, a nested array
                            or {"dtype":"float64","shape":[2],"values":[1,2]}; a
                            scalar or array feeding a placeholder takes its dtype
      --fetch NAME          fetches a tensor ("node" or "node:port")
      --target NAME         runs a node without fetching anything
      --target actorflow://HOST:PORT
                            runs the steps through the master of that server, over its
                            cluster's devices (grpc://HOST:PORT is read the same way)
      --cert F --key F --ca F
                            this client's certificate and key and the cluster CA, for a
                            server started with --security mtls
      --timeout-ms N        fails a step that runs longer than N ms (0: no limit,
                            at most 2147483647)
      --steps FILE          runs the JSON object on each line of FILE ("-": stdin),
                            {"feeds":{...},"fetches":[...],"targets":[...],"timeout_ms":N},
                            with the flags above as defaults
      --trace FILE          traces every step (how and when each node ran, its outputs'
                            shapes and bytes) and writes them as one Chrome trace to
                            FILE (open it in ui.perfetto.dev or chrome://tracing)
      --no-optimize         runs the graph as written: no common subexpression
                            elimination, no constant folding, no fused optimizer
                            updates
      --devices cpu:N[,gpu:M]
                            the devices the graph is placed on: N CPU devices (1 to
                            64; default cpu:1) and M GPUs (refused when the machine or
                            build has fewer)
      --soft-placement      a node asking for a device that does not exist, or that
                            has no kernel for it, goes where it can run instead of
                            failing the step (TensorFlow's allow_soft_placement)
      --show-placement      prints the device of each node of the first placed step
                            to stderr, "NODE -> DEVICE", sorted by node name
      --summarize N         a fetched tensor of more than 1000 (and 2N) elements is
                            summarised: dtype, shape, "summarized":true and its first
                            and last N values, flat (default 3)
      --full-values         writes every value of every fetched tensor
      --memory-limit BYTES  the memory each device's tensors, a step's output JSON and a
                            --steps line may take (e.g. 512M, 4G; default: the memory
                            available); a step over it fails with RESOURCE_EXHAUSTED
      Exit status: 0 all steps succeeded, 1 a step failed (out of memory included) or
      the trace could not be written, 2 usage or graph error.
graph Writes the GraphDef in FILE as Graphviz DOT: one box per op (name, op), data
      edges labelled with dtype and shape when known, control edges dashed.
      --graph FILE          the graph to load (required)
      --dot OUT             where to write the DOT text ("-": stdout; required)
      --feed NAME           a tensor fed by the step drawn (no value: it cuts the graph)
      --fetch NAME          a tensor fetched by the step drawn; with --fetch or
      --target NAME         --target the graph is pruned to what they need
      --devices cpu:N[,gpu:M]
                            the devices to place on, as for run (default cpu:1)
      --placed              places the pruned graph and groups nodes by device
      --partitioned         draws the partitions of the placed graph, one cluster per
                            device, with a dotted edge from each _Send to its _Recv
      Exit status: 0 written, 1 OUT could not be written, 2 usage error or a graph that
      does not load, prune or place.
gradients
      Adds to the GraphDef in FILE (.pb or .pbtxt) the nodes computing the gradient
      of the ys (the sum of all their elements) with respect to each x, writes the
      graph to the --out file and prints the gradient tensors' names, one per line
      in --x order (fetch them with 'run --fetch'). An x that no y depends on gets
      zeros.
      --graph FILE          the graph to load (required)
      --y NAME              a tensor to differentiate ("node" or "node:port"; at least one)
      --x NAME              a tensor to differentiate with respect to (at least one)
      --out FILE            where to write the graph: text if FILE ends in .pbtxt or
                            .txt, binary otherwise (required)
      Exit status: 0 written, 1 the output could not be written, 2 usage error, a graph
      that does not load, or a gradient that cannot be built.
records
      Converts IDX (MNIST, Fashion-MNIST) and CSV files to TFRecord files, counts
      and prints the records of TFRecord files: see 'actorflow records help'.
inspect
      Lists a GraphDef's inputs (placeholders with dtype and shape), outputs (nodes nothing
      consumes) and the ops this build lacks, without loading it.
ops   Lists the registered ops and the type constraints of their kernels.
server
      Runs one task of a cluster (actorflow://host:port) until SIGINT or SIGTERM:
      see 'actorflow server --help'. 'actorflow run --target actorflow://host:port'
      runs graphs on the cluster through that server's master.
launch
      Runs every task of a cluster on this machine (ps tasks as servers, the others as
      PROGRAM with TF_CONFIG set), restarting tasks that die; or, under a cluster manager
      (--cluster slurm|tf_config|auto: srun, a Kubernetes pod), this process's task only:
      see 'actorflow launch --help'.
)";

namespace {

// ---------------------------------------------------------------------------
// Dispatch.

int Main(std::vector<std::string> argv) {
  if (argv.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string command = argv.front();
  argv.erase(argv.begin());
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "run") return RunCommand(argv);
  if (command == "graph") return GraphCommand(argv);
  if (command == "gradients") return GradientsCommand(argv);
  if (command == "records") return RecordsCommand(argv);
  if (command == "ops") return OpsCommand(argv);
  if (command == "inspect") return InspectCommand(argv);
  if (command == "server") return ServerCommand(argv);
  if (command == "launch") return LaunchCommand(argv);
  return UsageError(errors::InvalidArgument("unknown command '", command, "'"));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow

int main(int argc, char** argv) {
  try {
    return actorflow::cli::Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::bad_alloc& e) {  // where no command caught it: still no abort
    std::cerr << "actorflow: RESOURCE_EXHAUSTED: out of memory (" << e.what() << ")\n";
    return actorflow::cli::kExitStepFailed;
  } catch (const std::length_error& e) {
    std::cerr << "actorflow: RESOURCE_EXHAUSTED: out of memory (" << e.what() << ")\n";
    return actorflow::cli::kExitStepFailed;
  } catch (const std::exception& e) {
    std::cerr << "actorflow: INTERNAL: " << e.what() << "\n";
    return actorflow::cli::kExitStepFailed;
  }
}

