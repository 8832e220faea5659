// Fuzz target: a GraphDef from untrusted bytes through what loading a graph
// for a step does before anything runs: parsing (binary protobuf or
// actorflow's text parser), ImportGraphDef (attr defaults and validation, op
// and kernel lookup, edges), ValidateGraph, static shape inference (as
// `actorflow graph --dot` draws shapes), pruning for a step
// (RewriteGraphForExecution), placement onto two CPU devices and partitioning
// into per-device graphs with _Send/_Recv — `actorflow graph --partitioned`'s
// path (tools/actorflow.cpp BuildDot). Nothing runs.
//
// Input layout (tests/fuzz/make_seeds.cpp writes the binary seeds):
//   byte 0   bit 0: the rest is text (ParseGraphDefText), else binary;
//            bit 1: the step fetches output 0 of each sink node, else targets them;
//            bits 2-3: placement strategy (cost model, round robin, single, cost model
//            with soft placement)
//   the rest: the GraphDef
// Findings: crashes, sanitizer reports, exceptions escaping (graph loading
// never throws: a bad graph is a Status), hangs (-timeout) and allocations
// over -rss_limit_mb / -malloc_limit_mb (an attr trusted to size something).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/partition.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/graph/static_shapes.hpp"
#include "actorflow/graph/subgraph.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace actorflow;

namespace {

// Two CPU devices, made once per process: only its devices are used.
Runtime& TwoCpuRuntime() {
  static Runtime* runtime = [] {
    RuntimeOptions o;
    o.num_threads = 1;
    o.num_cpu_devices = 2;
    o.num_gpu_devices = 0;
    return new Runtime(o);
  }();
  return *runtime;
}

constexpr size_t kMaxSinks = 16;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs each string field of invalid UTF-8 it parses: at fuzzing
  // speed that is most of the run's time and log. Statuses say what failed.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  proto::GraphDef def;
  if (mode & 1) {
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (!ParseGraphDefText(text, &def, "<fuzz>").ok()) return 0;
  } else if (!def.ParseFromArray(data + 1, static_cast<int>(size - 1))) {
    return 0;
  }

  Graph g;
  if (!ImportGraphDef(def, &g).ok()) return 0;
  if (!ValidateGraph(g).ok()) return 0;
  (void)InferStaticShapes(g);

  std::vector<std::string> fetches, targets;
  for (Node* n : g.nodes()) {
    if (!n->out_edges().empty()) continue;
    if ((mode & 2) && n->num_outputs() > 0) {
      fetches.push_back(n->name() + ":0");
    } else {
      targets.push_back(n->name());
    }
    if (fetches.size() + targets.size() >= kMaxSinks) break;
  }
  if (fetches.empty() && targets.empty()) return 0;
  FeedFetchInfo info;
  if (!RewriteGraphForExecution(&g, {}, fetches, targets, &info).ok()) return 0;

  PlacerOptions placer;
  switch ((mode >> 2) & 3) {
    case 1: placer.strategy = PlacementStrategy::kRoundRobin; break;
    case 2: placer.strategy = PlacementStrategy::kSingle; break;
    case 3: placer.allow_soft_placement = true; break;
    default: break;
  }
  if (!PlaceGraph(&g, TwoCpuRuntime().device_manager(), placer).ok()) return 0;
  std::vector<GraphPartition> partitions;
  if (!PartitionGraph(g, PartitionOptions(), &partitions).ok()) return 0;
  // Every partition is a graph of its own that must import again.
  for (const GraphPartition& p : partitions) {
    Graph pg;
    const Status s = ImportGraphDef(p.graph, &pg);
    if (!s.ok()) fuzz::FuzzCheck(false, "a partition does not import: " + s.ToString());
  }
  return 0;
}
