// StaticRegexFullMatch and RegexFullMatch, TensorFlow's ops: whether each
// string of `input` matches the pattern whole (TensorFlow 2's save functions
// use it to tell "s3://" prefixes from others). TensorFlow reads the pattern
// as RE2; here it is std::regex's ECMAScript grammar, which reads RE2's
// common syntax (classes, anchors, groups, repetition, alternation) the same
// way; a pattern it cannot read is InvalidArgument naming it.
#include <regex>
#include <string>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("StaticRegexFullMatch")
    .Input("input: string")
    .Output("output: bool")
    .Attr("pattern: string")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Whether each string matches the regular expression `pattern` whole.");
AF_REGISTER_OP("RegexFullMatch")
    .Input("input: string")
    .Input("pattern: string")
    .Output("output: bool")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Whether each string matches the regular expression `pattern` (a scalar) whole.");
AF_REGISTER_NO_GRADIENT("StaticRegexFullMatch");
AF_REGISTER_NO_GRADIENT("RegexFullMatch");

Status Compile(const std::string& pattern, std::regex* re) {
  try {
    *re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return errors::InvalidArgument("invalid regular expression '", pattern, "': ", e.what());
  }
  return Status::OK();
}

Status Match(OpKernelContext* ctx, const std::regex& re) {
  const Tensor& in = ctx->input(0);
  Tensor* out = nullptr;
  AF_RETURN_IF_ERROR(ctx->allocate_output(0, in.shape(), &out));
  for (int64_t i = 0; i < in.NumElements(); ++i) {
    try {
      out->data<bool>()[i] = std::regex_match(in.data<std::string>()[i], re);
    } catch (const std::regex_error& e) {  // error_complexity, error_stack: a pathological pattern or input
      return errors::InvalidArgument("matching string ", i, ": ", e.what());
    }
  }
  return Status::OK();
}

class StaticRegexFullMatchOp : public OpKernel {
 public:
  explicit StaticRegexFullMatchOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string pattern;
    c->SetStatus(c->GetAttr("pattern", &pattern));
    c->SetStatus(Compile(pattern, &re_));
  }
  void Compute(OpKernelContext* ctx) override { AF_REQUIRES_OK(ctx, Match(ctx, re_)); }

 private:
  std::regex re_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StaticRegexFullMatch").Device(DEVICE_CPU), StaticRegexFullMatchOp);

class RegexFullMatchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& pattern = ctx->input(1);
    AF_REQUIRES(ctx, pattern.NumElements() == 1,
                errors::InvalidArgument("pattern must be a scalar, got ", pattern.shape().DebugString()));
    std::regex re;
    AF_REQUIRES_OK(ctx, Compile(pattern.data<std::string>()[0], &re));
    AF_REQUIRES_OK(ctx, Match(ctx, re));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("RegexFullMatch").Device(DEVICE_CPU), RegexFullMatchOp);

}  // namespace
}  // namespace actorflow
