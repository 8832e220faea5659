// What GPU variables rest on, checked on every machine (the GPU suites run
// them for real where a GPU exists):
//  - the element formulas the GPU's Apply kernels run (ops/state/apply_formulas.hpp)
//    give the container actor's vectorized updates (ops/state/variable_updates.cpp);
//  - the container's side of a device variable, with an allocator the host
//    "cannot read" standing in for device memory: an on-device Assign takes
//    the buffer it is handed, on-device updates are checked and answered
//    without being computed, host updates of a device value are refused;
//  - host kernels: a device type's rule gives the CPU's kernel to shape ops
//    of any dtype and to index arithmetic on integer dtypes only.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "actorflow/core/allocator.hpp"
#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/state/apply_formulas.hpp"
#include "actorflow/ops/state/variable_updates.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

// Memory the host pretends it cannot read, as a GPU's.
class FakeDeviceAllocator : public Allocator {
 public:
  std::string Name() const override { return "fake_device"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void DeallocateRaw(void* ptr, size_t bytes) override { std::free(ptr); }
  bool HostAccessible() const override { return false; }
};
FakeDeviceAllocator g_device;

Tensor RandomTensor(const TensorShape& shape, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

Tensor OnDevice(const Tensor& host) {
  Tensor t;
  REQUIRE(Tensor::Create(&g_device, host.dtype(), host.shape(), &t).ok());
  std::memcpy(t.raw_data(), host.raw_data(), host.TotalBytes());  // the fake device is host memory after all
  return t;
}

VarSlot Slot(const std::string& name, const Tensor& value) {
  VarSlot v;
  v.name = name;
  v.dtype = value.dtype();
  v.shape = PartialTensorShape(value.shape().dim_sizes());
  v.value = value;
  return v;
}

}  // namespace

TEST_CASE("the GPU's element formulas give the container's updates, for every optimizer") {
  const TensorShape shape{257};
  for (VarUpdateKind kind : {VarUpdateKind::kGradientDescent, VarUpdateKind::kMomentum, VarUpdateKind::kAdam,
                             VarUpdateKind::kAdagrad, VarUpdateKind::kRMSProp}) {
    for (bool nesterov : {false, true}) {
      if (nesterov && kind != VarUpdateKind::kMomentum && kind != VarUpdateKind::kAdam) continue;
      INFO(VarUpdateName(kind) << (nesterov ? " (Nesterov)" : ""));
      const Tensor var = RandomTensor(shape, 1, -1.f, 1.f), s1 = RandomTensor(shape, 2, 0.1f, 1.f),
                   s2 = RandomTensor(shape, 3, 0.1f, 1.f), grad = RandomTensor(shape, 4, -1.f, 1.f);
      VarUpdateRequest req;
      req.kind = static_cast<int32_t>(kind);
      req.use_nesterov = nesterov;
      auto scalar = [](float v) { return Tensor::Scalar<float>(v); };
      int num_vars = 1;
      switch (kind) {
        case VarUpdateKind::kGradientDescent: req.args = {scalar(0.1f), grad}; break;
        case VarUpdateKind::kMomentum: req.args = {scalar(0.05f), grad, scalar(0.9f)}, num_vars = 2; break;
        case VarUpdateKind::kAdam:
          req.args = {scalar(0.81f), scalar(0.998f), scalar(0.01f), scalar(0.9f), scalar(0.999f), scalar(1e-7f), grad};
          num_vars = 3;
          break;
        case VarUpdateKind::kAdagrad: req.args = {scalar(0.1f), grad}, num_vars = 2; break;
        default:
          req.args = {scalar(0.01f), scalar(0.9f), scalar(0.5f), scalar(1e-6f), grad};
          num_vars = 3;
      }
      std::vector<VarSlot> slots = {Slot("var", var.DeepCopy()), Slot("s1", s1.DeepCopy()), Slot("s2", s2.DeepCopy())};
      slots.resize(num_vars);
      VarSlots ptrs;
      for (auto& v : slots) ptrs.push_back(&v);
      REQUIRE(ApplyVarUpdate(req, ptrs).ok());
      int bad = 0;
      for (int64_t i = 0; i < shape.num_elements(); ++i) {
        float v = var.data<float>()[i], a = s1.data<float>()[i], b = s2.data<float>()[i];
        const float g = grad.data<float>()[i];
        switch (kind) {
          case VarUpdateKind::kGradientDescent: apply::GradientDescent(v, 0.1f, g); break;
          case VarUpdateKind::kMomentum: apply::Momentum(v, a, 0.05f, g, 0.9f, nesterov); break;
          case VarUpdateKind::kAdam:
            apply::Adam(v, a, b, apply::AdamAlpha(0.01f, 0.81f, 0.998f), 0.9f, 0.999f, 1e-7f, g, nesterov);
            break;
          case VarUpdateKind::kAdagrad: apply::Adagrad(v, a, 0.1f, g); break;
          default: apply::RMSProp(v, a, b, 0.01f, 0.9f, 0.5f, 1e-6f, g);
        }
        const float want[3] = {v, a, b};
        for (int k = 0; k < num_vars; ++k) {
          const float got = slots[k].value.data<float>()[i];
          if (std::fabs(got - want[k]) > 1e-5f * (1.f + std::fabs(want[k])) && ++bad <= 5)
            UNSCOPED_INFO("element " << i << " of " << slots[k].name << ": container " << got << ", formula " << want[k]);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("the container takes a device Assign's buffer, checks device updates without computing them, and refuses host updates of device values") {
  const Tensor host = RandomTensor({4, 3}, 1, -1.f, 1.f);
  VarSlot v = Slot("w", Tensor());
  v.dtype = DT_FLOAT;
  v.shape = PartialTensorShape(std::vector<int64_t>{4, 3});
  VarSlots vars = {&v};

  VarUpdateRequest assign;
  assign.kind = static_cast<int32_t>(VarUpdateKind::kAssign);
  assign.on_device = true;
  assign.args = {OnDevice(host)};
  REQUIRE(ApplyVarUpdate(assign, vars).ok());
  CHECK(v.value.raw_data() == assign.args[0].raw_data());  // taken as it is: no host copy of device memory
  CHECK_FALSE(v.value.InHostMemory());

  VarUpdateRequest wrong_shape = assign;
  wrong_shape.args = {OnDevice(RandomTensor({3, 4}, 2, 0.f, 1.f))};
  CHECK(ApplyVarUpdate(wrong_shape, vars).code() == Code::kInvalidArgument);  // checked as on the host
  CHECK(v.value.raw_data() == assign.args[0].raw_data());

  VarUpdateRequest add;
  add.kind = static_cast<int32_t>(VarUpdateKind::kAssignAdd);
  add.on_device = true;
  add.args = {OnDevice(host)};
  {  // a reader (here the Assign's request) still holds the value: copy on write
    std::vector<Tensor> sources;
    const void* before = v.value.raw_data();
    REQUIRE(ApplyVarUpdate(add, vars, nullptr, &sources).ok());
    REQUIRE(sources.size() == 1);
    CHECK(sources[0].raw_data() == before);           // the kernel reads the old value
    CHECK(v.value.raw_data() != before);              // and writes a new buffer,
    CHECK_FALSE(v.value.InHostMemory());              // of the same device's memory
    CHECK(assign.args[0].raw_data() == before);       // which the reader keeps
  }
  {  // no one else holds it: in place, and the container computes nothing
    const float first = host.data<float>()[0];
    std::memcpy(v.value.raw_data(), host.raw_data(), host.TotalBytes());
    std::vector<Tensor> sources;
    const void* before = v.value.raw_data();
    REQUIRE(ApplyVarUpdate(add, vars, nullptr, &sources).ok());
    CHECK(v.value.raw_data() == before);
    CHECK(sources[0].raw_data() == before);
    sources.clear();
    CHECK(v.value.data<float>()[0] == first);  // the device's kernel adds, not the container
  }

  VarUpdateRequest host_add = add;
  host_add.on_device = false;
  host_add.args = {host};
  Status s = ApplyVarUpdate(host_add, vars);
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("w") && Catch::Contains("device memory"));

  VarUpdateRequest host_assign = host_add;
  host_assign.kind = static_cast<int32_t>(VarUpdateKind::kAssign);
  CHECK(ApplyVarUpdate(host_assign, vars).code() == Code::kFailedPrecondition);

  // A host variable is not the device's to update in place.
  VarSlot h = Slot("h", host.DeepCopy());
  VarSlots host_vars = {&h};
  CHECK(ApplyVarUpdate(add, host_vars).code() == Code::kFailedPrecondition);
  VarUpdateRequest sgd;
  sgd.kind = static_cast<int32_t>(VarUpdateKind::kGradientDescent);
  sgd.on_device = true;
  sgd.args = {OnDevice(Tensor::Scalar<float>(0.1f)), OnDevice(RandomTensor({5}, 3, 0.f, 1.f))};
  CHECK(ApplyVarUpdate(sgd, vars).code() == Code::kInvalidArgument);  // the gradient's shape is checked
}

namespace {
proto::NodeDef NodeOf(const std::string& op, DataType t) {
  proto::NodeDef n;
  n.set_name("n");
  n.set_op(op);
  (*n.mutable_attr())["T"] = AttrType(t);
  (*n.mutable_attr())["out_type"] = AttrType(DT_INT32);
  return n;
}
const detail::HostKernelRegistrar kTestShapeOnly("HOSTKERNELTEST", KernelRegistry::HostKernel::kShapeOnly, {"Shape"});
const detail::HostKernelRegistrar kTestNonFloat("HOSTKERNELTEST", KernelRegistry::HostKernel::kIntegral, {"Add"});
}  // namespace

TEST_CASE("host kernels: shape ops of any dtype, index arithmetic of integer dtypes only") {
  CHECK(HasKernel(NodeOf("Shape", DT_FLOAT), "HOSTKERNELTEST"));
  CHECK(HasKernel(NodeOf("Add", DT_INT32), "HOSTKERNELTEST"));
  CHECK(HasKernel(NodeOf("Add", DT_INT64), "HOSTKERNELTEST"));
  CHECK_FALSE(HasKernel(NodeOf("Add", DT_FLOAT), "HOSTKERNELTEST"));  // float math needs a kernel of its own
  CHECK_FALSE(HasKernel(NodeOf("Add", DT_DOUBLE), "HOSTKERNELTEST"));
  CHECK_FALSE(HasKernel(NodeOf("Sub", DT_INT32), "HOSTKERNELTEST"));  // no rule for it
}
