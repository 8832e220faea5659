// Skipped checks: a test case that cannot run its check (a tool, a data set,
// a CPU feature or a build option missing) says so with AF_SKIP, and CTest
// reports the test as skipped, never as passed.
//
// Contract:
//  - AF_SKIP(reason) records the running case as skipped, prints the reason
//    (a Catch2 warning) and returns from the enclosing void function.
//    AF_SKIP_OUTSIDE_CI(reason) is a failure instead in CI (CI=true), where
//    setup.sh installs what the check needs.
//  - RunTests (the tests' main, test_main.cpp, and the GPU suites' mains,
//    each of which defines CATCH_CONFIG_RUNNER)
//    exits with Catch2's failure count when anything failed (78 where that
//    count is 77), else 77 (kSkipped, CTest's SKIP_RETURN_CODE for every
//    test) when a case skipped, else 0. A skip never hides a failure.
//  - Like every Catch2 call, only on the test's main thread.
//  - Cases that may skip on an ordinary machine carry the tag [may_skip] and
//    a tag of their own, which tests/CMakeLists.txt registers as a CTest
//    entry of its own (<test>_<tag>): a skip there leaves the other cases'
//    passes visible in the main entry.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace actorflow {
namespace test {

/// The exit code of a test program whose cases passed but one skipped: CTest's SKIP_RETURN_CODE.
constexpr int kSkipped = 77;

/// The cases that skipped in this process, with why.
inline std::vector<std::pair<std::string, std::string>>& SkippedCases() {
  static std::vector<std::pair<std::string, std::string>> skipped;
  return skipped;
}

/// Records the running case as skipped (AF_SKIP does, and prints `reason`); once per case and reason.
inline void RecordSkip(const std::string& reason) {
  std::pair<std::string, std::string> skip(Catch::getResultCapture().getCurrentTestName(), reason);
  for (const auto& s : SkippedCases())
    if (s == skip) return;
  SkippedCases().push_back(std::move(skip));
}

/// Whether this runs in continuous integration: CI set, and not to "false" or "0"
/// (GitHub Actions and most CI services set CI=true).
inline bool InCi() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  const std::string v = ci;
  return !v.empty() && v != "false" && v != "0";
}

#ifdef CATCH_CONFIG_RUNNER  // Catch::Session exists in the file that defines main only
/// Runs the Catch2 session; the exit code says failed, skipped or passed (see above).
inline int RunTests(int argc, char** argv) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed != 0) return failed == kSkipped ? kSkipped + 1 : failed;
  if (SkippedCases().empty()) return 0;
  std::printf("%zu skip(s), reported to CTest as skipped (exit code %d):\n", SkippedCases().size(), kSkipped);
  for (const auto& [name, reason] : SkippedCases()) std::printf("  %s: %s\n", name.c_str(), reason.c_str());
  return kSkipped;
}
#endif

}  // namespace test
}  // namespace actorflow

/// Records the running case as skipped, says why, and returns from the enclosing void function.
#define AF_SKIP(reason)                                 \
  do {                                                  \
    std::ostringstream af_skip_reason;                  \
    af_skip_reason << reason;                           \
    ::actorflow::test::RecordSkip(af_skip_reason.str()); \
    WARN("skipped: " << af_skip_reason.str());          \
    return;                                             \
  } while (false)

/// AF_SKIP outside CI; in CI (CI=true), where setup.sh installs what the check needs, a failure.
#define AF_SKIP_OUTSIDE_CI(reason)                                        \
  do {                                                                    \
    if (::actorflow::test::InCi()) FAIL(reason << " (a failure in CI)"); \
    AF_SKIP(reason);                                                      \
  } while (false)
