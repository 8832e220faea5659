// The chaos suite's bounded CI run (issue 32): bench/chaos.sh trains
// train_distributed in all-reduce (--elastic) and async modes while failures
// are injected at random (kill -9 and SIGSTOP of workers, kill -9 of the ps),
// beside a run without them. Every run ends within its bound (no hang) and
// exits 0, failures were injected, every checkpoint the run kept restores,
// and the model still learns. Needs Debian's dataset-fashion-mnist and
// python3 (skipped without them outside CI). The figures: bench/chaos.sh.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "skip.hpp"
#include "spawn_util.hpp"
#include "wait_until.hpp"

namespace {

using actorflow::test::ReadFile;

int Int(const std::string& row, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(row, m, std::regex(pattern)) ? std::stoi(m[1]) : -1;
}

void Write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("chaos report: resume time, steps lost and efficiency from the workers' step lines") {
  if (!std::filesystem::exists("/usr/bin/python3")) AF_SKIP_OUTSIDE_CI("/usr/bin/python3 is not installed");
  const auto dir = std::filesystem::temp_directory_path() / ("af_chaos_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // Without failures: steps 1..11, one every 100 ms (1 s).
  std::string steady;
  for (int i = 0; i <= 10; ++i) steady += std::to_string(1000 + 100 * i) + " " + std::to_string(i + 1) + " -1 0 0\n";
  Write(dir / "m.steady.steps.worker_0", steady);
  // With them: steps 1..6 by 1500 ms; the ps killed at 1550; a restore to
  // step 3, steps from 4 again at 2300 (a 750 ms stall, 3 steps lost); a
  // worker stopped at 2450 while the others go on (no stall: its next step,
  // 50 ms later); the end at 3000.
  Write(dir / "m.chaos.steps.worker_0",
        "1000 1 -1 0 0\n1100 2 -1 0 0\n1200 3 -1 0 0\n1300 4 -1 0 0\n1400 5 -1 0 0\n1500 6 -1 0 0\n"
        "2300 4 -1 0 0\n2400 5 -1 0 0\n2500 6 -1 0 0\n2600 7 -1 0 0\n3000 11 -1 0 0\n");
  Write(dir / "m.chaos.events", "1550 kill9_ps ps:0\n2450 stop_worker worker:1\n");
  Write(dir / "m.chaos.log", "[worker:0] trained 11 steps: test accuracy 85.50%\n");
  Write(dir / "m.steady.log", "[worker:0] trained 11 steps: test accuracy 86.00%\n");
  Write(dir / "m.steady.rc", "0\n");
  Write(dir / "m.chaos.rc", "124\n");
  const std::string out = (dir / "row").string();
  const pid_t pid = actorflow::test::SpawnWithEnvironment(
      {"/usr/bin/python3", std::string(AF_SOURCE_DIR) + "/bench/chaos_report.py", dir.string(), "m", "5", "1", "60"},
      {}, out, false, {});
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const std::string row = ReadFile(out);
  std::filesystem::remove_all(dir);
  INFO(row);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(row.find("\"median\": 0.5,") != std::string::npos);  // 1 s of training without, 2 s with
  CHECK(row.find("\"failures\": {\"total\": 2, \"kill9_ps\": 1, \"stop_worker\": 1}") != std::string::npos);
  CHECK(row.find("\"kill9_ps\": {\"resume_ms\": {\"p50\": 750, \"max\": 750, \"n\": 1}, \"steps_lost\": {\"p50\": 3,") !=
        std::string::npos);
  CHECK(row.find("\"stop_worker\": {\"resume_ms\": {\"p50\": 50,") != std::string::npos);
  CHECK(row.find("\"accuracy\": {\"with\": 85.5, \"without\": 86.0}") != std::string::npos);
  CHECK(row.find("\"hangs\": 1") != std::string::npos);  // the run that hit its bound (exit 124)
}

TEST_CASE("chaos: training under random kills and stops never hangs, goes on, and keeps restorable checkpoints",
          "[distributed][may_skip][fashion_mnist]") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"))
    AF_SKIP_OUTSIDE_CI("dataset-fashion-mnist is not installed (setup.sh installs it)");
  if (!std::filesystem::exists("/usr/bin/python3")) AF_SKIP_OUTSIDE_CI("/usr/bin/python3 is not installed");
#ifndef AF_HAVE_BENCH
  // The sanitized build (make sanitize) has no bench/ programs; the training
  // it would run is checked under the sanitizers by elastic_test.
  AF_SKIP("this build has no bench/ programs (AF_BUILD_BENCH=OFF): bench/restore_checkpoints is needed");
#endif
  const std::string out =
      (std::filesystem::temp_directory_path() / ("af_chaos_test_" + std::to_string(::getpid()) + ".out")).string();
  // The runs' logs, kept: what the launcher did and when each failure came, for a failed check.
  const auto logs = std::filesystem::temp_directory_path() / ("af_chaos_test_" + std::to_string(::getpid()) + ".logs");
  std::filesystem::remove_all(logs);
  struct RemoveLogs {
    std::filesystem::path dir;
    ~RemoveLogs() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } remove_logs{logs};
  // Each of the four runs bounded (a sanitizer's runtime slows them: AF_TEST_SLOWDOWN).
  const int bound = 300 * AF_TEST_SLOWDOWN;
  const pid_t pid = actorflow::test::SpawnWithEnvironment(
      {"/bin/bash", std::string(AF_SOURCE_DIR) + "/bench/chaos.sh", AF_BUILD_DIR, "--modes", "allreduce,async",
       // Training long enough (about 9 s here) that the first failure, 1-3 s
       // after training is under way, always comes before its end.
       "--epochs", "20", "--interval", "2", "--stop", "4", "--bound", std::to_string(bound)},
      {{"KEEP_LOGS", logs.string()}}, out, false, {"TF_CONFIG"});
  int status = 0;
  const bool ended = actorflow::test::WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; },
                                                std::chrono::seconds(4 * bound + 100), std::chrono::milliseconds(100));
  if (!ended) {
    ::kill(pid, SIGTERM);  // the script ends its launchers on exit
    ::waitpid(pid, &status, 0);
  }
  const std::string rows = ReadFile(out);
  std::filesystem::remove(out);
  INFO(rows);
  // Per mode, the failures injected (all of them), then the launcher's lines
  // and the end and error lines of the run with them (the last 8000 characters).
  std::string story;
  for (const std::string mode : {"allreduce", "async"}) {
    std::string lines;
    std::istringstream log(ReadFile((logs / (mode + ".chaos.log")).string()));
    for (std::string line; std::getline(log, line);)
      if (line.find("[launch]") != std::string::npos || line.find("trained ") != std::string::npos ||
          line.find("rror") != std::string::npos)
        lines += line + "\n";
    if (lines.size() > 8000) lines = "...\n" + lines.substr(lines.size() - 8000);
    story += mode + " with failures, injected:\n" + ReadFile((logs / (mode + ".chaos.events")).string()) +
             "its lines:\n" + lines;
  }
  INFO(story);
  REQUIRE(ended);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  for (const std::string mode : {"allreduce", "async"}) {
    INFO(mode);
    std::smatch m;
    REQUIRE(std::regex_search(rows, m, std::regex("\\{\"bench\": \"chaos\", \"params\": \\{\"mode\": \"" + mode +
                                                  "\"[^\\n]*")));
    const std::string row = m[0];
    CHECK(Int(row, "\"hangs\": ([0-9]+)") == 0);
    CHECK(row.find("\"exit\": [0, 0]") != std::string::npos);
    CHECK(Int(row, "\"failures\": \\{\"total\": ([0-9]+)") >= 1);
    const int kept = Int(row, "\"kept\": ([0-9]+)");
    CHECK(kept >= 1);
    CHECK(Int(row, "\"restored\": ([0-9]+)") == kept);
    std::smatch acc;
    REQUIRE(std::regex_search(row, acc, std::regex("\"accuracy\": \\{\"with\": ([0-9.]+)")));
    CHECK(std::stod(acc[1]) >= 80.0);  // 20 epochs under failures: it learned (without: about 88%)
  }
}
