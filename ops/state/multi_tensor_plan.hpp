// How a multi-tensor launch (a fused optimizer update on a GPU,
// ops/state/fused_apply_gpu.cu; PyTorch's multi_tensor_apply) cuts N
// tensors into launches: each block of a launch updates one chunk of one
// member (kMultiTensorChunk elements), and a launch's arguments (pointers of
// at most kMaxLaunchMembers members, at most kMaxLaunchBlocks blocks) fit in
// a kernel's 4 KB of parameters. Host code, so the plan is tested on
// machines without a GPU.
//
// Members run in order: a launch holds consecutive members, a member's
// chunks may continue in the next launch, and launches run one after the
// other on the stream. A member that writes a buffer an earlier member of
// the same launch reads or writes, or that reads a buffer an earlier member
// of the launch writes, starts a new launch: one variable updated twice by
// one fused node (the second update reads the first's result, in place or
// from a copy on write of it) runs as two Apply* nodes in a row would.
#pragma once

#include <cstdint>
#include <vector>

namespace actorflow {

constexpr int64_t kMultiTensorChunk = 65536;
constexpr int kMaxLaunchMembers = 24;
constexpr int kMaxLaunchBlocks = 320;

struct MultiTensorLaunch {
  std::vector<int> members;       // member indices, ascending; block_member indexes into this
  std::vector<uint8_t> block_member;  // per block: its member's position in `members`
  std::vector<int32_t> block_chunk;   // per block: the chunk of that member
};

/// The launches for members of `sizes[i]` elements each, member i writing
/// the buffers `writes[i]` and reading `reads[i]` (compared by address;
/// either may be shorter than `sizes`). Members of 0 elements get no block.
std::vector<MultiTensorLaunch> PlanMultiTensorLaunches(const std::vector<int64_t>& sizes,
                                                       const std::vector<std::vector<const void*>>& writes,
                                                       const std::vector<std::vector<const void*>>& reads = {});

}  // namespace actorflow
