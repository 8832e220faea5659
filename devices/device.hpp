// Device: a place where kernels run (a CPU, a GPU), with its allocator and the
// compute pool its expensive kernels use. A Device is passive; the device
// actor (actors/device/device_actor.hpp) is what executes graph partitions on it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {

class Allocator;
class ComputePool;
class Tensor;

constexpr char DEVICE_CPU[] = "CPU";
constexpr char DEVICE_GPU[] = "GPU";

class Device {
 public:
  Device(std::string name, std::string type, Allocator* allocator, ComputePool* pool)
      : name_(std::move(name)), type_(std::move(type)), allocator_(allocator), home_(allocator), pool_(pool) {}
  virtual ~Device() = default;

  /// Full name, e.g. "/job:localhost/replica:0/task:0/device:CPU:0".
  const std::string& name() const { return name_; }
  /// "CPU" or "GPU": the key of the kernel registry.
  const std::string& device_type() const { return type_; }
  /// Where kernels allocate (during a capture, the capture's arena).
  Allocator* allocator() const { return allocator_.load(std::memory_order_relaxed); }
  /// The device's own allocator, whatever a capture does: what a tensor of
  /// this device's memory is allocated by (variables, constants), and where
  /// memory that outlives a capture comes from.
  Allocator* home_allocator() const { return home_; }
  ComputePool* compute_pool() const { return pool_; }

  /// Whether the executor must call Sync when a step's nodes on this device
  /// have all run: a device whose kernels only enqueue work (a GPU) finishes a
  /// step once that work has run. False for the CPU, where a kernel's end is
  /// its work's end.
  virtual bool SyncsAtStepEnd() const { return false; }
  /// Calls `done` (from any thread) once the work enqueued on this device so
  /// far has run, with the first error it met (a faulting GPU kernel).
  virtual void Sync(std::function<void(const Status&)> done) { done(Status::OK()); }

  /// Capture (CUDA graphs: actors/device/step_capture.hpp). Between
  /// BeginCapture and EndCapture the work kernels enqueue on this device is
  /// recorded, not run, and allocations come from `arena`, whose blocks the
  /// recorded work keeps using at every launch; nothing else may run on the
  /// device meanwhile. A device that cannot capture says so (CanCapture()
  /// false; Unimplemented).
  class CapturedWork {
   public:
    virtual ~CapturedWork() = default;
    /// Enqueues the recorded work once more, in order with what is enqueued before and after.
    virtual Status Launch() = 0;
  };
  virtual bool CanCapture() const { return false; }
  virtual Status BeginCapture(Allocator* arena);
  /// Ends the capture (also after a failure: the device is usable again) and
  /// gives the recorded work, or why it could not be recorded.
  virtual Status EndCapture(std::unique_ptr<CapturedWork>* out);
  /// Whether a capture is under way.
  bool capturing() const { return capturing_.load(std::memory_order_acquire); }
  /// Enqueues a copy of `bytes` from `src` to `dst`, both this device's
  /// memory, in order with its kernels.
  virtual Status CopyOnDevice(const void* src, void* dst, size_t bytes);
  /// Enqueues a copy of host tensor `src`'s bytes to `dst` (this device's
  /// memory), in order with its kernels. The device stages the bytes or holds
  /// a reference to `src` until the copy ran (tensors are not written once
  /// made). Not while capturing (the copy would read the same bytes at each
  /// launch).
  virtual Status CopyFromHost(const Tensor& src, void* dst);

 protected:
  void set_allocator(Allocator* a) { allocator_.store(a, std::memory_order_relaxed); }
  void set_capturing(bool on) { capturing_.store(on, std::memory_order_release); }

 private:
  std::string name_;
  std::string type_;
  std::atomic<Allocator*> allocator_;
  Allocator* const home_;
  std::atomic<bool> capturing_{false};
  ComputePool* pool_;
};

}  // namespace actorflow
