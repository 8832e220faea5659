// Placement next to a GPU: nodes that ask for no device go to the GPU when it
// has kernels for them (TensorFlow's default), a requested CPU keeps its node,
// ops without a GPU kernel go to the CPU, measured costs can overrule the
// preference, soft placement falls back. The GPU here is a Device object only
// (placement needs no hardware), so these run on every machine.
#include <catch2/catch.hpp>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/collective_ops.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/graph/preparation.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "test_util.hpp"
#ifdef AF_CUDA
#include "examples/mlp_model.hpp"
#endif

using namespace actorflow;
using test::kCpu;
using test::kGpu;

namespace {

AF_REGISTER_OP("PlacementTestOp").Input("x: float").Output("y: float").SetShapeFn(shape_fns::Unchanged)
    .Doc("Test only: an op with kernels on CPU and GPU.");
AF_REGISTER_OP("PlacementTestCpuOnly").Input("x: float").Output("y: float").SetShapeFn(shape_fns::Unchanged)
    .Doc("Test only: an op with a CPU kernel only.");

class PassThrough : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};
AF_REGISTER_KERNEL(KernelDefBuilder("PlacementTestOp").Device(DEVICE_CPU), PassThrough);
AF_REGISTER_KERNEL(KernelDefBuilder("PlacementTestOp").Device(DEVICE_GPU), PassThrough);
AF_REGISTER_KERNEL(KernelDefBuilder("PlacementTestCpuOnly").Device(DEVICE_CPU), PassThrough);

struct Devices {
  Device cpu{kCpu, DEVICE_CPU, nullptr, nullptr};
  Device gpu{kGpu, DEVICE_GPU, nullptr, nullptr};
  DeviceManager manager{{&cpu, &gpu}};
};

void AddConst(proto::GraphDef* def, const std::string& name) {
  proto::NodeDef* n = def->add_node();
  n->set_name(name);
  n->set_op("Const");
  (*n->mutable_attr())["dtype"] = AttrType(DT_FLOAT);
  (*n->mutable_attr())["value"] = AttrTensor(Tensor::Scalar<float>(1.f));
}

void AddOp(proto::GraphDef* def, const std::string& name, const std::string& op, const std::string& input,
           const std::string& device = "") {
  proto::NodeDef* n = def->add_node();
  n->set_name(name);
  n->set_op(op);
  n->add_input(input);
  n->set_device(device);
}

// Eight independent chains c_i -> a_i -> b_i: the cost model would spread them
// over both devices if it could.
proto::GraphDef Branches(const std::string& requested_for_first = "") {
  proto::GraphDef def;
  for (int i = 0; i < 8; ++i) {
    const std::string s = std::to_string(i);
    AddConst(&def, "c" + s);
    AddOp(&def, "a" + s, "PlacementTestOp", "c" + s, i == 0 ? requested_for_first : "");
    AddOp(&def, "b" + s, "PlacementTestOp", "a" + s);
  }
  return def;
}

Status Place(const proto::GraphDef& def, const Devices& d, PlacerOptions options, Graph* g) {
  AF_RETURN_IF_ERROR(ImportGraphDef(def, g));
  return PlaceGraph(g, d.manager, options);
}

// Prepares `g` up to placement on `devices` (graph/preparation.hpp), with capture on or off.
Status PrepareToPlace(Graph* g, const DeviceManager& devices, bool capture_gpu_steps = true) {
  PreparationOptions o;
  o.last_stage = PreparationStage::kPlace;
  o.devices = &devices;
  o.graph_options.capture_gpu_steps = capture_gpu_steps;
  PreparedGraph prepared;
  return PrepareGraph(g, {}, {}, {}, o, &prepared);
}

#ifdef AF_CUDA
// `root`'s graph placed on `d` with the default options into `g`; its GraphDef.
proto::GraphDef PlaceScope(const Scope& root, const Devices& d, Graph* g) {
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  Status s = Place(def, d, PlacerOptions(), g);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return def;
}
#endif

std::string DeviceOf(const Graph& g, const std::string& node) {
  const Node* n = g.FindNode(node);
  REQUIRE(n != nullptr);
  return n->assigned_device();
}

}  // namespace

TEST_CASE("placement: nodes that request no device go to the GPU beside a CPU") {
  Devices d;
  for (PlacementStrategy strategy :
       {PlacementStrategy::kCostModel, PlacementStrategy::kRoundRobin, PlacementStrategy::kSingle}) {
    PlacerOptions options;
    options.strategy = strategy;
    Graph g;
    REQUIRE(Place(Branches(), d, options, &g).ok());
    for (int i = 0; i < 8; ++i) {
      INFO("chain " << i << " with strategy " << static_cast<int>(strategy));
      CHECK(DeviceOf(g, "a" + std::to_string(i)) == kGpu);
      CHECK(DeviceOf(g, "b" + std::to_string(i)) == kGpu);
    }
  }
}

TEST_CASE("placement: a node asking for the CPU, or without a GPU kernel, runs on the CPU") {
  Devices d;
  Graph g;
  REQUIRE(Place(Branches("/device:CPU:0"), d, PlacerOptions(), &g).ok());
  CHECK(DeviceOf(g, "a0") == kCpu);
  CHECK(DeviceOf(g, "b0") == kGpu);  // asks for nothing
  for (int i = 1; i < 8; ++i) CHECK(DeviceOf(g, "a" + std::to_string(i)) == kGpu);

  proto::GraphDef mixed;
  AddConst(&mixed, "c");
  AddOp(&mixed, "host", "PlacementTestCpuOnly", "c");
  AddOp(&mixed, "dev", "PlacementTestOp", "host");
  Graph g2;
  REQUIRE(Place(mixed, d, PlacerOptions(), &g2).ok());
  CHECK(DeviceOf(g2, "host") == kCpu);
  CHECK(DeviceOf(g2, "dev") == kGpu);
}

TEST_CASE("placement: measured costs on both devices can keep a tiny op on the CPU") {
  Devices d;
  proto::GraphDef def;
  AddConst(&def, "c");
  AddOp(&def, "host1", "PlacementTestCpuOnly", "c");
  AddOp(&def, "tiny", "PlacementTestOp", "host1");
  AddOp(&def, "host2", "PlacementTestCpuOnly", "tiny");
  CostModel costs;
  PlacerOptions options;
  options.cost_model = &costs;
  {  // measured on the CPU only: the GPU is still preferred
    costs.Record("tiny", kCpu, 1.0);
    Graph g;
    REQUIRE(Place(def, d, options, &g).ok());
    CHECK(DeviceOf(g, "tiny") == kGpu);
  }
  {  // measured on both, and the transfers there and back cost more than the op
    costs.Record("tiny", kGpu, 1.0);
    Graph g;
    REQUIRE(Place(def, d, options, &g).ok());
    CHECK(DeviceOf(g, "tiny") == kCpu);
  }
}

TEST_CASE("placement: a node requesting the GPU gets it, with the constant feeding it") {
  Devices d;
  Graph g;
  REQUIRE(Place(Branches("/device:GPU:0"), d, PlacerOptions(), &g).ok());
  CHECK(DeviceOf(g, "a0") == kGpu);
  // A constant follows its consumer where it can run there (Const has a GPU kernel in CUDA builds).
  CHECK(DeviceOf(g, "c0") == (HasKernel(g.FindNode("c0")->def(), DEVICE_GPU) ? kGpu : kCpu));
}

TEST_CASE("placement: a GPU request that cannot be met is an error, or the CPU with soft placement") {
  Devices d;
  {
    Graph g;
    Status s = Place(Branches("/device:GPU:1"), d, PlacerOptions(), &g);  // no such GPU
    REQUIRE(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("'a0'"));
  }
  proto::GraphDef cpu_only;
  AddConst(&cpu_only, "c");
  AddOp(&cpu_only, "x", "PlacementTestCpuOnly", "c", "/device:GPU:0");  // no GPU kernel
  {
    Graph g;
    Status s = Place(cpu_only, d, PlacerOptions(), &g);
    REQUIRE(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("has no kernel for GPU"));
  }
  PlacerOptions soft;
  soft.allow_soft_placement = true;
  {  // GPU:0 takes what asked for the missing GPU:1
    Graph g;
    REQUIRE(Place(Branches("/device:GPU:1"), d, soft, &g).ok());
    CHECK(DeviceOf(g, "a0") == kGpu);
  }
  {  // no GPU kernel: the CPU
    Graph g;
    REQUIRE(Place(cpu_only, d, soft, &g).ok());
    CHECK(DeviceOf(g, "x") == kCpu);
  }
}

// The GPU kernels are registered in CUDA builds only: elsewhere the case
// reports itself skipped (its own CTest entry, placement_gpu_test_cuda).
TEST_CASE("placement by default puts the examples' whole MLP training step on the GPU", "[may_skip][cuda]") {
#ifndef AF_CUDA
  AF_SKIP("this build has no CUDA (nvcc was not found or AF_ENABLE_CUDA=OFF): no GPU kernels are registered");
#else
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32);
  examples::Mlp m = examples::BuildMlp(root, x, y, 0.001, 100);  // Adam, learning-rate decay, accuracy
  Devices d;
  Graph g;
  PlaceScope(root, d, &g);
  // On the host: the feeds, the initializers' random draws, and the int64
  // global step (its variable and updates). Constants follow their first
  // consumer, wherever it is.
  for (const Node* n : g.nodes()) {
    const std::string& op = n->type_string();
    const bool host = op == "Placeholder" || op == "RandomUniform" || op == "Const" ||
                      n->name().rfind("global_step", 0) == 0 || (n->name() == "train" && op == "AssignAdd");
    INFO(n->name() << " (" << op << ")");
    if (!host) CHECK(n->assigned_device() == kGpu);
  }
#endif
}

TEST_CASE("placement: the collectives of a data-parallel step go to the GPU with the gradients they reduce",
          "[may_skip][cuda]") {
#ifndef AF_CUDA
  AF_SKIP("this build has no CUDA (nvcc was not found or AF_ENABLE_CUDA=OFF): no GPU kernels are registered");
#else
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::CollectiveOptions co;
  co.group_size = 2;
  co.final_op = "Div";
  ops::CollectiveReduce(root.WithOpName("mean"), ops::Square(root.WithOpName("grad"), x), co);
  co.instance_key = 2;
  ops::CollectiveBcastRecv(root.WithOpName("weights"), DT_FLOAT, {4, 4}, co);
  co.instance_key = 3;
  ops::CollectiveBcastSend(root.WithOpName("sent"), ops::Identity(root.WithOpName("w"), x), {4, 4}, co);
  co.instance_key = 4;
  ops::CollectiveBcastFirst(root.WithOpName("first"), ops::Identity(root.WithOpName("v"), x), co);
  Devices d;
  Graph g;
  proto::GraphDef def = PlaceScope(root, d, &g);
  for (const char* n : {"mean", "weights", "sent", "first"}) CHECK(DeviceOf(g, n) == kGpu);
  // Asked for the CPU, a collective stays there.
  for (auto& n : *def.mutable_node())
    if (n.name() == "mean") n.set_device(kCpu);
  Graph g2;
  REQUIRE(Place(def, d, PlacerOptions(), &g2).ok());
  CHECK(DeviceOf(g2, "mean") == kCpu);
#endif
}

TEST_CASE("preparation: with GraphOptions::capture_gpu_steps off, the nodes placed on a GPU carry _no_capture") {
  Devices d;
  for (const bool capture : {true, false}) {
    INFO("capture_gpu_steps " << capture);
    Graph g;
    REQUIRE(ImportGraphDef(Branches(), &g).ok());
    Status s = PrepareToPlace(&g, d.manager, capture);
    INFO(s.ToString());
    REQUIRE(s.ok());
    int on_gpu = 0;
    for (const Node* n : g.nodes()) {
      const bool gpu = n->assigned_device() == kGpu;
      on_gpu += gpu;
      CHECK(HasNodeAttr(n->def(), "_no_capture") == (gpu && !capture));
    }
    CHECK(on_gpu > 0);
  }
  // GPU -> CPU -> GPU within a step: that GPU's partition would wait for itself
  // in a replay, so it is marked, saying why; a GPU whose tensors only leave is not.
  proto::GraphDef def;
  AddConst(&def, "c");
  AddOp(&def, "a", "PlacementTestOp", "c", kGpu);
  AddOp(&def, "b", "PlacementTestCpuOnly", "a", kCpu);
  AddOp(&def, "back", "PlacementTestOp", "b", kGpu);
  for (const bool round_trip : {true, false}) {
    INFO("round trip " << round_trip);
    Graph g;
    REQUIRE(ImportGraphDef(def, &g).ok());
    if (!round_trip) g.RemoveNode(g.FindNode("back"));
    REQUIRE(PrepareToPlace(&g, d.manager).ok());
    const Node* a = g.FindNode("a");
    REQUIRE(a != nullptr);
    CHECK(HasNodeAttr(a->def(), "_no_capture") == round_trip);
    if (round_trip)
      CHECK_THAT(a->def().attr().at("_no_capture").s(), Catch::Contains("come back to it") && Catch::Contains("back"));
  }
}

TEST_CASE("preparation: two GPUs each waiting for the other's tensors within a step are both marked _no_capture") {
  Device cpu{kCpu, DEVICE_CPU, nullptr, nullptr};
  Device gpu0{kGpu, DEVICE_GPU, nullptr, nullptr};
  const std::string kGpu1 = "/job:localhost/replica:0/task:0/device:GPU:1";
  Device gpu1{kGpu1, DEVICE_GPU, nullptr, nullptr};
  DeviceManager manager{{&cpu, &gpu0, &gpu1}};
  // GPU:0 a -> GPU:1 b, and GPU:1 e -> GPU:0 f: no node path comes back, but a
  // replay of either waits for the other's _Send, which waits for all its _Recvs.
  proto::GraphDef def;
  AddConst(&def, "c");
  AddConst(&def, "d");
  AddOp(&def, "a", "PlacementTestOp", "c", kGpu);
  AddOp(&def, "b", "PlacementTestOp", "a", kGpu1);
  AddOp(&def, "e", "PlacementTestOp", "d", kGpu1);
  AddOp(&def, "f", "PlacementTestOp", "e", kGpu);
  Graph g;
  REQUIRE(ImportGraphDef(def, &g).ok());
  REQUIRE(PrepareToPlace(&g, manager).ok());
  for (const char* n : {"a", "b", "e", "f"}) {
    INFO(n);
    CHECK(HasNodeAttr(g.FindNode(n)->def(), "_no_capture"));
  }
}
