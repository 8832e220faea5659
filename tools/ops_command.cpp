#include "tools/ops_command.hpp"

#include <algorithm>
#include <iostream>

#include "actorflow/core/status.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "tools/cli_common.hpp"

namespace actorflow {
namespace cli {


namespace {

// "CPU[T=float,double;Tidx=int32,int64]", or "CPU" without type constraints.
std::string FormatKernel(const KernelDef& kernel) {
  std::string out = kernel.device_type;
  if (kernel.type_constraints.empty()) return out;
  out += '[';
  bool first_attr = true;
  for (const auto& [attr, types] : kernel.type_constraints) {
    if (!first_attr) out += ';';
    first_attr = false;
    out += attr + "=";
    for (size_t i = 0; i < types.size(); ++i) out += (i ? "," : "") + DataTypeString(types[i]);
  }
  out += ']';
  return out;
}

}  // namespace

int OpsCommand(const std::vector<std::string>& argv) {
  if (!argv.empty()) return UsageError(errors::InvalidArgument("ops takes no arguments, got '", argv[0], "'"));
  std::vector<std::string> names = OpRegistry::Global()->ListOpNames();
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string line = name + "  kernels:";
    const std::vector<KernelDef> kernels = KernelRegistry::Global()->KernelsForOp(name);
    if (kernels.empty()) line += " none";
    for (const auto& kernel : kernels) line += " " + FormatKernel(kernel);
    // A device that runs the CPU's kernel in host memory (a GPU's Shape,
    // Reshape, integer arithmetic) runs the op too: listed as such.
    for (const auto& [device, rule] : KernelRegistry::Global()->HostKernelsForOp(name)) {
      const bool cpu = std::any_of(kernels.begin(), kernels.end(), [](const KernelDef& k) { return k.device_type == DEVICE_CPU; });
      if (!cpu) break;  // no CPU kernel to borrow
      line += " " + device + (rule == KernelRegistry::HostKernel::kShapeOnly ? "[host memory: any dtype, reads shapes]"
                                                                           : "[host memory: integer and bool dtypes]");
    }
    std::cout << line << '\n';
  }
  return kExitOk;
}

}  // namespace cli
}  // namespace actorflow
