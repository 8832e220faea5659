// _Arg and _Retval: how a step's fed tensors enter a partition and its fetched
// tensors leave it (see graph/subgraph.hpp). They read and write the step's
// CallFrame; both are cheap and always run inline. And the definitions of
// the function-call ops, which are inlined on import.
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// A feed of a Placeholder carries the Placeholder's shape as "_shape" (graph/subgraph.cpp).
Status ArgShape(InferenceContext* c) {
  PartialTensorShape shape;
  if (c->GetAttr("_shape", &shape).ok()) c->set_output(0, shape);
  return Status::OK();
}

AF_REGISTER_OP("_Arg").Output("output: T").Attr("T: type").Attr("index: int >= 0").SetShapeFn(ArgShape)
    .Doc("A step argument (feed).");
AF_REGISTER_OP("_Retval").Input("input: T").Attr("T: type").Attr("index: int >= 0").SetIsStateful()
    .Doc("A step result (fetch).");

class ArgOp : public OpKernel {
 public:
  explicit ArgOp(OpKernelConstruction* c) : OpKernel(c) { c->SetStatus(c->GetAttr("index", &index_)); }
  void Compute(OpKernelContext* ctx) override {
    auto& args = ctx->call_frame()->args;
    AF_REQUIRES(ctx, index_ < static_cast<int64_t>(args.size()),
                errors::Internal("argument ", index_, " missing from the step's ", args.size(), " arguments"));
    const Tensor& t = args[index_];
    AF_REQUIRES(ctx, t.dtype() == BaseType(output_type(0)),
                errors::InvalidArgument("argument ", index_, " has dtype ", DataTypeString(t.dtype()), ", expected ",
                                        DataTypeString(output_type(0))));
    ctx->set_output(0, t);
  }

 private:
  int64_t index_ = 0;
};

class RetvalOp : public OpKernel {
 public:
  explicit RetvalOp(OpKernelConstruction* c) : OpKernel(c) { c->SetStatus(c->GetAttr("index", &index_)); }
  void Compute(OpKernelContext* ctx) override {
    auto& retvals = ctx->call_frame()->retvals;
    AF_REQUIRES(ctx, index_ < static_cast<int64_t>(retvals.size()),
                errors::Internal("result ", index_, " out of the step's ", retvals.size(), " results"));
    retvals[index_] = ctx->input(0);
  }

 private:
  int64_t index_ = 0;
};

AF_REGISTER_KERNEL(KernelDefBuilder("_Arg").Device(DEVICE_CPU), ArgOp);
AF_REGISTER_KERNEL(KernelDefBuilder("_Retval").Device(DEVICE_CPU), RetvalOp);
AF_REGISTER_NO_GRADIENT("_Arg");
AF_REGISTER_NO_GRADIENT("_Retval");

// Calls of a graph's library functions, with TensorFlow's definitions. They
// have no kernels: a graph is imported with every call replaced by the
// function's body (graph/function_inlining.hpp), so none is left to run and
// gradients flow through the inlined nodes.
AF_REGISTER_OP("PartitionedCall")
    .Input("args: Tin")
    .Output("output: Tout")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("f: func")
    .Attr("config: string = ''")
    .Attr("config_proto: string = ''")
    .Attr("executor_type: string = ''")
    .Doc("Calls function f; inlined when the graph is imported.");
AF_REGISTER_OP("StatefulPartitionedCall")
    .Input("args: Tin")
    .Output("output: Tout")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("f: func")
    .Attr("config: string = ''")
    .Attr("config_proto: string = ''")
    .Attr("executor_type: string = ''")
    .SetIsStateful()
    .Doc("Calls function f, which may have side effects; inlined when the graph is imported.");
AF_REGISTER_OP("If")
    .Input("cond: Tcond")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("Tcond: type")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("then_branch: func")
    .Attr("else_branch: func")
    .Attr("output_shapes: list(shape) = []")
    .SetIsStateful()
    .Doc("then_branch(input) when cond, else else_branch(input); lowered to Switch and Merge when imported.");
AF_REGISTER_OP("StatelessIf")
    .Input("cond: Tcond")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("Tcond: type")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("then_branch: func")
    .Attr("else_branch: func")
    .Attr("output_shapes: list(shape) = []")
    .Doc("If whose branches have no side effects; lowered to Switch and Merge when imported.");
AF_REGISTER_OP("While")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type) >= 0")
    .Attr("cond: func")
    .Attr("body: func")
    .Attr("output_shapes: list(shape) = []")
    .Attr("parallel_iterations: int = 10")
    .SetIsStateful()
    .Doc("input = body(input) while cond(input); lowered to a frame (Enter, Merge, Switch, Exit, NextIteration) "
         "when imported.");
AF_REGISTER_OP("StatelessWhile")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type) >= 0")
    .Attr("cond: func")
    .Attr("body: func")
    .Attr("output_shapes: list(shape) = []")
    .Attr("parallel_iterations: int = 10")
    .Doc("While whose cond and body have no side effects; lowered to a frame when imported.");
AF_REGISTER_NO_GRADIENT("While");
AF_REGISTER_NO_GRADIENT("StatelessWhile");
AF_REGISTER_NO_GRADIENT("PartitionedCall");
AF_REGISTER_NO_GRADIENT("StatefulPartitionedCall");
AF_REGISTER_NO_GRADIENT("If");
AF_REGISTER_NO_GRADIENT("StatelessIf");

}  // namespace
}  // namespace actorflow
