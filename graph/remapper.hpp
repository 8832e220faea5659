// Op fusion on placed graphs, as TensorFlow's grappler remapper does on CPUs:
// MatMul -> BiasAdd [-> Relu | Relu6 | LeakyRelu] becomes one _FusedMatMul
// (ops/math/matmul_op.cpp), Conv2D -> BiasAdd [-> ...] one _FusedConv2D
// (ops/nn/conv_ops.cpp). Their kernels add the bias and apply the activation
// to each block of the output while the block is in cache
// (ops/math/fused_epilogue.hpp): one pass over the output instead of three,
// and no hand-off between kernels.
//
// A chain fuses when all of its nodes have the same dtype (float32; float64
// too for Conv2D), are NHWC (Conv2D and its BiasAdd), are assigned to the
// same CPU device, and every node but the last has exactly one consumer, the next
// node's first input, and no control consumers: an intermediate that is
// fetched, read by another node (a gradient reading a pre-activation), or
// waited on stays as it was, and so does its chain. The fused node takes the
// last node's name (fetches name it as before; step stats and the placer's
// measured costs then give the whole chain's time under that name), its
// consumers, data and control, the control inputs of the whole chain, the
// head's op attrs and the last node's internal ones ("_wire_compression").
// Since an intermediate's only path onward runs through the chain, fusing
// cannot make a cycle.
//
// Results are the same bits as the separate nodes' (the fused kernel applies
// the same element operations; TensorFlow's Elu fusion is left out here, its
// exp differs in the last bit). Nodes on GPUs are left alone.
#pragma once

#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

/// Fuses every chain of `g` described above; `num_fused`, when given, gets the
/// number of fused nodes made.
Status FuseMatMulChains(Graph* g, int* num_fused = nullptr);

}  // namespace actorflow
