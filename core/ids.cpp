#include "actorflow/core/ids.hpp"

#include <chrono>
#include <random>
#include <thread>

namespace actorflow {

namespace {
// One generator per thread, seeded from the system's entropy, the clock and
// the thread: no lock, and no two threads or processes draw the same stream.
std::mt19937_64& Generator() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(),
                      static_cast<unsigned>(std::chrono::high_resolution_clock::now().time_since_epoch().count()),
                      static_cast<unsigned>(std::hash<std::thread::id>()(std::this_thread::get_id()))};
    return std::mt19937_64(seq);
  }());
  return gen;
}
}  // namespace

uint64_t NewIncarnation() {
  uint64_t v = 0;
  while (v == 0) v = Generator()();
  return v;
}

int64_t NewStepId() {
  int64_t v = 0;
  while (v == 0) v = static_cast<int64_t>(Generator()() >> 1);
  return v;
}

}  // namespace actorflow
