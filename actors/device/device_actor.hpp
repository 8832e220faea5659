// The device actor: executes registered graph partitions on one Device.
//
// A thin shell around an Executor (actors/device/executor.hpp), which owns
// the state of every step in flight and runs their ready nodes in a loop
// inside the actor's handlers: there is no message per node. The actor keeps
// the registered plans (built on the compute pool, so steps of other graphs
// go on meanwhile), hosts the executor (resumes, deadline timers, kernels
// finishing off its thread come back as messages to itself) and owns the
// accesses through which kernels reach the container, queue and rendezvous
// actors (actors/device/actor_access.hpp).
//
// Protocol: net/worker_service.hpp (register, run, deregister, close session)
// and RendezvousDeliver. A kernel error or a deadline ends only its own step;
// the client gets the Status at once.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace actorflow {

class CollectiveAccess;
class ComputePool;
class Device;
struct RunStepRequest;

/// Spawns the actor executing partitions on `device` (which must outlive it);
/// its kernels reach variables through `container` and other partitions
/// through `rendezvous` (none: an invalid actor), and run collectives on
/// `collectives` (the process's; none: collective ops fail).
caf::actor SpawnDeviceActor(caf::actor_system& sys, Device* device, caf::actor container = caf::actor(),
                            caf::actor rendezvous = caf::actor(), CollectiveAccess* collectives = nullptr);

/// Starts `req` on `device` (a device actor of this process, spawned above)
/// as a turn of that actor on this thread, with no message
/// (RunTurnInline): what a message to it would do, less the message's cost.
/// Only for a request answered through its reply_sink, and only when the
/// actor is idle; false, with `req` untouched, otherwise (the caller sends
/// it as a message). `pool`: where what the turn wakes goes past its budget.
bool RunStepHere(ComputePool* pool, const caf::actor& device, RunStepRequest& req) noexcept;

}  // namespace actorflow
