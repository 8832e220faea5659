// The actorflow command, run as a user or script would run it.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace {
struct Result {
  int exit_code;
  std::string out;
};

Result Sh(const std::string& args) {
  const std::string cmd = std::string("timeout 60 ") + AF_CLI_PATH + " " + args + " 2>/dev/null";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kGraph = std::string(AF_TEST_DATA_DIR) + "/tf_linear.pbtxt";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    lines.push_back(text.substr(pos, nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return lines;
}

// A file name in /tmp of this process's own.
std::string TempPath(const std::string& name) { return "/tmp/actorflow_cli_" + std::to_string(getpid()) + "_" + name; }
}  // namespace

TEST_CASE("cli: a TensorFlow pbtxt runs, fetches come back as JSON") {
  Result r = Sh("run --graph " + kGraph + " --feed 'x=[[1.0,2.0],[3.0,4.0]]' --fetch y");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  // y = x @ [[1],[2]] + 0.5
  REQUIRE(r.out == "{\"step\":0,\"ok\":true,\"fetches\":{\"y:0\":{\"dtype\":\"float32\",\"shape\":[2,1],\"values\":[5.5,11.5]}}}\n");
}

TEST_CASE("cli: --no-optimize runs the graph as written, with the same results") {
  const std::string expected = "{\"step\":0,\"ok\":true,\"fetches\":{\"y:0\":{\"dtype\":\"float32\",\"shape\":[2,1],"
                               "\"values\":[5.5,11.5]}}}\n";
  const std::string step = " --feed 'x=[[1.0,2.0],[3.0,4.0]]' --fetch y";
  for (const std::string& args :
       {"--no-optimize --graph " + kGraph + step, "--graph " + kGraph + step + " --no-optimize"}) {
    Result r = Sh("run " + args);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.out == expected);
  }
  REQUIRE(Sh("run --graph " + kGraph + " --fetch y --no-optimize=1").exit_code == 2);  // takes no value
}

TEST_CASE("cli: steps file, typed values, failures and exit codes") {
  // Per process: test runs of other checkouts may share /tmp.
  const std::string steps = "/tmp/actorflow_cli_steps_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(steps) << R"({"feeds":{"x":{"dtype":"float32","shape":[1,2],"values":[0,1]}},"fetches":["y"]})" << "\n"
                       << R"({"feeds":{"x":[[1.0,2.0,3.0]]},"fetches":["y"]})" << "\n"
                       << "\n"
                       << R"({"feeds":{"x":[[1.0,1.0]]},"targets":["check"]})" << "\n"
                       << R"({"feeds":{"x":[[0.0,0.0]]},"fetches":["MatMul:0"]})" << "\n";
  Result r = Sh("run --graph " + kGraph + " --steps " + steps);
  INFO(r.out);
  REQUIRE(r.exit_code == 1);
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    lines.push_back(r.out.substr(pos, nl - pos));
    pos = nl + 1;
  }
  REQUIRE(lines.size() == 4);
  REQUIRE(lines[0].find("\"ok\":true") != std::string::npos);
  REQUIRE(lines[0].find("[2.5]") != std::string::npos);
  REQUIRE(lines[1].find("\"step\":1,\"ok\":false,\"code\":\"INVALID_ARGUMENT\"") != std::string::npos);
  REQUIRE(lines[2].find("\"step\":2,\"ok\":false,\"code\":\"INVALID_ARGUMENT\"") != std::string::npos);
  REQUIRE(lines[2].find("assertion failed") != std::string::npos);
  REQUIRE(lines[3].find("\"step\":3,\"ok\":true") != std::string::npos);
  std::remove(steps.c_str());
}

TEST_CASE("cli: usage errors and unloadable graphs exit 2") {
  REQUIRE(Sh("run --fetch y").exit_code == 2);
  REQUIRE(Sh("run --graph /nonexistent.pbtxt --fetch y").exit_code == 2);
  REQUIRE(Sh("run --graph " + kGraph + " --feed 'x=[[1,2]' --fetch y").exit_code == 2);
  REQUIRE(Sh("frobnicate").exit_code == 2);
}

TEST_CASE("cli: ops lists ops with their kernels") {
  Result r = Sh("ops");
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("MatMul  kernels: CPU") != std::string::npos);
  REQUIRE(r.out.find("SparseSoftmaxCrossEntropyWithLogits") != std::string::npos);
}

TEST_CASE("cli: gradients writes a graph whose printed gradient tensors run") {
  for (const std::string& out : {TempPath("grad.pbtxt"), TempPath("grad.pb")}) {
    INFO(out);
    // y = x @ w + b with w = [[1], [2]], b = 0.5
    Result g = Sh("gradients --graph " + kGraph + " --y y --x x --x w:0 --x=b --out " + out);
    INFO(g.out);
    REQUIRE(g.exit_code == 0);
    const std::vector<std::string> names = Lines(g.out);
    REQUIRE(names.size() == 3);
    for (const auto& name : names) REQUIRE(name.rfind("gradients/", 0) == 0);
    Result r = Sh("run --graph " + out + " --feed 'x=[[1.0,2.0],[3.0,4.0]]' --fetch " + names[0] + " --fetch " +
                  names[1] + " --fetch " + names[2]);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    // dy/dx = ones([2,1]) w^T, dy/dw = x^T ones([2,1]), dy/db = 2 (b is broadcast over two rows)
    REQUIRE(r.out.find("\"" + names[0] + "\":{\"dtype\":\"float32\",\"shape\":[2,2],\"values\":[1.0,2.0,1.0,2.0]}") !=
            std::string::npos);
    REQUIRE(r.out.find("\"" + names[1] + "\":{\"dtype\":\"float32\",\"shape\":[2,1],\"values\":[4.0,6.0]}") !=
            std::string::npos);
    REQUIRE(r.out.find("\"" + names[2] + "\":{\"dtype\":\"float32\",\"shape\":[],\"values\":[2.0]}") !=
            std::string::npos);
    // The original graph is all there: y still runs.
    REQUIRE(Sh("run --graph " + out + " --feed 'x=[[1.0,2.0]]' --fetch y").out.find("[5.5]") != std::string::npos);
    std::remove(out.c_str());
  }
}

TEST_CASE("cli: gradients usage errors and bad graphs exit 2, an unwritable output 1") {
  const std::string out = TempPath("grad_err.pbtxt");
  REQUIRE(Sh("gradients --graph " + kGraph + " --y y --out " + out).exit_code == 2);           // no --x
  REQUIRE(Sh("gradients --graph " + kGraph + " --x x --out " + out).exit_code == 2);           // no --y
  REQUIRE(Sh("gradients --graph " + kGraph + " --y y --x x").exit_code == 2);                  // no --out
  REQUIRE(Sh("gradients --graph " + kGraph + " --y y --x nosuch --out " + out).exit_code == 2);
  REQUIRE(Sh("gradients --graph " + kGraph + " --y y:3 --x x --out " + out).exit_code == 2);
  REQUIRE(Sh("gradients --graph /nonexistent.pbtxt --y y --x x --out " + out).exit_code == 2);
  REQUIRE(Sh("gradients --graph " + kGraph + " --y y --x x --out " + out + " --frob 1").exit_code == 2);
  REQUIRE(Sh("gradients --graph " + kGraph + " --y y --x x --out /nonexistent/dir/g.pb").exit_code == 1);
  std::ifstream written(out);
  REQUIRE_FALSE(written.good());  // nothing written by the failed commands
  Result help = Sh("help");
  REQUIRE(help.out.find("actorflow gradients --graph FILE") != std::string::npos);
}

TEST_CASE("cli: variables persist across the steps of one run; uninitialized reads fail cleanly") {
  const std::string graph = std::string(AF_TEST_DATA_DIR) + "/tf_variables.pbtxt";
  Result r = Sh("run --graph " + graph + " --fetch v/read");
  INFO(r.out);
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.out.find("FAILED_PRECONDITION") != std::string::npos);
  REQUIRE(r.out.find("uninitialized value v") != std::string::npos);
  const std::string steps = "/tmp/actorflow_cli_var_steps_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(steps) << R"({"targets":["v/Assign"]})" << "\n"
                       << R"({"targets":["inc"]})" << "\n"
                       << R"({"fetches":["v/read"]})" << "\n";
  r = Sh("run --graph " + graph + " --steps " + steps);
  std::remove(steps.c_str());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find(R"("v/read:0":{"dtype":"float32","shape":[2],"values":[2.0,4.0]})") != std::string::npos);
}
