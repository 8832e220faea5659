// The device actor: executes registered graph partitions on one Device.
//
// It owns its registered plans and the state of every step in flight; nothing
// else touches them. A step starts from the plan's root nodes; ready nodes go
// on the actor's own ready queue and run in a loop inside the handler: cheap
// kernels inline, expensive kernels with large inputs on the compute pool,
// asynchronous kernels started and left to call back (every kernel computing
// on a GPU is one: devices/cuda/gpu_device.hpp). Both kinds of
// completion come back as a KernelDone message. There is no message per node.
// A node taking a variable's value through a ref edge first reads it from the
// container actor (one request for all such inputs), then runs.
//
// Many steps (of one or several graphs) run at once, interleaved. A kernel
// error or a deadline ends only its own step: the client gets the Status at
// once, and the step's state is dropped when its last running kernel returns.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace actorflow {

class Device;

/// Spawns the actor executing partitions on `device` (which must outlive it);
/// its kernels reach variables through `container` and other partitions
/// through `rendezvous` (none: an invalid actor).
caf::actor SpawnDeviceActor(caf::actor_system& sys, Device* device, caf::actor container = caf::actor(),
                            caf::actor rendezvous = caf::actor());

}  // namespace actorflow
