// Variables in the container actor: reads, updates, sharing, reset, copy on
// write, the optimizers' update formulas, and random ops' seeds.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "actors/session.hpp"
#include "graph/state_ops.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::ToDef;
using test::Values;

namespace {

// A session over the scope's graph; REQUIREs that it loads.
std::unique_ptr<Session> Open(const Scope& root) {
  auto s = std::make_unique<Session>();
  REQUIRE(s->Create(ToDef(root)).ok());
  return s;
}

std::vector<Tensor> Run(Session& s, const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets = {},
                        const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  std::vector<Tensor> out;
  Status st = s.Run(feeds, fetches, targets, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

}  // namespace

TEST_CASE("a variable keeps its value across steps; Assign, AssignAdd, AssignSub") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(TensorShape{2}), DT_FLOAT, "", "vars_test_v1");
  ops::Assign(root.WithOpName("init"), v, {1.f, 2.f});
  ops::AssignAdd(root.WithOpName("add"), v, {10.f, 20.f});
  ops::AssignSub(root.WithOpName("sub"), v, {1.f, 1.f});
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  auto out = Run(*session, {"init"});
  CHECK(Values<float>(out[0]) == std::vector<float>{1, 2});  // fetching a ref reads the value
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{1, 2});
  Run(*session, {}, {"add"});
  Run(*session, {}, {"add"});
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{21, 42});
  CHECK(Values<float>(Run(*session, {"sub"})[0]) == std::vector<float>{20, 41});
  // Another session of the process sees the same variable.
  Scope other = Scope::NewRootScope();
  auto same = ops::Variable(other.WithOpName("elsewhere"), PartialTensorShape(TensorShape{2}), DT_FLOAT, "", "vars_test_v1");
  ops::Identity(other.WithOpName("r"), same);
  auto session2 = Open(other);
  CHECK(Values<float>(Run(*session2, {"r"})[0]) == std::vector<float>{20, 41});
}

TEST_CASE("reading an uninitialized variable fails with FailedPrecondition naming it") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("never_set"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  ops::Identity(root.WithOpName("read"), v);
  ops::AssignAdd(root.WithOpName("add"), v, {1.f, 1.f});
  auto session = Open(root);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"read"}, {}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("uninitialized value never_set") && Catch::Contains("read"));
  s = session->Run({}, {}, {"add"}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);
}
