#include "actorflow/ops/math/fused_epilogue.hpp"

#include <vector>

#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

Status FusedEpilogue::Read(const OpKernelConstruction& c) {
  std::vector<std::string> fused;
  int64_t num_args = 0;
  AF_RETURN_IF_ERROR(c.GetAttr("fused_ops", &fused));
  AF_RETURN_IF_ERROR(c.GetAttr("num_args", &num_args));
  AF_RETURN_IF_ERROR(c.GetAttr("leakyrelu_alpha", &alpha_));
  const std::string act = fused.size() == 2 ? fused[1] : "";
  if (act == "Relu") act_ = Activation::kRelu;
  else if (act == "Relu6") act_ = Activation::kRelu6;
  else if (act == "LeakyRelu") act_ = Activation::kLeakyRelu;
  else if (act == "Elu") act_ = Activation::kElu;
  if (fused.empty() || fused[0] != "BiasAdd" || fused.size() > 2 || (fused.size() == 2 && act_ == Activation::kNone)) {
    std::string list;
    for (const std::string& op : fused) list += (list.empty() ? "" : ", ") + op;
    return errors::Unimplemented(c.def().op(), " on CPU fuses [BiasAdd] and [BiasAdd, Relu|Relu6|LeakyRelu|Elu], not [",
                                 list, "]");
  }
  if (num_args != 1)
    return errors::InvalidArgument(c.def().op(), " with BiasAdd takes 1 argument (the bias), not ", num_args);
  return Status::OK();
}

Status FusedEpilogue::CheckBias(const Tensor& bias, int64_t channels) {
  if (bias.dims() != 1) return errors::InvalidArgument("Biases must be 1D: ", bias.shape().DebugString());
  if (bias.dim_size(0) != channels)
    return errors::InvalidArgument("Must provide as many biases as the last dimension of the output: ",
                                   bias.shape().DebugString(), " vs. ", channels, " channels");
  return Status::OK();
}

}  // namespace actorflow
