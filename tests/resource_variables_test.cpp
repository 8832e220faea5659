// Resource variables (ops/state/resource_variable_ops.cpp): handles, reads,
// assignments, ResourceGather, the ResourceApply* updates (against the ref
// variables' Apply* ops on the same values), sharing with VariableV2 in the
// container actor, the gradient through reads, and checkpoints of them.
#include <catch2/catch.hpp>

#include <cmath>

#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::Open;
using test::Values;

namespace {

std::vector<Tensor> Run(Session& s, const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {}) {
  std::vector<Tensor> out;
  RunOptions bounded;
  bounded.timeout_in_ms = 60000;
  Status st = s.Run(bounded, {}, fetches, targets, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

Status RunStatus(Session& s, const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {}) {
  std::vector<Tensor> out;
  RunOptions bounded;
  bounded.timeout_in_ms = 60000;
  return s.Run(bounded, {}, fetches, targets, &out);
}

}  // namespace

TEST_CASE("resource variables: assign, read, add, subtract, is-initialized; errors name the variable") {
  Scope root = Scope::NewRootScope();
  auto w = ops::VarHandleOp(root.WithOpName("w"), DT_FLOAT, PartialTensorShape(TensorShape{2}), "", "rv_test_w");
  ops::AssignVariableOp(root.WithOpName("init"), w, ops::Const(root, {1.f, 2.f}));
  ops::AssignAddVariableOp(root.WithOpName("add"), w, ops::Const(root, {10.f, 20.f}));
  ops::AssignSubVariableOp(root.WithOpName("sub"), w, ops::Const(root, {1.f, 1.f}));
  ops::ReadVariableOp(root.WithOpName("read"), w, DT_FLOAT);
  ops::ReadVariableOp(root.WithOpName("read_int"), w, DT_INT32);
  ops::VarIsInitializedOp(root.WithOpName("inited"), w);
  auto session = Open(root);
  CHECK(Run(*session, {"inited"})[0].scalar<bool>() == false);
  Status s = RunStatus(*session, {"read"});
  CHECK(errors::IsFailedPrecondition(s));
  CHECK_THAT(s.message(), Contains("rv_test_w"));
  Run(*session, {}, {"init"});
  CHECK(Run(*session, {"inited"})[0].scalar<bool>() == true);
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{1, 2});
  Run(*session, {}, {"add"});
  Run(*session, {}, {"sub"});
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{10, 21});
  s = RunStatus(*session, {"read_int"});
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("float") && Contains("int32"));
}

TEST_CASE("resource variables: a VarHandleOp and a VariableV2 of one name are one variable") {
  Scope root = Scope::NewRootScope();
  auto ref = ops::Variable(root.WithOpName("shared"), PartialTensorShape(TensorShape{3}), DT_FLOAT);
  ops::Assign(root.WithOpName("assign_ref"), ref, ops::Const(root, {1.f, 2.f, 3.f}));
  auto handle = ops::VarHandleOp(root.WithOpName("handle"), DT_FLOAT, PartialTensorShape(TensorShape{3}), "", "shared");
  ops::ReadVariableOp(root.WithOpName("read"), handle, DT_FLOAT);
  ops::AssignAddVariableOp(root.WithOpName("bump"), handle, ops::Const(root, {1.f, 1.f, 1.f}));
  ops::Identity(root.WithOpName("read_ref"), ref);
  auto session = Open(root);
  Run(*session, {}, {"assign_ref"});
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{1, 2, 3});
  Run(*session, {}, {"bump"});
  CHECK(Values<float>(Run(*session, {"read_ref"})[0]) == std::vector<float>{2, 3, 4});
}

TEST_CASE("resource variables: ResourceGather takes rows, refuses indices out of range") {
  Scope root = Scope::NewRootScope();
  auto e = ops::VarHandleOp(root.WithOpName("emb"), DT_FLOAT, PartialTensorShape(TensorShape{3, 2}), "", "rv_test_emb");
  ops::AssignVariableOp(root.WithOpName("init"), e, ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}));
  ops::ResourceGather(root.WithOpName("rows"), e, ops::Const(root, {{2, 0}, {1, 1}}), DT_FLOAT);
  ops::ResourceGather(root.WithOpName("bad"), e, ops::Const(root, {3}), DT_FLOAT);
  auto session = Open(root);
  Run(*session, {}, {"init"});
  Tensor rows = Run(*session, {"rows"})[0];
  CHECK(rows.shape() == TensorShape({2, 2, 2}));
  CHECK(Values<float>(rows) == std::vector<float>{5, 6, 1, 2, 3, 4, 3, 4});
  Status s = RunStatus(*session, {"bad"});
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("indices[0] = 3"));
}

TEST_CASE("resource variables: ResourceApply* give what Apply* give on ref variables") {
  Scope root = Scope::NewRootScope();
  auto c = [&](std::vector<float> v) { return ops::Const(root, test::MakeTensor<float>(v, TensorShape{2})); };
  auto f = [&](float v) { return ops::Const(root, v); };
  auto grad = c({0.5f, -1.f});
  // Resource: var, m, v for Adam; var2 for gradient descent.
  std::vector<Output> h, r;
  for (const char* n : {"var", "m", "v", "var2", "var3", "acc3"}) {
    h.push_back(ops::VarHandleOp(root.WithOpName(std::string("h_") + n), DT_FLOAT, PartialTensorShape(TensorShape{2})));
    r.push_back(ops::Variable(root.WithOpName(std::string("r_") + n), PartialTensorShape(TensorShape{2}), DT_FLOAT));
  }
  std::vector<Operation> inits;
  std::vector<Output> ref_inits;
  for (size_t i = 0; i < h.size(); ++i) {
    const std::vector<float> init = i == 0 || i >= 3 ? std::vector<float>{1.f, 2.f} : std::vector<float>{0.f, 0.f};
    inits.push_back(ops::AssignVariableOp(root.WithOpName("hinit" + std::to_string(i)), h[i], c(init)));
    ref_inits.push_back(ops::Assign(root.WithOpName("rinit" + std::to_string(i)), r[i], c(init)));
  }
  ops::ResourceApplyAdam(root.WithOpName("h_adam"), h[0], h[1], h[2], f(0.9f), f(0.999f), f(0.01f), f(0.9f), f(0.999f),
                         f(1e-7f), grad);
  ops::ApplyAdam(root.WithOpName("r_adam"), r[0], r[1], r[2], f(0.9f), f(0.999f), f(0.01f), f(0.9f), f(0.999f),
                 f(1e-7f), grad);
  ops::ResourceApplyGradientDescent(root.WithOpName("h_sgd"), h[3], f(0.1f), grad);
  ops::ApplyGradientDescent(root.WithOpName("r_sgd"), r[3], f(0.1f), grad);
  ops::ResourceApplyMomentum(root.WithOpName("h_mom"), h[4], h[5], f(0.1f), grad, f(0.9f), true);
  ops::ApplyMomentum(root.WithOpName("r_mom"), r[4], r[5], f(0.1f), grad, f(0.9f), true);
  std::vector<std::string> reads;
  for (size_t i = 0; i < h.size(); ++i) {
    ops::ReadVariableOp(root.WithOpName("hr" + std::to_string(i)), h[i], DT_FLOAT);
    ops::Identity(root.WithOpName("rr" + std::to_string(i)), r[i]);
  }
  auto session = Open(root);
  std::vector<std::string> init_names;
  for (size_t i = 0; i < h.size(); ++i) {
    init_names.push_back("hinit" + std::to_string(i));
    init_names.push_back("rinit" + std::to_string(i));
  }
  Run(*session, {}, init_names);
  for (int step = 0; step < 3; ++step) Run(*session, {}, {"h_adam", "r_adam", "h_sgd", "r_sgd", "h_mom", "r_mom"});
  for (size_t i = 0; i < h.size(); ++i) {
    INFO("variable " << i);
    const auto a = Values<float>(Run(*session, {"hr" + std::to_string(i)})[0]);
    const auto b = Values<float>(Run(*session, {"rr" + std::to_string(i)})[0]);
    CHECK(a == b);
  }
  // Gradient descent by hand: 1 - 3 * 0.1 * 0.5, 2 + 3 * 0.1.
  const auto sgd = Values<float>(Run(*session, {"hr3"})[0]);
  CHECK(sgd[0] == Approx(0.85f));
  CHECK(sgd[1] == Approx(2.3f));
}

TEST_CASE("resource variables: the gradient of a handle is the gradient of its reads and gathers") {
  Scope root = Scope::NewRootScope();
  auto w = ops::VarHandleOp(root.WithOpName("w"), DT_DOUBLE, PartialTensorShape(TensorShape{3, 2}), "", "rv_test_grad");
  auto init = ops::AssignVariableOp(root.WithOpName("init"),
                                    w, ops::Const(root, {{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));
  // loss = sum(w * w) + sum(gather(w, [2, 2, 0]) * 10): dloss/dw = 2w + 10 * (rows 2 twice, row 0 once).
  auto value = ops::ReadVariableOp(root, w, DT_DOUBLE);
  auto rows = ops::ResourceGather(root, w, ops::Const(root, {2, 2, 0}), DT_DOUBLE);
  auto loss = ops::Add(root, ops::Sum(root, ops::Mul(root, value, value), {0, 1}),
                       ops::Sum(root, ops::Mul(root, rows, 10.0), {0, 1}));
  std::vector<Output> grads;
  Status s = AddSymbolicGradients(root, {loss}, {w}, &grads);
  INFO(s.ToString());
  REQUIRE(s.ok());
  ops::Identity(root.WithOpName("dw"), grads[0]);
  // One step of gradient descent on the handle.
  ops::ResourceApplyGradientDescent(root.WithOpName("step"), w, ops::Const(root, 0.1), grads[0]);
  ops::ReadVariableOp(root.WithOpName("after"), w, DT_DOUBLE);
  auto session = Open(root);
  Run(*session, {}, {"init"});
  const std::vector<double> want = {2 + 10, 4 + 10, 6, 8, 10 + 20, 12 + 20};
  CHECK(Values<double>(Run(*session, {"dw"})[0]) == want);
  Run(*session, {}, {"step"});
  const auto after = Values<double>(Run(*session, {"after"})[0]);
  const std::vector<double> before = {1, 2, 3, 4, 5, 6};
  for (size_t i = 0; i < 6; ++i) CHECK(after[i] == Approx(before[i] - 0.1 * want[i]));
}

TEST_CASE("resource variables: saved and restored through SaveV2 and RestoreV2, as TensorFlow 2 does") {
  test::TempDir dir("af_rv_test");
  const std::string prefix = dir / "ckpt-1";
  Scope root = Scope::NewRootScope();
  auto w = ops::VarHandleOp(root.WithOpName("w"), DT_FLOAT, PartialTensorShape(TensorShape{2}), "", "rv_test_ckpt");
  ops::AssignVariableOp(root.WithOpName("init"), w, ops::Const(root, {3.f, 4.f}));
  ops::SaveV2(root.WithOpName("save"), prefix, {"w/.ATTRIBUTES/VARIABLE_VALUE"}, {""},
              {ops::ReadVariableOp(root, w, DT_FLOAT)});
  auto restored = ops::RestoreV2(root, prefix, {"w/.ATTRIBUTES/VARIABLE_VALUE"}, {""}, {DT_FLOAT});
  ops::AssignVariableOp(root.WithOpName("restore"), w, restored[0]);
  ops::AssignVariableOp(root.WithOpName("clobber"), w, ops::Const(root, {0.f, 0.f}));
  ops::ReadVariableOp(root.WithOpName("read"), w, DT_FLOAT);
  auto session = Open(root);
  Run(*session, {}, {"init"});
  Run(*session, {}, {"save"});
  Run(*session, {}, {"clobber"});
  Run(*session, {}, {"restore"});
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{3, 4});
}
