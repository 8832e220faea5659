// Identities that must not collide across the processes of a cluster.
//
// An incarnation names one life of a process (and of its devices): a
// restarted task gets a new one, so rendezvous keys and resources of its
// former self are never mistaken for its own. A step id names one step of
// one client: random, as TensorFlow's NewStepId, so steps started by
// different masters never share rendezvous keys.
#pragma once

#include <cstdint>

namespace actorflow {

/// A random non-zero 64-bit number, drawn once per call.
uint64_t NewIncarnation();

/// A random positive 63-bit step id.
int64_t NewStepId();

}  // namespace actorflow
