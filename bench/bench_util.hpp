// Timing helpers shared by the benchmarks: repeat, take the median, print one
// JSON line per figure in the format bench/run_all.sh collects.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>  // O_CLOEXEC
#include <spawn.h>
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

extern char** environ;

namespace bench {

struct Stats {
  double median, min, max;
  int reps;
};

/// Where a benchmark writes its files: `given` when not empty, else a fresh
/// directory under the system's temp directory ("<prefix>_XXXXXX"), removed
/// (when empty again) with this object.
class ScratchDir {
 public:
  ScratchDir(const std::string& given, const std::string& prefix) {
    if (!given.empty()) {
      path_ = given;
      return;
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::fprintf(stderr, "mkdtemp %s failed\n", tmpl.c_str());
      std::exit(1);
    }
    path_ = tmpl;
    own_ = true;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (own_) std::filesystem::remove(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool own_ = false;
};

/// A child process whose stdin and stdout are pipes of the parent's.
struct Child {
  pid_t pid = -1;
  FILE* to = nullptr;    // its stdin
  FILE* from = nullptr;  // its stdout
};

/// Starts `path` with `args` (argv[0] is `path`), stdin and stdout piped;
/// stderr is the parent's. A child whose pid is -1 did not start.
inline Child SpawnPiped(const std::string& path, const std::vector<std::string>& args) {
  Child c;
  int in[2], out[2];  // close-on-exec: no other child inherits these ends
  if (::pipe2(in, O_CLOEXEC) != 0) return c;
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return c;
  }
  posix_spawn_file_actions_t a;
  posix_spawn_file_actions_init(&a);
  posix_spawn_file_actions_adddup2(&a, in[0], 0);
  posix_spawn_file_actions_adddup2(&a, out[1], 1);
  std::vector<std::string> store = {path};
  store.insert(store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : store) argv.push_back(s.data());
  argv.push_back(nullptr);
  const bool started = ::posix_spawn(&c.pid, path.c_str(), &a, nullptr, argv.data(), environ) == 0;
  posix_spawn_file_actions_destroy(&a);
  ::close(in[0]);
  ::close(out[1]);
  if (!started) {
    ::close(in[1]);
    ::close(out[0]);
    c.pid = -1;
    return c;
  }
  c.to = ::fdopen(in[1], "w");
  c.from = ::fdopen(out[0], "r");
  return c;
}

/// Runs fn `reps` times after `warmup` untimed runs; per-run seconds.
inline Stats Measure(int warmup, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front(), t.back(), reps};
}

/// Median, min and max of each implementation's samples (sorts them).
inline std::vector<Stats> SortedStats(std::vector<std::vector<double>>* samples) {
  std::vector<Stats> out;
  for (auto& v : *samples) {
    std::sort(v.begin(), v.end());
    out.push_back({v[v.size() / 2], v.front(), v.back(), static_cast<int>(v.size())});
  }
  return out;
}

/// Runs each of fns `block` times in turn per round, `rounds` rounds after a
/// warm-up round; one figure per round and fn (seconds per call). A slow
/// spell of a shared machine then hits every implementation alike, so their
/// ratio holds even when absolute figures drift; within a block the calls run
/// back to back, as a loop of steps would.
/// `settle_ms`: an untimed pause after each block, for implementations that
/// leave threads busy after their calls (see MeasureInterleavedCalls);
/// `warm`: untimed calls before each block (threads asleep after the pause,
/// caches another block filled).
inline std::vector<Stats> MeasureInterleaved(int rounds, int block, const std::vector<std::function<void()>>& fns,
                                             int settle_ms = 0, int warm = 0) {
  for (auto& fn : fns)
    for (int i = 0; i < block; ++i) fn();
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t f = 0; f < fns.size(); ++f) {
      for (int i = 0; i < warm; ++i) fns[f]();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < block; ++i) fns[f]();
      t[f].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / block);
      if (settle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    }
  }
  return SortedStats(&t);
}

/// Two variants of one piece of work (`a`, `b`: an optimization on and off)
/// in one process: blocks in the order a, b, b, a each round, so the
/// machine's spells and the position in the round hit both alike. Each
/// result's median is the mean of its two positions' medians.
inline std::pair<Stats, Stats> MeasureAbba(int rounds, int block, const std::function<void()>& a,
                                           const std::function<void()>& b) {
  const std::vector<Stats> s = MeasureInterleaved(rounds, block, {a, b, b, a});
  auto both = [](const Stats& x, const Stats& y) {
    return Stats{(x.median + y.median) / 2, std::min(x.min, y.min), std::max(x.max, y.max), x.reps + y.reps};
  };
  return {both(s[0], s[3]), both(s[1], s[2])};
}

/// As MeasureInterleaved, but every call is one sample (latency percentiles):
/// `rounds` rounds of `block` calls of each fn in turn, after a warm-up block.
/// Blocks rather than single calls alternate, with a pause of `settle_ms`
/// after each block, so what one implementation leaves running after its
/// calls (CAF's workers poll for tens of milliseconds after a message) does
/// not land on the next implementation's calls.
inline std::vector<Stats> MeasureInterleavedCalls(int rounds, int block, const std::vector<std::function<void()>>& fns,
                                                  int settle_ms = 50) {
  for (auto& fn : fns)
    for (int i = 0; i < block; ++i) fn();
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t f = 0; f < fns.size(); ++f) {
      for (int i = 0; i < block; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        fns[f]();
        t[f].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    }
  }
  return SortedStats(&t);
}

/// Prints {"bench":..,"params":{..,"impl":..},"metric":..,"unit":..,"median":..,"min":..,"max":..,"reps":..}.
/// `scale` converts seconds into the unit; `inverse` for rates (bigger is better).
inline void Print(const std::string& name, const std::string& params_json, const std::string& metric,
                  const std::string& unit, const Stats& s, double scale, bool inverse = false) {
  double med = inverse ? scale / s.median : s.median * scale;
  double lo = inverse ? scale / s.max : s.min * scale;
  double hi = inverse ? scale / s.min : s.max * scale;
  std::printf("{\"bench\":\"%s\",\"params\":{%s},\"metric\":\"%s\",\"unit\":\"%s\",\"median\":%.6g,\"min\":%.6g,"
              "\"max\":%.6g,\"reps\":%d}\n",
              name.c_str(), params_json.c_str(), metric.c_str(), unit.c_str(), med, lo, hi, s.reps);
  std::fflush(stdout);
}

}  // namespace bench
