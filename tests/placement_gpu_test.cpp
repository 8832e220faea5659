// Placement next to a GPU: nodes that ask for no device stay on the CPU, a
// requested GPU gets its node and the constants feeding it, soft placement
// falls back to the CPU. The GPU here is a Device object only (placement needs
// no hardware), and the op placed has a CPU and a GPU kernel of its own.
#include <catch2/catch.hpp>

#include "devices/device.hpp"
#include "devices/device_manager.hpp"
#include "graph/graph.hpp"
#include "graph/graph_def_io.hpp"
#include "graph/placer.hpp"
#include "ops/attrs.hpp"
#include "ops/op_kernel.hpp"
#include "ops/op_registry.hpp"
#include "ops/shape_inference.hpp"
#include "test_util.hpp"

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

std::string DeviceOf(const Graph& g, const std::string& node) {
  const Node* n = g.FindNode(node);
  REQUIRE(n != nullptr);
  return n->assigned_device();
}

}  // namespace

TEST_CASE("placement: nodes that request no device stay on the CPU beside a GPU") {
  Devices d;
  for (PlacementStrategy strategy :
       {PlacementStrategy::kCostModel, PlacementStrategy::kRoundRobin, PlacementStrategy::kSingle}) {
    PlacerOptions options;
    options.strategy = strategy;
    Graph g;
    REQUIRE(Place(Branches(), d, options, &g).ok());
    for (const Node* n : g.nodes()) {
      INFO(n->name() << " with strategy " << static_cast<int>(strategy));
      CHECK(n->assigned_device() == kCpu);
    }
  }
}

TEST_CASE("placement: a node requesting the GPU gets it, with the constant feeding it") {
  Devices d;
  Graph g;
  REQUIRE(Place(Branches("/device:GPU:0"), d, PlacerOptions(), &g).ok());
  CHECK(DeviceOf(g, "a0") == kGpu);
  // A constant follows its consumer where it can run there (Const has a GPU kernel in CUDA builds).
  CHECK(DeviceOf(g, "c0") == (HasKernel(g.FindNode("c0")->def(), DEVICE_GPU) ? kGpu : kCpu));
  CHECK(DeviceOf(g, "b0") == kCpu);  // asks for nothing
  for (int i = 1; i < 8; ++i) CHECK(DeviceOf(g, "a" + std::to_string(i)) == kCpu);
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
  for (const proto::GraphDef& def : {Branches("/device:GPU:1"), cpu_only}) {
    Graph g;
    REQUIRE(Place(def, d, soft, &g).ok());
    for (const Node* n : g.nodes()) {
      INFO(n->name());
      CHECK(n->assigned_device() == kCpu);
    }
  }
}
