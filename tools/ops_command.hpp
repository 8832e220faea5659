// actorflow ops: lists the registered ops.
//
//   actorflow ops
//
// `ops` lists the registered ops, sorted by name, with the device and type
// constraints of each of their kernels:
//
//   MatMul  kernels: CPU[T=float,double,int32,int64]
//
//
// Contract: returns its exit status; errors go to stderr (tools/cli_common.hpp).
// It allocates little and lets std::bad_alloc reach main, which reports
// RESOURCE_EXHAUSTED with exit status 1.
#pragma once

#include <string>
#include <vector>

namespace actorflow {
namespace cli {

/// Runs `actorflow ops ARGS...` (ARGS must be empty); returns the exit status.
int OpsCommand(const std::vector<std::string>& argv);

}  // namespace cli
}  // namespace actorflow
