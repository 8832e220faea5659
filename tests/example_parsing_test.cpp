// ParseExample, ParseExampleV2 and ParseSingleExample
// (ops/parsing/example_parsing_ops.cpp): tf.train.Example records, built here
// with the protobuf message, parsed into dense (fixed and variable length,
// defaults), sparse and ragged tensors; the errors name example and key.
#include <catch2/catch.hpp>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/example.pb.h"
#include "actorflow/ops/attrs.hpp"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::Values;

namespace {

std::string MakeExample(float price, std::vector<int64_t> tags, const std::string& title, bool with_price = true) {
  proto::Example e;
  auto& f = *e.mutable_features()->mutable_feature();
  if (with_price) f["price"].mutable_float_list()->add_value(price);
  for (int64_t t : tags) f["tags"].mutable_int64_list()->add_value(t);
  f["title"].mutable_bytes_list()->add_value(title);
  return e.SerializeAsString();
}

Tensor StringVector(const std::vector<std::string>& v) { return test::Strings(v); }

proto::AttrValue Types(std::vector<DataType> types) {
  proto::AttrValue a;
  a.mutable_list();  // set, even when empty
  for (DataType t : types) a.mutable_list()->add_type(static_cast<proto::DataType>(t));
  return a;
}
proto::AttrValue Shapes(std::vector<std::vector<int64_t>> shapes) {
  proto::AttrValue a;
  for (const auto& s : shapes) {
    auto* p = a.mutable_list()->add_shape();
    for (int64_t d : s) p->add_dim()->set_size(d);
  }
  return a;
}

Status RunOp(const Scope& root, const Operation& op, int n, std::vector<Tensor>* out) {
  if (!root.ok()) return root.status();
  std::vector<std::string> fetches;
  for (int i = 0; i < n; ++i) fetches.push_back(op.node()->name() + ":" + std::to_string(i));
  Session s;
  AF_RETURN_IF_ERROR(s.Create(test::ToDef(root)));
  RunOptions bounded;
  bounded.timeout_in_ms = 60000;
  return s.Run(bounded, {}, fetches, {}, out);
}

// ParseExample over `records`: sparse "tags" (int64), dense "price" (float,
// default -1) and dense "title" (string, required).
Status ParseV1(const std::vector<std::string>& records, std::vector<Tensor>* out) {
  Scope root = Scope::NewRootScope();
  auto op = root.AddOp("ParseExample",
                       {{ops::Const(root, StringVector(records))},
                        {ops::Const(root, StringVector({}))},
                        {ops::Const(root, StringVector({"tags"}).Reshaped(TensorShape{}))},
                        {ops::Const(root, StringVector({"price"}).Reshaped(TensorShape{})),
                         ops::Const(root, StringVector({"title"}).Reshaped(TensorShape{}))},
                        {ops::Const(root, Tensor::Scalar<float>(-1.f)), ops::Const(root, Tensor(DT_STRING, TensorShape{0}))}},
                       {{"Nsparse", AttrInt(1)},
                        {"Ndense", AttrInt(2)},
                        {"sparse_types", Types({DT_INT64})},
                        {"Tdense", Types({DT_FLOAT, DT_STRING})},
                        {"dense_shapes", Shapes({{}, {}})}});
  return RunOp(root, op, 5, out);
}

}  // namespace

TEST_CASE("ParseExample: dense with defaults, sparse; errors name the example and key") {
  std::vector<Tensor> out;
  Status s = ParseV1({MakeExample(2.5f, {7, 8}, "a"), MakeExample(0, {}, "b", false), MakeExample(1.f, {9}, "c")}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  // sparse tags: indices, values, shape
  CHECK(Values<int64_t>(out[0]) == std::vector<int64_t>{0, 0, 0, 1, 2, 0});
  CHECK(Values<int64_t>(out[1]) == std::vector<int64_t>{7, 8, 9});
  CHECK(Values<int64_t>(out[2]) == std::vector<int64_t>{3, 2});
  CHECK(Values<float>(out[3]) == std::vector<float>{2.5f, -1.f, 1.f});  // the default where price is missing
  CHECK(out[4].data<std::string>()[2] == "c");

  // A required feature missing; a feature of another type; bytes that are not an Example.
  proto::Example no_title;
  (*no_title.mutable_features()->mutable_feature())["price"].mutable_float_list()->add_value(1);
  s = ParseV1({no_title.SerializeAsString()}, &out);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("title") && Contains("is required"));
  proto::Example wrong;
  (*wrong.mutable_features()->mutable_feature())["price"].mutable_int64_list()->add_value(1);
  (*wrong.mutable_features()->mutable_feature())["title"].mutable_bytes_list()->add_value("x");
  s = ParseV1({wrong.SerializeAsString()}, &out);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("Key: price") && Contains("Expected type: float"));
  s = ParseV1({"\xff\xff\xff garbage"}, &out);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("Could not parse example input"));
}

TEST_CASE("ParseExampleV2: fixed and variable-length dense, ragged; ParseSingleExample") {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> records = {MakeExample(1.f, {1, 2, 3}, "x"), MakeExample(2.f, {4}, "y")};
  auto op = root.AddOp("ParseExampleV2",
                       {{ops::Const(root, StringVector(records))},
                        {ops::Const(root, StringVector({}))},
                        {ops::Const(root, StringVector({}))},
                        {ops::Const(root, StringVector({"price", "tags"}))},
                        {ops::Const(root, StringVector({"tags"}))},
                        {ops::Const(root, Tensor(DT_FLOAT, TensorShape{0})), ops::Const(root, Tensor::Scalar<int64_t>(-1))}},
                       {{"num_sparse", AttrInt(0)},
                        {"sparse_types", Types({})},
                        {"Tdense", Types({DT_FLOAT, DT_INT64})},
                        {"dense_shapes", Shapes({{1}, {-1}})},
                        {"ragged_value_types", Types({DT_INT64})},
                        {"ragged_split_types", Types({DT_INT32})}});
  std::vector<Tensor> out;
  Status s = RunOp(root, op, 4, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(out[0].shape() == TensorShape({2, 1}));
  CHECK(Values<float>(out[0]) == std::vector<float>{1, 2});
  CHECK(out[1].shape() == TensorShape({2, 3}));  // padded to the longest with the default
  CHECK(Values<int64_t>(out[1]) == std::vector<int64_t>{1, 2, 3, 4, -1, -1});
  CHECK(Values<int64_t>(out[2]) == std::vector<int64_t>{1, 2, 3, 4});  // ragged values
  CHECK(Values<int32_t>(out[3]) == std::vector<int32_t>{0, 3, 4});     // row splits

  Scope single = Scope::NewRootScope();
  proto::AttrValue keys;
  keys.mutable_list()->add_s("price");
  proto::AttrValue sparse_keys;
  sparse_keys.mutable_list()->add_s("tags");
  auto one = single.AddOp("ParseSingleExample",
                          {{ops::Const(single, StringVector({records[0]}).Reshaped(TensorShape{}))},
                           {ops::Const(single, Tensor(DT_FLOAT, TensorShape{0}))}},
                          {{"num_sparse", AttrInt(1)},
                           {"sparse_keys", sparse_keys},
                           {"dense_keys", keys},
                           {"sparse_types", Types({DT_INT64})},
                           {"Tdense", Types({DT_FLOAT})},
                           {"dense_shapes", Shapes({{}})}});
  s = RunOp(single, one, 4, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Values<int64_t>(out[0]) == std::vector<int64_t>{0, 1, 2});  // indices [3, 1]
  CHECK(Values<int64_t>(out[1]) == std::vector<int64_t>{1, 2, 3});
  CHECK(Values<int64_t>(out[2]) == std::vector<int64_t>{3});
  CHECK(out[3].dims() == 0);
  CHECK(out[3].scalar<float>() == 1.f);
}
