// Step statistics (RunOptions::trace_level) and their Chrome trace (client/timeline.hpp).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "actorflow/actors/device/step_state.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/timeline.hpp"
#include "actorflow/devices/device.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::ToDef;
using json = nlohmann::json;

namespace {

// x [2,3] (fed) times a constant [3,4]: "mm" is a [2,4] float32, 32 bytes.
proto::GraphDef MatMulGraph() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Const(root.WithOpName("w"), {{1.f, 2.f, 3.f, 4.f}, {5.f, 6.f, 7.f, 8.f}, {9.f, 10.f, 11.f, 12.f}});
  ops::MatMul(root.WithOpName("mm"), x, w);
  return ToDef(root);
}

Tensor X() { return MakeTensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}); }

std::map<std::string, NodeExecStats> ByNode(const RunMetadata& md) {
  std::map<std::string, NodeExecStats> by_node;
  for (const auto& s : md.step_stats) {
    INFO(s.node);
    REQUIRE(by_node.emplace(s.node, s).second);  // each node once
  }
  return by_node;
}

int64_t NowMicros() { return NowNanos() / 1000; }

// The actorflow command's exit status; its stdout in *out.
int Cli(const std::string& args, std::string* out) {
  const std::string cmd = std::string("timeout 60 ") + AF_CLI_PATH + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string TempPath(const std::string& name) {
  return "/tmp/actorflow_timeline_" + std::to_string(getpid()) + "_" + name;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());  // throws (and fails the test) when it does not parse
}

std::vector<json> EventsOf(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("a traced step returns one stat per executed node, with device, times and outputs") {
  Session session;
  REQUIRE(session.Create(MatMulGraph()).ok());
  RunOptions opts;
  opts.trace_level = TraceLevel::kFullTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  const int64_t before = NowMicros();
  REQUIRE(session.Run(opts, {{"x", X()}}, {"mm"}, {}, &out, &md).ok());
  const int64_t after = NowMicros();
  // The pruned graph: the feed's _Arg, w, mm and the fetch's _Retval.
  REQUIRE(md.step_stats.size() == 4);
  const auto by_node = ByNode(md);
  std::multiset<std::string> ops;
  for (const auto& s : md.step_stats) ops.insert(s.op);
  REQUIRE(ops == std::multiset<std::string>{"Const", "MatMul", "_Arg", "_Retval"});
  const std::string device = Runtime::Default()->devices()[0]->name();
  for (const auto& s : md.step_stats) {
    INFO(s.node);
    REQUIRE(s.device == device);
    REQUIRE(s.start_us >= 0);
    REQUIRE(s.end_us >= s.start_us);
    REQUIRE(s.all_start_us >= before);
    REQUIRE(s.all_start_us <= after);
    REQUIRE(s.thread != 0);
    REQUIRE((s.where == "inline" || s.where == "pool" || s.where == "async"));
  }
  const NodeExecStats& mm = by_node.at("mm");
  REQUIRE(mm.op == "MatMul");
  REQUIRE(mm.outputs.size() == 1);
  REQUIRE(mm.outputs[0].dtype == DT_FLOAT);
  REQUIRE(mm.outputs[0].shape == std::vector<int64_t>{2, 4});
  REQUIRE(mm.outputs[0].bytes == 32);
  const NodeExecStats& w = by_node.at("w");
  REQUIRE(w.outputs.size() == 1);
  REQUIRE(w.outputs[0].shape == std::vector<int64_t>{3, 4});
  REQUIRE(w.outputs[0].bytes == 48);
}

TEST_CASE("a kernel run off the device actor reports its outputs too") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::MatMul(root.WithOpName("big"), x, x);  // large: run asynchronously, its outputs come back in KernelDone
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor m(DT_FLOAT, TensorShape{512, 512});
  for (int64_t i = 0; i < m.NumElements(); ++i) m.data<float>()[i] = 1.f;
  RunOptions opts;
  opts.trace_level = TraceLevel::kSoftwareTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  REQUIRE(session.Run(opts, {{"x", m}}, {"big"}, {}, &out, &md).ok());
  const NodeExecStats big = ByNode(md).at("big");
  REQUIRE(big.where != "inline");
  REQUIRE(big.outputs.size() == 1);
  REQUIRE(big.outputs[0].shape == std::vector<int64_t>{512, 512});
  REQUIRE(big.outputs[0].bytes == 512 * 512 * 4);
}

TEST_CASE("without tracing a step returns no stats; the deprecated flag still asks for them") {
  Session session;
  REQUIRE(session.Create(MatMulGraph()).ok());
  std::vector<Tensor> out;
  RunMetadata none;
  REQUIRE(session.Run(RunOptions(), {{"x", X()}}, {"mm"}, {}, &out, &none).ok());
  REQUIRE(none.step_stats.empty());
  RunOptions legacy;
  legacy.collect_step_stats = true;
  RunMetadata md;
  REQUIRE(session.Run(legacy, {{"x", X()}}, {"mm"}, {}, &out, &md).ok());
  REQUIRE(md.step_stats.size() == 4);
}

TEST_CASE("the Chrome trace has one X event per node and names each device's process") {
  Session session;
  REQUIRE(session.Create(MatMulGraph()).ok());
  RunOptions opts;
  opts.trace_level = TraceLevel::kFullTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  REQUIRE(session.Run(opts, {{"x", X()}}, {"mm"}, {}, &out, &md).ok());
  const json trace = json::parse(ChromeTraceJson(md));
  const std::vector<json> complete = EventsOf(trace, "X");
  REQUIRE(complete.size() == md.step_stats.size());
  std::map<int, std::string> process_names;
  for (const auto& e : EventsOf(trace, "M"))
    if (e.at("name") == "process_name") process_names[e.at("pid").get<int>()] = e.at("args").at("name");
  REQUIRE(process_names.size() == 1);
  REQUIRE(process_names.begin()->second == Runtime::Default()->devices()[0]->name());
  std::set<std::string> names;
  for (const auto& e : complete) {
    names.insert(e.at("name").get<std::string>());
    REQUIRE(process_names.count(e.at("pid").get<int>()));
    REQUIRE(e.at("dur").get<int64_t>() >= 0);
    REQUIRE(e.at("cat") == e.at("args").at("op"));
    if (e.at("name") == "mm") {
      REQUIRE(e.at("cat") == "MatMul");
      const json& o = e.at("args").at("outputs").at(0);
      REQUIRE(o.at("dtype") == "float");  // DataTypeString
      REQUIRE(o.at("shape") == json::array({2, 4}));
      REQUIRE(o.at("bytes") == 32);
    }
  }
  REQUIRE(names.size() == complete.size());
  REQUIRE(names.count("mm"));
  REQUIRE(names.count("w"));
}

TEST_CASE("the Chrome trace escapes names and separates devices") {
  RunMetadata md;
  NodeExecStats a;
  a.node = "quote\"back\\slash\nnew\xff";  // JSON specials and a byte that is not UTF-8
  a.op = "Op";
  a.device = "/device:CPU:0";
  a.thread = ~uint64_t{0};
  a.end_us = 5;
  NodeExecStats b = a;
  b.node = "b";
  b.device = "/device:CPU:1";
  md.step_stats = {a, b};
  const json trace = json::parse(ChromeTraceJson(md));
  const std::vector<json> complete = EventsOf(trace, "X");
  REQUIRE(complete.size() == 2);
  REQUIRE(complete[0].at("name") == "quote\"back\\slash\nnew\xEF\xBF\xBD");  // U+FFFD for the bad byte
  REQUIRE(complete[0].at("dur") == 5);
  REQUIRE(complete[0].at("pid") != complete[1].at("pid"));
  int process_names = 0;
  for (const auto& e : EventsOf(trace, "M")) process_names += e.at("name") == "process_name";
  REQUIRE(process_names == 2);
  // Thread ids are small numbers, exact in a JavaScript double.
  REQUIRE(complete[0].at("tid").get<int64_t>() < (int64_t{1} << 53));
}

TEST_CASE("cli: run --trace writes a parseable trace of every step") {
  const std::string graph = std::string(AF_TEST_DATA_DIR) + "/tf_linear.pbtxt";
  const std::string trace_path = TempPath("trace.json");
  const std::string steps = TempPath("steps.jsonl");
  std::ofstream(steps) << R"({"feeds":{"x":[[1.0,2.0]]},"fetches":["y"]})" << "\n"
                       << R"({"feeds":{"x":[[3.0,4.0]]},"fetches":["y"]})" << "\n";
  std::string out;
  const int code = Cli("run --graph " + graph + " --steps " + steps + " --trace " + trace_path, &out);
  INFO(out);
  REQUIRE(code == 0);
  REQUIRE(out.find("\"step\":1,\"ok\":true") != std::string::npos);  // stdout stays one JSON line per step
  const json trace = ReadJson(trace_path);
  int matmuls = 0;
  for (const auto& e : EventsOf(trace, "X")) {
    if (e.at("name") != "MatMul") continue;
    ++matmuls;
    REQUIRE(e.at("args").at("outputs").at(0).at("shape") == json::array({1, 1}));
    REQUIRE(e.at("args").at("outputs").at(0).at("bytes") == 4);
  }
  REQUIRE(matmuls == 2);  // one per step
  REQUIRE_FALSE(EventsOf(trace, "M").empty());
  std::remove(steps.c_str());
  std::remove(trace_path.c_str());

  // A trace file that cannot be opened is a usage error, before any step runs.
  out.clear();
  REQUIRE(Cli("run --graph " + graph + " --feed 'x=[[1.0,2.0]]' --fetch y --trace /nonexistent/dir/t.json", &out) ==
          2);
  REQUIRE(out.empty());
}
