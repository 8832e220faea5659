// SpawnWithEnvironment: how a test starts a program with its own additions
// to the environment, never by setenv in the test's process (where other
// threads may read the environment): the child gets this process's
// environment with `vars` added or replacing those of the same name and
// without those named in `unset`, and its stdout and stderr in `out`
// (truncated, or appended to with `append`).
// Returns the child's PID; asserts (on the test's main thread) that it started.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace actorflow {
namespace test {

inline pid_t SpawnWithEnvironment(std::vector<std::string> argv, const std::map<std::string, std::string>& vars,
                                  const std::string& out, bool append = false,
                                  const std::vector<std::string>& unset = {}) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!vars.count(name) && std::find(unset.begin(), unset.end(), name) == unset.end()) env_store.push_back(entry);
  }
  for (const auto& [name, value] : vars) env_store.push_back(name + "=" + value);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env_store) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC),
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

/// The whole of a file a spawned process wrote ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace test
}  // namespace actorflow
