// The device actor's protocol across a real process boundary: two actor
// systems in one process get distinct node ids and talk over TCP (loopback),
// so every message is serialized exactly as between machines.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actorflow/actors/container_actor.hpp"
#include "actorflow/actors/device/device_actor.hpp"
#include "actorflow/actors/worker_session.hpp"
#include "actorflow/core/allocator.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/graph/subgraph.hpp"
#include "actorflow/net/protocol.hpp"
#include "test_util.hpp"
#include "wait_until.hpp"

using namespace actorflow;

namespace {
struct NetConfig : caf::actor_system_config {
  NetConfig() {
    RegisterMessageTypes(*this);
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{2});
  }
};

template <class Resp, class Req>
Resp Ask(caf::actor_system& sys, const caf::actor& dest, Req req) {
  caf::scoped_actor self{sys};
  Resp resp;
  bool got = false;
  self->request(dest, std::chrono::seconds(30), std::move(req))
      .receive([&](Resp& r) { resp = std::move(r), got = true; },
               [&](caf::error& e) { FAIL("remote request failed: " << sys.render(e)); });
  REQUIRE(got);
  return resp;
}
}  // namespace

TEST_CASE("a remote device actor registers and runs a graph; tensors and statuses cross intact") {
  NetConfig server_cfg, client_cfg;
  caf::actor_system server{server_cfg}, client{client_cfg};
  ComputePool pool(&server, 2);
  Device device("/job:worker/replica:0/task:0/device:CPU:0", DEVICE_CPU, cpu_allocator(), &pool);
  caf::actor dev = SpawnDeviceActor(server, &device);
  auto port = server.middleman().publish(dev, 0, "127.0.0.1");
  REQUIRE(port);
  auto remote = client.middleman().remote_actor("127.0.0.1", *port);
  REQUIRE(remote);
  REQUIRE(remote->node() != client.node());

  // x (fed) * [[1,2],[3,4]] as a partition with _Arg/_Retval, like a Session builds.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::MatMul(root.WithOpName("y"), x, {{1.f, 2.f}, {3.f, 4.f}});
  ops::Identity(root.WithOpName("s"), ops::Const(root, {std::string("a"), std::string("bc")}));
  Graph g;
  REQUIRE(g.CopyFrom(*root.graph()).ok());
  FeedFetchInfo info;
  REQUIRE(RewriteGraphForExecution(&g, {"x"}, {"y", "s"}, {}, &info).ok());
  proto::GraphDef def;
  g.ToGraphDef(&def);
  RegisterGraphRequest reg;
  def.SerializeToString(&reg.graph_def);
  auto reg_resp = Ask<RegisterGraphResponse>(client, *remote, reg);
  REQUIRE(reg_resp.status.ok());

  RunStepRequest run;
  run.graph_handle = reg_resp.graph_handle;
  run.step_id = 1;
  run.args = {test::MakeTensor<float>({1, 1}, {1, 2})};
  auto resp = Ask<RunStepResponse>(client, *remote, run);
  REQUIRE(resp.status.ok());
  REQUIRE(resp.retvals.size() == 2);
  REQUIRE(test::Values<float>(resp.retvals[0]) == std::vector<float>{4, 6});
  REQUIRE(test::Values<std::string>(resp.retvals[1]) == std::vector<std::string>{"a", "bc"});

  // Errors travel as Statuses with their code and message.
  run.step_id = 2;
  run.args = {test::MakeTensor<float>({1, 1, 1}, {1, 3})};
  resp = Ask<RunStepResponse>(client, *remote, run);
  REQUIRE(resp.status.code() == Code::kInvalidArgument);
  REQUIRE_THAT(resp.status.message(), Catch::Contains("node 'y'"));
  RegisterGraphRequest bad;
  bad.graph_def = "not a graph";
  REQUIRE(Ask<RegisterGraphResponse>(client, *remote, bad).status.code() == Code::kInvalidArgument);

  server.middleman().unpublish(dev, *port);
  // The actor reads the stack objects above until it has quit: wait for it.
  caf::scoped_actor self{server};
  caf::anon_send_exit(dev, caf::exit_reason::user_shutdown);
  self->wait_for(dev);
}

TEST_CASE("a worker names its partitions' device actors to a master of its own node only, whose steps go there") {
  NetConfig server_cfg, client_cfg;
  caf::actor_system server{server_cfg}, client{client_cfg};
  ComputePool pool(&server, 2);
  const std::string name = "/job:worker/replica:0/task:0/device:CPU:0";
  Device device(name, DEVICE_CPU, cpu_allocator(), &pool);
  caf::actor dev = SpawnDeviceActor(server, &device);
  caf::actor worker = SpawnWorker(server, WorkerConfig{"/job:worker/replica:0/task:0", {{name, "CPU", dev}}});
  auto port = server.middleman().publish(worker, 0, "127.0.0.1");
  REQUIRE(port);
  auto remote = client.middleman().remote_actor("127.0.0.1", *port);
  REQUIRE(remote);

  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Neg(root.WithOpName("y"), x);
  Graph g;
  REQUIRE(g.CopyFrom(*root.graph()).ok());
  FeedFetchInfo info;
  REQUIRE(RewriteGraphForExecution(&g, {"x"}, {"y"}, {}, &info).ok());
  proto::GraphDef def;
  g.ToGraphDef(&def);
  std::string bytes;
  def.SerializeToString(&bytes);

  // A master on another node: the worker's handles only (the device actors
  // stay behind their worker).
  CreateWorkerSessionRequest open_remote;
  open_remote.session_handle = "remote-master";
  REQUIRE(Ask<CreateWorkerSessionResponse>(client, *remote, open_remote).status.ok());
  auto far = Ask<RegisterPartitionsResponse>(client, *remote, RegisterPartitionsRequest{"remote-master", {name}, {bytes}});
  REQUIRE(far.status.ok());
  REQUIRE(far.graph_handles.size() == 1);
  CHECK(far.devices.empty());
  CHECK(far.device_handles.empty());

  // A master of this node: each partition's device actor and its handle,
  // which runs the step as the worker's handle does.
  CreateWorkerSessionRequest open_local;
  open_local.session_handle = "local-master";
  REQUIRE(Ask<CreateWorkerSessionResponse>(server, worker, open_local).status.ok());
  auto near = Ask<RegisterPartitionsResponse>(server, worker, RegisterPartitionsRequest{"local-master", {name}, {bytes}});
  REQUIRE(near.status.ok());
  REQUIRE(near.devices.size() == 1);
  REQUIRE(near.device_handles.size() == 1);
  CHECK(near.devices[0] == dev);
  RunStepRequest run;
  run.step_id = 1;
  run.args = {test::MakeTensor<float>({1.5f, -2.f}, {2})};
  run.graph_handle = near.device_handles[0];
  auto direct = Ask<RunStepResponse>(server, near.devices[0], run);
  REQUIRE(direct.status.ok());
  CHECK(test::Values<float>(direct.retvals[0]) == std::vector<float>{-1.5f, 2.f});
  run.graph_handle = near.graph_handles[0];
  auto via_worker = Ask<RunStepResponse>(server, worker, run);
  REQUIRE(via_worker.status.ok());
  CHECK(test::Values<float>(via_worker.retvals[0]) == std::vector<float>{-1.5f, 2.f});

  // Closing the session drops its graphs from the device: a step sent there
  // directly is refused, as through the worker.
  caf::anon_send(worker, CloseSession{"local-master"});
  Status refused;
  REQUIRE(test::WaitUntil(
      [&] {
        run.graph_handle = near.device_handles[0];
        refused = Ask<RunStepResponse>(server, near.devices[0], run).status;
        return !refused.ok();
      },
      std::chrono::seconds(30)));
  CHECK(refused.code() == Code::kCancelled);

  server.middleman().unpublish(worker, *port);
  caf::scoped_actor self{server};
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(dev, caf::exit_reason::user_shutdown);
  self->wait_for(worker, dev);
}

TEST_CASE("a remote container actor: variables are read and updated by messages from another node") {
  NetConfig server_cfg, client_cfg;
  caf::actor_system server{server_cfg}, client{client_cfg};
  ComputePool pool(&server, 2);
  caf::actor container = SpawnContainerActor(server, &pool);
  auto port = server.middleman().publish(container, 0, "127.0.0.1");
  REQUIRE(port);
  auto remote = client.middleman().remote_actor("127.0.0.1", *port);
  REQUIRE(remote);

  ResourceHandle h;
  h.container = "remote_test";
  h.name = "w";
  h.dtype = DT_FLOAT;
  h.shape = PartialTensorShape(std::vector<int64_t>{2});
  VarReadRequest read;
  read.handles = {h.Encode()};
  auto r = Ask<VarReadResponse>(client, *remote, read);
  REQUIRE(r.status.code() == Code::kFailedPrecondition);
  REQUIRE_THAT(r.status.message(), Catch::Contains("remote_test/w"));

  VarUpdateRequest assign;
  assign.kind = static_cast<int32_t>(VarUpdateKind::kAssign);
  assign.handles = {h.Encode()};
  assign.args = {test::MakeTensor<float>({1, 2}, {2})};
  REQUIRE(Ask<VarUpdateResponse>(client, *remote, assign).status.ok());
  VarUpdateRequest sgd;
  sgd.kind = static_cast<int32_t>(VarUpdateKind::kGradientDescent);
  sgd.handles = {h.Encode()};
  sgd.args = {Tensor::Scalar<float>(0.5f), test::MakeTensor<float>({2, 2}, {2})};
  REQUIRE(Ask<VarUpdateResponse>(client, *remote, sgd).status.ok());
  r = Ask<VarReadResponse>(client, *remote, read);
  REQUIRE(r.status.ok());
  REQUIRE(test::Values<float>(r.values[0]) == std::vector<float>{0, 1});

  auto reset = Ask<ResetContainersResponse>(client, *remote, ResetContainersRequest{{"remote_test"}});
  REQUIRE(reset.status.ok());
  REQUIRE(reset.num_dropped == 1);
  REQUIRE(Ask<VarReadResponse>(client, *remote, read).status.code() == Code::kFailedPrecondition);

  server.middleman().unpublish(container, *port);
  // The actor reads the stack objects above until it has quit: wait for it.
  caf::scoped_actor self{server};
  caf::anon_send_exit(container, caf::exit_reason::user_shutdown);
  self->wait_for(container);
}
