// The ops whose CPU kernels also serve a GPU, computing in host memory
// (KernelRegistry::HostKernel; TensorFlow marks the same arguments
// HostMemory). A GPU keeps only float32 tensors in device memory
// (devices/cuda/gpu_device.hpp), so:
//  - kernels that read only their inputs' shapes (Shape, Size, Reshape,
//    ExpandDims, Squeeze) run on the GPU for any dtype: a Reshape of a
//    float32 activation stays beside it, sharing its device buffer;
//  - the shape and index arithmetic of gradients (int32 Add, FloorDiv,
//    Maximum, Prod, ReducedShape, BroadcastGradientArgs, ...) runs there on
//    integer and bool tensors in host memory, next to the GPU ops that read
//    them, with no _Send/_Recv pair and no wait for the GPU.
// Their float32 nodes have GPU kernels of their own or go to the CPU, as do
// other dtypes (double math stays a CPU's).
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {
namespace {

using HostKernel = KernelRegistry::HostKernel;

const detail::HostKernelRegistrar kShapeOnly(DEVICE_GPU, HostKernel::kShapeOnly,
                                             {"Shape", "ShapeN", "Size", "Rank", "Reshape", "ExpandDims", "Squeeze",
                                              "PreventGradient", "Snapshot"});

const detail::HostKernelRegistrar kIntegral(
    DEVICE_GPU, HostKernel::kIntegral,
    {"Add",       "AddV2",        "Sub",          "Mul",          "FloorDiv",      "FloorMod",
     "Maximum",   "Minimum",      "Neg",          "Prod",         "Sum",           "Max",
     "Min",       "Range",        "Pack",         "Unpack",       "ConcatV2",      "Fill",
     "Cast",      "ReducedShape", "BroadcastGradientArgs",        "InvertPermutation",
     "ConcatOffset",              "Slice",        "StridedSlice", "GatherV2",      "Gather",
     "Equal",     "NotEqual",     "Less",         "LessEqual",    "Greater",       "GreaterEqual",
     "LogicalAnd", "LogicalOr",   "LogicalNot",   "ZerosLike",    "OnesLike",      "Tile",
     "Transpose", "Select",       "ListDiff"});

}  // namespace
}  // namespace actorflow
