// Gradients of FusedBatchNorm (V1, V2, V3), with TensorFlow's formula
// (python/ops/nn_grad.py, _BaseFusedBatchNormGrad): the matching
// FusedBatchNormGrad op on the batch statistics the forward op kept in its
// reserve spaces (training), or on the given population statistics
// (inference). The gradient ops' own gradients (second derivatives of batch
// normalization) are not written yet: asking for them is Unimplemented.
#include "actorflow/client/gradients/grad_helpers.hpp"
#include "actorflow/client/gradients/gradients.hpp"

namespace actorflow {
namespace {

Status FusedBatchNormGradient(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                              std::vector<Output>* grad_outputs) {
  const std::string& type = op.node()->type_string();
  const std::string grad_type = type == "FusedBatchNorm" ? "FusedBatchNormGrad" : type == "FusedBatchNormV2"
                                                                                     ? "FusedBatchNormGradV2"
                                                                                     : "FusedBatchNormGradV3";
  float epsilon = 1e-4f;
  bool training = true;
  (void)GetNodeAttr(op.node()->def(), "epsilon", &epsilon);  // validated when the node was added
  (void)GetNodeAttr(op.node()->def(), "is_training", &training);
  OutputList saved = training ? OutputList{op.output(3), op.output(4)} : OutputList{op.input(3), op.input(4)};
  std::vector<OutputList> args = {{grad_inputs[0]}, {op.input(0)}, {op.input(1)}, {saved[0]}, {saved[1]}};
  if (grad_type == "FusedBatchNormGradV3") args.push_back({op.output(5)});
  Operation grad = scope.AddOp(grad_type, args,
                               {{"epsilon", AttrFloat(epsilon)}, {"is_training", AttrBool(training)}});
  AF_RETURN_IF_ERROR(scope.status());
  grad_outputs->push_back(grad.output(0));  // x
  grad_outputs->push_back(grad.output(1));  // scale
  grad_outputs->push_back(grad.output(2));  // offset
  grad_outputs->push_back(Output());        // mean
  grad_outputs->push_back(Output());        // variance
  return scope.status();
}
AF_REGISTER_GRADIENT("FusedBatchNorm", FusedBatchNormGradient);
AF_REGISTER_GRADIENT("FusedBatchNormV2", FusedBatchNormGradient);
AF_REGISTER_GRADIENT("FusedBatchNormV3", FusedBatchNormGradient);

Status FusedBatchNormGradGradient(const Scope& scope, const Operation& op, const std::vector<Output>&,
                                  std::vector<Output>*) {
  return errors::Unimplemented("second derivatives of batch normalization (the gradient of node '", op.node()->name(),
                               "', op '", op.node()->type_string(), "') are not supported");
}
AF_REGISTER_GRADIENT("FusedBatchNormGrad", FusedBatchNormGradGradient);
AF_REGISTER_GRADIENT("FusedBatchNormGradV2", FusedBatchNormGradGradient);
AF_REGISTER_GRADIENT("FusedBatchNormGradV3", FusedBatchNormGradGradient);

}  // namespace
}  // namespace actorflow
