// Step statistics: how each node of a traced step ran (TensorFlow's
// NodeExecStats in StepStats), collected by the executor when
// RunOptions::trace_level asks for it, carried back to the client in the
// step's answer and drawn by the timeline. Plain data: the protocol
// (net/worker_service.hpp) serializes it without knowing the executor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/dtypes.hpp"

namespace actorflow {

/// One output of a node that ran (collected with its NodeExecStats).
struct NodeOutputStats {
  DataType dtype = DT_INVALID;  // DT_INVALID: the kernel produced no value
  std::vector<int64_t> shape;
  int64_t bytes = 0;  // element bytes; for string tensors the bytes of the strings
};

/// How one node of a step ran (collected when RunOptions::trace_level asks
/// for it). Times are from the steady clock (NowNanos), in microseconds.
struct NodeExecStats {
  std::string node;
  std::string op;
  std::string where;    // "inline" (the device actor's thread), "pool" or "async"
  uint64_t thread = 0;  // a stable id of the thread that computed it
  int64_t start_us = 0;  // since the step started
  int64_t end_us = 0;
  std::string device;         // the full name of the device that ran it
  int64_t all_start_us = 0;   // since the steady clock's epoch (TensorFlow's all_start_micros)
  std::vector<NodeOutputStats> outputs;  // one per output of the node
};

}  // namespace actorflow
