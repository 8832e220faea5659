// CaptureArena: the memory of one captured step (actors/device/step_capture.hpp).
//
// A captured graph of GPU work writes and reads the same addresses at every
// launch. So every block a kernel allocates while its step is captured must
// stay out of the device's pool for as long as the capture may be launched,
// even after the tensor that held it was freed during the capture. Within
// the capture a freed block is reused (a later allocation of its size, up to
// twice smaller, gets it): the work is recorded from one stream, in order, so
// the reuse the capture recorded is the one every launch repeats, as with
// the device's pool, and the capture holds its peak, not its sum. The arena
// takes its blocks from the device's allocator and gives them all back when
// the capture is dropped (Release, once nothing launched can still run); a
// block freed after that goes back at once. Blocks that outlive the capture in a
// tensor (a variable's buffer chosen during the capture) go back when that
// tensor frees them.
//
// No CUDA here: tested on the host (pool_allocator_test). Thread-safe.
// Never destroyed once a block was allocated (tensors hold its address):
// NewCaptureArena keeps every arena.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actorflow/core/allocator.hpp"

namespace actorflow {

class CaptureArena final : public Allocator {
 public:
  CaptureArena(Allocator* base, std::string name) : base_(base), name_(std::move(name)) {}
  std::string Name() const override { return name_; }
  void* AllocateRaw(size_t alignment, size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;
  bool HostAccessible() const override { return base_->HostAccessible(); }
  /// The capture is dropped: the kept blocks go back to the base allocator,
  /// and so does every block freed from now on.
  void Release();
  /// Bytes allocated through the arena and not yet back in the base.
  int64_t held_bytes() const;

 private:
  Allocator* const base_;
  const std::string name_;
  mutable std::mutex mu_;
  std::vector<std::pair<void*, size_t>> kept_;  // freed while the capture lives (block, its size)
  std::unordered_map<void*, size_t> sizes_;     // every block handed out: its size in the base
  int64_t held_ = 0;
  bool released_ = false;
};

/// A new arena over `base`, kept for the process's life (see above).
CaptureArena* NewCaptureArena(Allocator* base, const std::string& name);

}  // namespace actorflow
