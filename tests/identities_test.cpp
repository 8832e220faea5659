// Cluster-ready identities: device names from the runtime's task, a random
// incarnation per process in every rendezvous key, random step ids, and
// ResourceHandles that record their device.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/reader_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/ids.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/io/reader_resource.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "test_util.hpp"

using namespace actorflow;

TEST_CASE("identities: devices are named by the runtime's job, replica and task") {
  RuntimeOptions o;
  o.num_threads = 2;
  o.num_cpu_devices = 2;
  o.num_gpu_devices = 0;
  o.job = "worker";
  o.replica = 0;
  o.task = 3;
  Runtime rt(o);
  CHECK(rt.task_name() == "/job:worker/replica:0/task:3");
  REQUIRE(rt.devices().size() == 2);
  CHECK(rt.devices()[0]->name() == "/job:worker/replica:0/task:3/device:CPU:0");
  CHECK(rt.devices()[1]->name() == "/job:worker/replica:0/task:3/device:CPU:1");
  // A graph asking for a device of that task runs there.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Neg(root.WithOpName("y").WithDevice("/job:worker/task:3/device:CPU:1"), x);
  SessionOptions so;
  so.runtime = &rt;
  Session session(so);
  REQUIRE(session.Create(test::ToDef(root)).ok());
  std::vector<Tensor> out;
  const Status s = session.Run({{"x", Tensor::Scalar<float>(2)}}, {"y"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(out[0].scalar<float>() == -2.f);
  CHECK(session.LastPlacement().at("y") == "/job:worker/replica:0/task:3/device:CPU:1");
}

TEST_CASE("identities: the default task is localhost/0/0; each runtime draws its own incarnation") {
  RuntimeOptions o;
  o.num_threads = 1;
  o.num_gpu_devices = 0;
  Runtime a(o), b(o);
  CHECK(a.task_name() == "/job:localhost/replica:0/task:0");
  CHECK(a.devices()[0]->name() == "/job:localhost/replica:0/task:0/device:CPU:0");
  CHECK(a.incarnation() != 0);
  CHECK(a.incarnation() != b.incarnation());
}

TEST_CASE("identities: step ids are positive 63-bit numbers that do not repeat") {
  std::set<int64_t> seen;
  bool high_bits = false, positive = true;
  for (int i = 0; i < 10000; ++i) {
    const int64_t id = NewStepId();
    positive = positive && id > 0;
    seen.insert(id);
    high_bits = high_bits || id > (int64_t{1} << 40);
  }
  CHECK(positive);
  CHECK(seen.size() == 10000);
  CHECK(high_bits);  // drawn from the whole range, not counted up
  CHECK(NewIncarnation() != NewIncarnation());
}

TEST_CASE("identities: a ResourceHandle records its device; its identity is container and name") {
  ResourceHandle h;
  h.device = "/job:ps/replica:0/task:1/device:CPU:0";
  h.container = "c";
  h.name = "w";
  h.dtype = DT_FLOAT;
  h.shape = PartialTensorShape(std::vector<int64_t>{2, 3});
  ResourceHandle back;
  REQUIRE(ResourceHandle::Decode(h.Encode(), &back).ok());
  CHECK(back.device == h.device);
  CHECK(back.container == "c");
  CHECK(back.name == "w");
  ResourceHandle elsewhere = h;
  elsewhere.device = "/job:worker/replica:0/task:0/device:CPU:0";
  CHECK(ResourceIdentity(elsewhere.Encode()) == ResourceIdentity(h.Encode()));

  // A VariableV2 kernel on a device of task ps/1 outputs a handle naming that device.
  RuntimeOptions o;
  o.num_threads = 1;
  o.num_gpu_devices = 0;
  o.job = "ps";
  o.task = 1;
  Runtime rt(o);
  Scope root = Scope::NewRootScope();
  ops::Variable(root.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{2}), DT_FLOAT);
  const proto::GraphDef def = test::ToDef(root);
  REQUIRE(def.node_size() == 1);
  std::unique_ptr<OpKernel> kernel;
  REQUIRE(CreateOpKernel(rt.devices()[0], def.node(0), &kernel).ok());
  Tensor ref;
  OpKernelContext::Params params;
  params.device = rt.devices()[0];
  params.op_kernel = kernel.get();
  params.outputs = &ref;
  params.num_outputs = 1;
  OpKernelContext ctx(&params);
  kernel->Compute(&ctx);
  REQUIRE(ctx.status().ok());
  const std::string* encoded = nullptr;
  REQUIRE(RefTensorHandle(ref, &encoded).ok());
  ResourceHandle v;
  REQUIRE(ResourceHandle::Decode(*encoded, &v).ok());
  CHECK(v.device == "/job:ps/replica:0/task:1/device:CPU:0");
  CHECK(v.name == "v");
}

TEST_CASE("identities: one shared reader, whichever device's kernel declares it") {
  RuntimeOptions o;
  o.num_threads = 1;
  o.num_cpu_devices = 2;
  o.num_gpu_devices = 0;
  Runtime rt(o);
  Scope root = Scope::NewRootScope();
  ops::TextLineReaderOptions opts;
  opts.shared_name = "identities_test_shared_reader";
  ops::TextLineReader(root.WithOpName("r"), opts);
  const proto::GraphDef def = test::ToDef(root);
  REQUIRE(def.node_size() == 1);
  // The same declaration on CPU:0 and CPU:1: handles that name different devices.
  std::unique_ptr<OpKernel> k0, k1;
  REQUIRE(CreateOpKernel(rt.devices()[0], def.node(0), &k0).ok());
  REQUIRE(CreateOpKernel(rt.devices()[1], def.node(0), &k1).ok());
  Tensor h0, h1;
  for (auto [kernel, out, device] : {std::make_tuple(k0.get(), &h0, rt.devices()[0]),
                                     std::make_tuple(k1.get(), &h1, rt.devices()[1])}) {
    OpKernelContext::Params params;
    params.device = device;
    params.op_kernel = kernel;
    params.outputs = out;
    params.num_outputs = 1;
    OpKernelContext ctx(&params);
    kernel->Compute(&ctx);
    REQUIRE(ctx.status().ok());
  }
  REQUIRE(h0.scalar<std::string>() != h1.scalar<std::string>());
  std::shared_ptr<ReaderResource> r0, r1;
  REQUIRE(ReaderRegistry::Global()->Lookup(h0.scalar<std::string>(), &r0).ok());
  REQUIRE(ReaderRegistry::Global()->Lookup(h1.scalar<std::string>(), &r1).ok());
  CHECK(r0 == r1);
}
