// The consumer's own core/status.hpp: a user project with a core/ folder of
// its own. actorflow's headers are all reached as "actorflow/...", so this one
// never stands in for actorflow's core/status.hpp (nor the other way round).
#pragma once

namespace consumer {
inline const char* OwnStatus() { return "the consumer's own core/status.hpp"; }
}  // namespace consumer
