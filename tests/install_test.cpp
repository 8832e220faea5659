// The installed library: `cmake --install` into a temporary prefix, then a
// program (tests/install/consumer.cpp) built against that copy alone, once
// with find_package(actorflow) and once with pkg-config, and run; the
// installed library must not need the CUDA runtime to load.
#include <catch2/catch.hpp>

#include <filesystem>

#include "test_util.hpp"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

/// Runs `cmd`, bounded; REQUIREs exit status 0, printing its output otherwise.
std::string RunOk(const std::string& cmd) {
  std::string out;
  const int status = actorflow::test::RunProgram(cmd, &out);
  INFO(cmd << "\n" << out);
  REQUIRE(status == 0);
  return out;
}

}  // namespace

TEST_CASE("an installed copy builds and runs a program with find_package and with pkg-config") {
#ifdef AF_SANITIZED
  AF_SKIP("a sanitized library cannot link into an unsanitized program");
#endif
  actorflow::test::TempDir dir("af_install_test");
  const std::string prefix = dir / "prefix";
  RunOk(Q(AF_CMAKE_COMMAND) + " --install " + Q(AF_BUILD_DIR) + " --prefix " + Q(prefix));
  for (const char* f : {"bin/actorflow", "include/actorflow/client/session.hpp",
                        "include/actorflow/core/proto/graph.pb.h", "include/actorflow/core/proto/graph.proto",
                        "lib/cmake/actorflow/actorflowConfig.cmake", "lib/pkgconfig/actorflow.pc"}) {
    INFO(f);
    CHECK(fs::exists(prefix + "/" + f));
  }
  // Every header lies under include/actorflow/: nothing takes a name such as
  // include/core/ that a user's project has too.
  for (const auto& e : fs::directory_iterator(prefix + "/include")) CHECK(e.path().filename() == "actorflow");
  // The headers of the GPU device (which include CUDA's) stay inside.
  CHECK(!fs::exists(prefix + "/include/actorflow/devices/cuda"));
  std::string lib;
  for (const auto& e : fs::directory_iterator(prefix + "/lib"))
    if (e.path().filename().string().rfind("libactorflow.so.", 0) == 0 && !fs::is_symlink(e.path()))
      lib = e.path().string();
  REQUIRE(!lib.empty());
  // A CPU-only program must start where there is no CUDA: nothing CUDA is a needed library.
  const std::string needed = RunOk("readelf -d " + Q(lib) + " | grep NEEDED");
  CHECK_THAT(needed, Contains("libprotobuf") && !Contains("cudart") && !Contains("libcuda") && !Contains("cublas"));
  // The installed command runs from its prefix (its rpath finds the library).
  CHECK_THAT(RunOk(Q(prefix + "/bin/actorflow") + " help"), Contains("actorflow"));

  const std::string build = dir / "consumer_build";
  RunOk(Q(AF_CMAKE_COMMAND) + " -S " + Q(AF_SOURCE_DIR "/tests/install") + " -B " + Q(build) +
        " -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + Q(prefix));
  RunOk(Q(AF_CMAKE_COMMAND) + " --build " + Q(build));
  std::string out = RunOk(Q(build + "/consumer") + " " + Q(dir / "ckpt/model"));
  CHECK_THAT(out, Contains("y = [2, 3]") && Contains("restored w = [2, 0, 0, 3]") &&
                      Contains("the consumer's own core/status.hpp"));
  CHECK(fs::exists(dir / "ckpt/model.index"));

  const std::string pc = "env PKG_CONFIG_PATH=" + Q(prefix + "/lib/pkgconfig") + " pkg-config";
  const std::string flags = RunOk(pc + " --cflags --libs actorflow");
  RunOk("c++ -O1 -I" + Q(AF_SOURCE_DIR "/tests/install") + " " + Q(AF_SOURCE_DIR "/tests/install/consumer.cpp") +
        " -o " + Q(dir / "consumer_pc") + " $(" + pc + " --cflags --libs actorflow)");
  out = RunOk(Q(dir / "consumer_pc") + " " + Q(dir / "ckpt2/model"));
  CHECK_THAT(out, Contains("y = [2, 3]") && Contains("restored w = [2, 0, 0, 3]") &&
                      Contains("the consumer's own core/status.hpp"));
}
