// Device: a place where kernels run (a CPU, a GPU), with its allocator and the
// compute pool its expensive kernels use. A Device is passive; the device
// actor (actors/device/device_actor.hpp) is what executes graph partitions on it.
#pragma once

#include <functional>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {

class Allocator;
class ComputePool;

constexpr char DEVICE_CPU[] = "CPU";
constexpr char DEVICE_GPU[] = "GPU";

class Device {
 public:
  Device(std::string name, std::string type, Allocator* allocator, ComputePool* pool)
      : name_(std::move(name)), type_(std::move(type)), allocator_(allocator), pool_(pool) {}
  virtual ~Device() = default;

  /// Full name, e.g. "/job:localhost/replica:0/task:0/device:CPU:0".
  const std::string& name() const { return name_; }
  /// "CPU" or "GPU": the key of the kernel registry.
  const std::string& device_type() const { return type_; }
  Allocator* allocator() const { return allocator_; }
  ComputePool* compute_pool() const { return pool_; }

  /// Whether the executor must call Sync when a step's nodes on this device
  /// have all run: a device whose kernels only enqueue work (a GPU) finishes a
  /// step once that work has run. False for the CPU, where a kernel's end is
  /// its work's end.
  virtual bool SyncsAtStepEnd() const { return false; }
  /// Calls `done` (from any thread) once the work enqueued on this device so
  /// far has run, with the first error it met (a faulting GPU kernel).
  virtual void Sync(std::function<void(const Status&)> done) { done(Status::OK()); }

 private:
  std::string name_;
  std::string type_;
  Allocator* allocator_;
  ComputePool* pool_;
};

}  // namespace actorflow
