// EnvironmentReader: how code that reads environment variables (TF_CONFIG,
// SLURM_*, ACTORFLOW_*) gets them. Functions that read the environment take
// a reader instead of calling std::getenv, so tests pass a map and never
// setenv; a null reader is the process's own environment.
//
// Contract: a reader returns the variable's value, or nullptr when it is
// unset; the pointer stays valid while the reader's storage does (for the
// process's environment: until the next setenv/putenv).
#pragma once

#include <cstdlib>
#include <functional>

namespace actorflow {

/// Reads a variable: nullptr when unset (std::getenv by default; tests pass a map).
using EnvironmentReader = std::function<const char*(const char*)>;

/// `name` through `env`, or through std::getenv when `env` is null.
inline const char* ReadVariable(const EnvironmentReader& env, const char* name) {
  return env ? env(name) : std::getenv(name);
}

}  // namespace actorflow
