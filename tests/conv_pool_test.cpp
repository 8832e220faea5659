// Conv2D, MaxPool, AvgPool and FusedBatchNorm against hand-computed values
// and a direct reference loop (SAME and VALID padding, strides), their static
// shapes and errors. Their gradients and backprop ops are checked against central
// differences in gradients_test.
#include <catch2/catch.hpp>

#include "gradient_checker.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Run1;
using test::RunStatus;
using test::ShapeOf;

namespace {

// out[b, y, x, o] = sum over i, j, c of in[b, y*s - pad + i, x*s - pad + j, c] * f[i, j, c, o], zeros outside.
std::vector<double> ReferenceConv(const Tensor& in, const Tensor& f, int64_t stride, bool same, std::vector<int64_t>* dims) {
  const int64_t n = in.dim_size(0), h = in.dim_size(1), w = in.dim_size(2), c = in.dim_size(3);
  const int64_t kh = f.dim_size(0), kw = f.dim_size(1), o = f.dim_size(3);
  const int64_t oh = same ? (h + stride - 1) / stride : (h - kh) / stride + 1;
  const int64_t ow = same ? (w + stride - 1) / stride : (w - kw) / stride + 1;
  const int64_t ph = same ? std::max<int64_t>((oh - 1) * stride + kh - h, 0) / 2 : 0;
  const int64_t pw = same ? std::max<int64_t>((ow - 1) * stride + kw - w, 0) / 2 : 0;
  *dims = {n, oh, ow, o};
  std::vector<double> out(static_cast<size_t>(n * oh * ow * o), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t k = 0; k < o; ++k) {
          double sum = 0;
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j)
              for (int64_t ch = 0; ch < c; ++ch) {
                const int64_t iy = y * stride - ph + i, ix = x * stride - pw + j;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                sum += in.data<double>()[((b * h + iy) * w + ix) * c + ch] * f.data<double>()[((i * kw + j) * c + ch) * o + k];
              }
          out[((b * oh + y) * ow + x) * o + k] = sum;
        }
  return out;
}

}  // namespace

TEST_CASE("Conv2D computes TensorFlow's cross-correlation with SAME VALID and EXPLICIT padding") {
  Scope root = Scope::NewRootScope();
  auto img = ops::Const(root, MakeTensor<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}));
  auto ones = ops::Const(root, MakeTensor<float>({1, 1, 1, 1}, {2, 2, 1, 1}));
  CHECK(Run1<float>(root, ops::Conv2D(root, img, ones, {1, 1, 1, 1}, "VALID")) == std::vector<float>{12, 16, 24, 28});
  // SAME, 2x2: the padding goes after (bottom and right), so the last row and column see only themselves.
  CHECK(Run1<float>(root, ops::Conv2D(root, img, ones, {1, 1, 1, 1}, "SAME")) ==
        std::vector<float>{12, 16, 9, 24, 28, 15, 15, 17, 9});

  for (bool same : {true, false}) {
    for (int64_t stride : {1, 2}) {
      INFO("same " << same << " stride " << stride);
      const Tensor in = test::Uniform({2, 7, 6, 3}, -1, 1, 11), f = test::Uniform({3, 2, 3, 4}, -1, 1, 12);
      std::vector<int64_t> dims;
      const std::vector<double> want = ReferenceConv(in, f, stride, same, &dims);
      auto y = ops::Conv2D(root, in, f, {1, stride, stride, 1}, same ? "SAME" : "VALID");
      CHECK(ShapeOf(root, y) == dims);
      const PartialTensorShape inferred = root.InferredShape(y);
      CHECK(inferred.dim_sizes() == dims);
      const std::vector<double> got = Run1<double>(root, y);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-12));
    }
  }
  // EXPLICIT padding is a zero Pad, then VALID; its shape is inferred too.
  {
    const Tensor in = test::Uniform({2, 5, 4, 3}, -1, 1, 13), f = test::Uniform({3, 2, 3, 2}, -1, 1, 14);
    auto y = ops::Conv2D(root, in, f, {1, 2, 1, 1}, "EXPLICIT", {0, 0, 1, 2, 0, 3, 0, 0});
    auto padded = ops::Pad(root, ops::Const(root, in), ops::Const(root, {{0, 0}, {1, 2}, {0, 3}, {0, 0}}));
    auto want = ops::Conv2D(root, padded, f, {1, 2, 1, 1}, "VALID");
    CHECK(root.InferredShape(y).dim_sizes() == std::vector<int64_t>{2, 3, 6, 2});
    CHECK(Run1<double>(root, y) == Run1<double>(root, want));
    Scope other = Scope::NewRootScope();
    const Status bad = RunStatus(other, {ops::Conv2D(other.WithOpName("bad_explicit"), in, f, {1, 1, 1, 1}, "EXPLICIT",
                                                     {1, 0, 0, 0, 0, 0, 0, 0})}, {});
    CHECK(bad.code() == Code::kInvalidArgument);
    CHECK_THAT(bad.message(), Catch::Contains("bad_explicit") && Catch::Contains("explicit_paddings"));
  }
  Status s = RunStatus(root, {ops::Conv2D(root.WithOpName("bad_depth"), img, ops::Const(root, MakeTensor<float>({1, 1}, {1, 1, 2, 1})),
                                          {1, 1, 1, 1}, "VALID")}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("bad_depth") && Catch::Contains("in_depth"));
}

TEST_CASE("MaxPool and AvgPool: windows, strides, and SAME windows that count only the input they cover") {
  Scope root = Scope::NewRootScope();
  auto img = ops::Const(root, MakeTensor<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}));
  CHECK(Run1<float>(root, ops::MaxPool(root, img, {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID")) == std::vector<float>{5, 6, 8, 9});
  auto avg = ops::AvgPool(root, img, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  CHECK(ShapeOf(root, avg) == std::vector<int64_t>{1, 2, 2, 1});
  CHECK(Run1<float>(root, avg) == std::vector<float>{3, 4.5f, 7.5f, 9});  // (1+2+4+5)/4, (3+6)/2, (7+8)/2, 9
  auto two_channels = ops::Const(root, MakeTensor<int32_t>({1, -1, 5, -5, 3, -3, 2, -2}, {1, 2, 2, 2}));
  CHECK(Run1<int32_t>(root, ops::MaxPool(root, two_channels, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID")) ==
        std::vector<int32_t>{5, -1});
  // MaxPoolGrad sends each gradient to the first maximum.
  auto ties = ops::Const(root, MakeTensor<float>({1, 1, 1, 1}, {1, 2, 2, 1}));
  auto pooled = ops::MaxPool(root, ties, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  CHECK(Run1<float>(root, ops::MaxPoolGrad(root, ties, pooled, ops::Const(root, MakeTensor<float>({3}, {1, 1, 1, 1})),
                                           {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID")) == std::vector<float>{3, 0, 0, 0});
  Status s = RunStatus(root, {ops::MaxPool(root, img, {1, 4, 4, 1}, {1, 1, 1, 1}, "VALID")}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("larger than the input"));
  s = RunStatus(root, {ops::MaxPool(root, img, {1, 2, 2, 1}, {1, 1, 1, 1}, "EXPLICIT")}, {});
  CHECK_FALSE(s.ok());
}

TEST_CASE("FusedBatchNormV3 normalizes by the batch in training and by the given statistics in inference") {
  Scope root = Scope::NewRootScope();
  // Two channels over 4 positions: channel 0 is 1, 2, 3, 4 and channel 1 is 10, 10, 10, 10.
  auto x = ops::Const(root, MakeTensor<float>({1, 10, 2, 10, 3, 10, 4, 10}, {1, 2, 2, 2}));
  auto scale = ops::Const(root, {2.f, 1.f});
  auto offset = ops::Const(root, {0.5f, -1.f});
  ops::FusedBatchNormAttrs a;
  a.epsilon = 0.f;
  ops::FusedBatchNormOutputs t = ops::FusedBatchNorm(root, x, scale, offset, Tensor(DT_FLOAT, TensorShape{0}),
                                                     Tensor(DT_FLOAT, TensorShape{0}), a);
  const std::vector<Tensor> out = test::RunOk(root, {t.y, t.batch_mean, t.batch_variance, t.reserve_space_2});
  const float sd = std::sqrt(1.25f);  // biased variance of 1..4
  const std::vector<float> y = test::Values<float>(out[0]);
  CHECK(y[0] == Approx(2 * (1 - 2.5f) / sd + 0.5f));
  CHECK(y[6] == Approx(2 * (4 - 2.5f) / sd + 0.5f));
  CHECK(test::Values<float>(out[1]) == std::vector<float>{2.5f, 10.f});
  CHECK(test::Values<float>(out[2])[0] == Approx(1.25f * 4 / 3));  // Bessel-corrected
  CHECK(test::Values<float>(out[3])[0] == Approx(1.25f));          // the biased one, for the gradient

  ops::FusedBatchNormAttrs inference;
  inference.is_training = false;
  inference.epsilon = 0.f;
  ops::FusedBatchNormOutputs i = ops::FusedBatchNorm(root, x, scale, offset, ops::Const(root, {1.f, 10.f}),
                                                     ops::Const(root, {4.f, 1.f}), inference);
  CHECK(Run1<float>(root, i.y) == std::vector<float>{0.5f, -1.f, 1.5f, -1.f, 2.5f, -1.f, 3.5f, -1.f});
  const Status bad = RunStatus(root, {ops::FusedBatchNorm(root, x, ops::Const(root, {1.f}), offset,
                                                          ops::Const(root, {0.f, 0.f}), ops::Const(root, {1.f, 1.f}),
                                                          inference).y}, {});
  CHECK(bad.code() == Code::kInvalidArgument);
  CHECK_THAT(bad.message(), Catch::Contains("scale must have shape [2]"));
}
