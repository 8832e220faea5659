// GatherV2, Gather, GatherNd, ScatterNd, UnsortedSegmentSum, DynamicStitch,
// ShapeN, IdentityN, OneHot, All, Any, Where, Unique, TopKV2, InTopKV2,
// L2Loss, StringJoin and AsString against hand-computed values, their static shapes, and the errors
// of indices out of range. Their gradients are checked in gradients_test.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Run1;
using test::RunStatus;
using test::ShapeOf;

TEST_CASE("GatherV2 and Gather take slices along an axis, indices of any shape") {
  Scope root = Scope::NewRootScope();
  auto p = ops::Const(root, {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});  // [2, 3]
  CHECK(Run1<float>(root, ops::Gather(root, p, ops::Const(root, {1, 0, 1}))) ==
        std::vector<float>{4, 5, 6, 1, 2, 3, 4, 5, 6});
  auto cols = ops::GatherV2(root, p, ops::Const(root, {{2, 0}}), 1);  // indices [1, 2] along axis 1
  CHECK(ShapeOf(root, cols) == std::vector<int64_t>{2, 1, 2});
  CHECK(Run1<float>(root, cols) == std::vector<float>{3, 1, 6, 4});
  auto last = ops::GatherV2(root, p, ops::Const(root, int64_t{2}), int64_t{-1});  // a scalar index drops the axis
  CHECK(ShapeOf(root, last) == std::vector<int64_t>{2});
  CHECK(Run1<float>(root, last) == std::vector<float>{3, 6});
  const PartialTensorShape inferred = root.InferredShape(cols);
  CHECK(inferred.dims() == 3);
  CHECK(inferred.dim_size(2) == 2);
  auto words = ops::Const(root, {std::string("a"), std::string("b")});
  CHECK(Run1<std::string>(root, ops::Gather(root, words, ops::Const(root, {1, 1, 0}))) ==
        std::vector<std::string>{"b", "b", "a"});

  const Status s = RunStatus(root, {ops::Gather(root.WithOpName("bad_gather"), p, ops::Const(root, {0, 2}))}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("indices[1] = 2 is not in [0, 2)"));
  CHECK(RunStatus(root, {ops::GatherV2(root, p, ops::Const(root, {0}), 2)}, {}).code() == Code::kInvalidArgument);
}

TEST_CASE("GatherNd takes elements or slices by index rows; ScatterNd adds them back into zeros") {
  Scope root = Scope::NewRootScope();
  auto p = ops::Const(root, {{1, 2}, {3, 4}, {5, 6}});  // [3, 2]
  CHECK(Run1<int32_t>(root, ops::GatherNd(root, p, ops::Const(root, {{2, 1}, {0, 0}}))) == std::vector<int32_t>{6, 1});
  auto rows = ops::GatherNd(root, p, ops::Const(root, {{{1}}, {{0}}}));  // indices [2, 1, 1]: rows
  CHECK(ShapeOf(root, rows) == std::vector<int64_t>{2, 1, 2});
  CHECK(Run1<int32_t>(root, rows) == std::vector<int32_t>{3, 4, 1, 2});
  Status s = RunStatus(root, {ops::GatherNd(root, p, ops::Const(root, {{3, 0}}))}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("indices[0] = [3, 0] does not index into param shape [3,2]"));

  auto scattered = ops::ScatterNd(root, ops::Const(root, {{1}, {3}, {1}}), ops::Const(root, {9.f, 10.f, 11.f}),
                                  ops::Const(root, {5}));
  CHECK(Run1<float>(root, scattered) == std::vector<float>{0, 20, 0, 10, 0});  // repeated rows add up
  auto slices = ops::ScatterNd(root, ops::Const(root, {{0}}), ops::Const(root, {{1.0, 2.0}}), ops::Const(root, {2, 2}));
  CHECK(Run1<double>(root, slices) == std::vector<double>{1, 2, 0, 0});
}

TEST_CASE("UnsortedSegmentSum sums rows into segments, dropping negative ids; DynamicStitch interleaves") {
  Scope root = Scope::NewRootScope();
  auto data = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}, {7.f, 8.f}});
  auto sum = ops::UnsortedSegmentSum(root, data, ops::Const(root, {2, 0, 2, -1}), 3);
  CHECK(ShapeOf(root, sum) == std::vector<int64_t>{3, 2});
  CHECK(Run1<float>(root, sum) == std::vector<float>{3, 4, 0, 0, 6, 8});
  CHECK(Run1<int64_t>(root, ops::UnsortedSegmentSum(root, ops::Const(root, {{int64_t{1}, int64_t{2}}}),
                                                    ops::Const(root, {{1, 1}}), 2)) == std::vector<int64_t>{0, 3});
  Status s = RunStatus(root, {ops::UnsortedSegmentSum(root, data, ops::Const(root, {0, 3, 0, 0}), 3)}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("segment_ids[1] = 3 is out of range [0, 3)"));

  auto merged = ops::DynamicStitch(root, {ops::Const(root, {0, 2}), ops::Const(root, {{1}, {2}})},
                                   {ops::Const(root, {10.f, 20.f}), ops::Const(root, {{30.f}, {40.f}})});
  CHECK(ShapeOf(root, merged) == std::vector<int64_t>{3});
  CHECK(Run1<float>(root, merged) == std::vector<float>{10, 30, 40});  // a later index overwrites
}

TEST_CASE("ShapeN and IdentityN handle lists; OneHot encodes along any axis") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1.f, 2.f, 3.f}});
  auto b = ops::Const(root, {7.f});
  std::vector<Output> shapes = ops::ShapeN(root, {a, b}, DT_INT64);  // N * T: one dtype
  REQUIRE(shapes.size() == 2);
  CHECK(Run1<int64_t>(root, shapes[0]) == std::vector<int64_t>{1, 3});
  CHECK(Run1<int64_t>(root, shapes[1]) == std::vector<int64_t>{1});
  std::vector<Output> same = ops::IdentityN(root, {a, ops::Const(root, {7})});  // list(type): any dtypes
  REQUIRE(same.size() == 2);
  CHECK(Run1<float>(root, same[0]) == std::vector<float>{1, 2, 3});
  CHECK(Run1<int32_t>(root, same[1]) == std::vector<int32_t>{7});

  auto idx = ops::Const(root, {int64_t{0}, int64_t{2}, int64_t{-1}});
  auto hot = ops::OneHot(root, idx, 3, 1.f, 0.f);
  CHECK(ShapeOf(root, hot) == std::vector<int64_t>{3, 3});
  CHECK(Run1<float>(root, hot) == std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0});  // -1: a row of off_value
  auto columns = ops::OneHot(root, ops::Const(root, {1, 0}), 3, 5, -1, 0);        // axis 0: [depth, n]
  CHECK(ShapeOf(root, columns) == std::vector<int64_t>{3, 2});
  CHECK(Run1<int32_t>(root, columns) == std::vector<int32_t>{-1, 5, 5, -1, -1, -1});
}

TEST_CASE("All and Any reduce bools; Where lists true coordinates; Unique keeps first appearances") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{true, false, true}, {true, true, true}});
  CHECK(Run1<bool>(root, ops::All(root, m, 1)) == std::vector<bool>{false, true});
  CHECK(Run1<bool>(root, ops::Any(root, m, 0)) == std::vector<bool>{true, true, true});
  CHECK(Run1<bool>(root, ops::All(root, m, ops::Const(root, {0, 1}))) == std::vector<bool>{false});
  CHECK(ShapeOf(root, ops::Any(root, m, 1, true)) == std::vector<int64_t>{2, 1});
  CHECK(Run1<bool>(root, ops::All(root, m, Tensor(DT_INT32, TensorShape{0}))) ==
        std::vector<bool>{true, false, true, true, true, true});  // no axes: unchanged

  auto w = ops::Where(root, ops::Const(root, {{0.f, 2.f}, {3.f, 0.f}}));
  CHECK(ShapeOf(root, w) == std::vector<int64_t>{2, 2});
  CHECK(Run1<int64_t>(root, w) == std::vector<int64_t>{0, 1, 1, 0});
  CHECK(ShapeOf(root, ops::Where(root, ops::Const(root, {false, false}))) == std::vector<int64_t>{0, 1});

  ops::UniqueOutputs u = ops::Unique(root, ops::Const(root, {4, 1, 4, 2, 1}));
  CHECK(Run1<int32_t>(root, u.y) == std::vector<int32_t>{4, 1, 2});
  CHECK(Run1<int32_t>(root, u.idx) == std::vector<int32_t>{0, 1, 0, 2, 1});
}

TEST_CASE("TopKV2 takes the k largest per row, ties to the lower index; InTopKV2 and L2Loss") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {{1.f, 5.f, 3.f, 5.f}, {-1.f, -2.f, 0.f, 4.f}});
  ops::TopKOutputs top = ops::TopK(root, x, 3);
  CHECK(Run1<float>(root, top.values) == std::vector<float>{5, 5, 3, 4, 0, -1});
  CHECK(Run1<int32_t>(root, top.indices) == std::vector<int32_t>{1, 3, 2, 3, 2, 0});
  const Status s = RunStatus(root, {ops::TopK(root, x, 5).values}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("at least k columns"));

  auto in_top = ops::InTopK(root, x, ops::Const(root, {3, 1}), 2);
  CHECK(Run1<bool>(root, in_top) == std::vector<bool>{true, false});
  CHECK(Run1<bool>(root, ops::InTopK(root, x, ops::Const(root, {0, 7}), 4)) == std::vector<bool>{true, false});
  CHECK(Run1<double>(root, ops::L2Loss(root, ops::Const(root, {1.0, -2.0, 3.0}))) == std::vector<double>{7});
}

TEST_CASE("StaticRegexFullMatch and RegexFullMatch match whole strings; a bad pattern is InvalidArgument") {
  Scope root = Scope::NewRootScope();
  auto paths = ops::Const(root, {std::string("s3://bucket/ckpt"), std::string("/tmp/ckpt"), std::string("xs3://a")});
  proto::AttrValue pattern;
  pattern.set_s("^s3://.*");
  auto fixed = root.AddOp("StaticRegexFullMatch", {{paths}}, {{"pattern", pattern}}).output(0);
  CHECK(Run1<bool>(root, fixed) == std::vector<bool>{true, false, false});
  auto given = root.AddOp("RegexFullMatch", {{paths}, {ops::Const(root, std::string("/tmp/[a-z]+"))}}).output(0);
  CHECK(Run1<bool>(root, given) == std::vector<bool>{false, true, false});
  auto bad = root.AddOp("RegexFullMatch", {{paths}, {ops::Const(root, std::string("([a-z"))}}).output(0);
  const Status s = RunStatus(root, {bad}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("([a-z"));
}

TEST_CASE("StringJoin joins element by element, scalars broadcast; AsString formats as printf does") {
  Scope root = Scope::NewRootScope();
  auto names = ops::Const(root, {std::string("a"), std::string("b")});
  CHECK(Run1<std::string>(root, ops::StringJoin(root, {names, std::string("x"), names}, "/")) ==
        std::vector<std::string>{"a/x/a", "b/x/b"});
  const Status s = RunStatus(root, {ops::StringJoin(root, {names, ops::Const(root, {std::string("c")})})}, {});
  CHECK(s.code() == Code::kInvalidArgument);

  CHECK(Run1<std::string>(root, ops::AsString(root, ops::Const(root, {3.14159f, -2.f}))) ==
        std::vector<std::string>{"3.141590", "-2.000000"});  // %f, TensorFlow's default
  ops::AsStringAttrs p;
  p.precision = 2;
  p.width = 7;
  p.fill = "0";
  CHECK(Run1<std::string>(root, ops::AsString(root, ops::Const(root, {3.14159}), p)) == std::vector<std::string>{"0003.14"});
  ops::AsStringAttrs g;
  g.shortest = true;
  CHECK(Run1<std::string>(root, ops::AsString(root, ops::Const(root, {0.5, 1e-7}), g)) ==
        std::vector<std::string>{"0.5", "1e-07"});
  CHECK(Run1<std::string>(root, ops::AsString(root, ops::Const(root, {int64_t{-42}}))) == std::vector<std::string>{"-42"});
  CHECK(Run1<std::string>(root, ops::AsString(root, ops::Const(root, {true, false}))) ==
        std::vector<std::string>{"true", "false"});
  ops::AsStringAttrs bad;
  bad.shortest = true;
  bad.scientific = true;
  CHECK(RunStatus(root, {ops::AsString(root, ops::Const(root, {1.0}), bad)}, {}).code() == Code::kInvalidArgument);
}

TEST_CASE("ShardedFilename and ShardedFilespec name a sharded checkpoint's files as TensorFlow does") {
  Scope root = Scope::NewRootScope();
  auto name = root.AddOp("ShardedFilename", {{ops::Const(root, std::string("/ckpt/model"))}, {ops::Const(root, 1)},
                                             {ops::Const(root, 4)}});
  CHECK(Run1<std::string>(root, name.output(0)) == std::vector<std::string>{"/ckpt/model-00001-of-00004"});
  auto spec = root.AddOp("ShardedFilespec", {{ops::Const(root, std::string("m"))}, {ops::Const(root, 12)}});
  CHECK(Run1<std::string>(root, spec.output(0)) == std::vector<std::string>{"m-?????-of-00012"});
  auto bad = root.AddOp("ShardedFilename", {{ops::Const(root, std::string("m"))}, {ops::Const(root, 4)},
                                            {ops::Const(root, 4)}});
  CHECK(RunStatus(root, {bad.output(0)}, {}).code() == Code::kInvalidArgument);
}

TEST_CASE("SpaceToBatchND and BatchToSpaceND move blocks between space and batch as TensorFlow's examples show") {
  Scope root = Scope::NewRootScope();
  // TensorFlow's documented example: [1, 4, 4, 1] with block [2, 2] -> [4, 2, 2, 1].
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  auto x = ops::Const(root, test::MakeTensor<float>(v, TensorShape{1, 4, 4, 1}));
  auto b = ops::SpaceToBatchND(root, x, ops::Const(root, {2, 2}), ops::Const(root, {{0, 0}, {0, 0}}));
  CHECK(test::ShapeOf(root, b) == std::vector<int64_t>{4, 2, 2, 1});
  CHECK(Run1<float>(root, b) == std::vector<float>{1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16});
  auto back = ops::BatchToSpaceND(root, b, ops::Const(root, {2, 2}), ops::Const(root, {{0, 0}, {0, 0}}));
  CHECK(Run1<float>(root, back) == v);
  // Padding, then cropping the same amounts, gives the input back.
  auto x23 = ops::Const(root, test::MakeTensor<float>({1, 2, 3, 4, 5, 6}, TensorShape{1, 2, 3, 1}));
  auto padded = ops::SpaceToBatchND(root, x23, ops::Const(root, {2, 2}), ops::Const(root, {{1, 1}, {0, 1}}));
  CHECK(test::ShapeOf(root, padded) == std::vector<int64_t>{4, 2, 2, 1});
  auto cropped = ops::BatchToSpaceND(root, padded, ops::Const(root, {2, 2}), ops::Const(root, {{1, 1}, {0, 1}}));
  CHECK(Run1<float>(root, cropped) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // A padded size that the block does not divide.
  const Status s =
      RunStatus(root, {ops::SpaceToBatchND(root, x23, ops::Const(root, {2, 2}), ops::Const(root, {{0, 0}, {0, 0}}))}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("not a multiple of block_shape[1]"));
}
