// Helpers shared by the tests: tensors from values, running a built graph,
// runtimes and sessions, the local devices' names, and files.
#pragma once

#include <catch2/catch.hpp>

#include <stdlib.h>  // mkdtemp
#include <sys/wait.h>  // WEXITSTATUS

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "skip.hpp"  // AF_SKIP: a check that cannot run is reported as skipped

namespace actorflow {
namespace test {

/// A shell command line's stdout and exit code (-1 when it did not exit normally).
struct ShellResult {
  int exit_code;
  std::string out;
};
inline ShellResult Shell(const std::string& cmd) {
  ShellResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Full names of a local runtime's devices, as placement assigns them.
/// kCpu and kGpu are C strings (a Device is named with them); kCpu0..2 are
/// std::strings (the tests build other names and messages from them).
inline constexpr char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";
inline constexpr char kGpu[] = "/job:localhost/replica:0/task:0/device:GPU:0";
inline const std::string kCpu0 = kCpu;
inline const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
inline const std::string kCpu2 = "/job:localhost/replica:0/task:0/device:CPU:2";

template <class T>
Tensor MakeTensor(const std::vector<T>& values, const TensorShape& shape) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  REQUIRE(static_cast<int64_t>(values.size()) == shape.num_elements());
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

template <class T>
std::vector<T> Values(const Tensor& t) {
  REQUIRE(t.dtype() == DataTypeToEnum<T>::value);
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

/// A vector (1-D tensor) of strings.
inline Tensor Strings(const std::vector<std::string>& v) {
  return MakeTensor<std::string>(v, TensorShape{static_cast<int64_t>(v.size())});
}

/// The scope's graph; REQUIREs that building it succeeded.
inline proto::GraphDef ToDef(const Scope& root) {
  proto::GraphDef def;
  Status s = root.ToGraphDef(&def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return def;
}

/// Imports the text-format GraphDef `text` into `g`.
inline Status Import(const std::string& text, Graph* g) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(ParseGraphDefText(text, &def));
  return ImportGraphDef(def, g);
}

/// How many nodes of `g` run `op`.
inline int CountOp(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->type_string() == op;
  return n;
}

/// Assigns every node of `g` to `device` (passes that run after placement).
inline void AssignAll(Graph* g, const std::string& device) {
  for (Node* n : g->nodes()) n->set_assigned_device(device);
}

/// A chain of `depth` n x n MatMuls: far more than a millisecond of work
/// (24 of 768 x 768 are ~21 GFLOP), for deadline and cancellation tests.
inline Output SlowChain(const Scope& root, int n = 768, int depth = 24) {
  Output m = ops::Fill(root, {n, n}, 0.001f);
  for (int i = 0; i < depth; ++i) m = ops::MatMul(root, m, m);
  return m;
}

/// Runs the scope's graph once, fetching `fetches`; REQUIREs success.
inline std::vector<Tensor> RunOk(const Scope& root, const std::vector<Output>& fetches,
                                 const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  REQUIRE(root.status().ToString() == "OK");
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  Session session;
  REQUIRE(session.Create(def).ok());
  std::vector<std::string> names;
  for (const auto& f : fetches) names.push_back(f.name());
  std::vector<Tensor> out;
  Status s = session.Run(feeds, names, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

/// Runs and returns the failing Status (REQUIREs failure).
inline Status RunStatus(const Scope& root, const std::vector<Output>& fetches,
                        const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  proto::GraphDef def;
  Status s = root.ToGraphDef(&def);
  if (!s.ok()) return s;
  Session session;
  s = session.Create(def);
  if (!s.ok()) return s;
  std::vector<std::string> names;
  for (const auto& f : fetches) names.push_back(f.name());
  std::vector<Tensor> out;
  return session.Run(feeds, names, {}, &out);
}

/// The values of `o`, from one run of the scope's graph (RunOk).
template <class T>
std::vector<T> Run1(const Scope& root, const Output& o, const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  return Values<T>(RunOk(root, {o}, feeds)[0]);
}

/// The shape of `o`, from one run of the scope's graph (RunOk).
inline std::vector<int64_t> ShapeOf(const Scope& root, const Output& o) {
  return RunOk(root, {o})[0].shape().dim_sizes();
}

/// Runs the shell command `cmd` (stderr too, bounded by `timeout 600`);
/// returns its exit status (pclose's) and puts its output in `output`.
inline int RunProgram(const std::string& cmd, std::string* output) {
  FILE* p = popen(("timeout 600 " + cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) *output += buf;
  return pclose(p);
}

/// A runtime of two worker threads (what the tests' machines have) and
/// `cpu_devices` CPU devices, and no GPU device even where the machine has
/// GPUs: the same devices everywhere (GPU tests ask for theirs).
inline RuntimeOptions TwoThreads(int cpu_devices = 1) {
  RuntimeOptions o;
  o.num_threads = 2;
  o.num_cpu_devices = cpu_devices;
  o.num_gpu_devices = 0;
  return o;
}

/// A runtime of `n` CPU devices (and two worker threads).
inline RuntimeOptions Cpus(int n) { return TwoThreads(n); }

/// The default runtime's first device (its CPU).
inline Device* Cpu() { return Runtime::Default()->devices()[0]; }

/// Options for a session on `rt`.
inline SessionOptions OnRuntime(Runtime* rt) {
  SessionOptions o;
  o.runtime = rt;
  return o;
}

/// A session on `rt` over the scope's graph; REQUIREs that it loads.
inline std::unique_ptr<Session> Open(Runtime* rt, const Scope& root) {
  SessionOptions so;
  so.runtime = rt;
  auto s = std::make_unique<Session>(so);
  REQUIRE(s->Create(ToDef(root)).ok());
  return s;
}

/// A session on the default runtime over the scope's graph; REQUIREs that it loads.
inline std::unique_ptr<Session> Open(const Scope& root) {
  auto s = std::make_unique<Session>();
  REQUIRE(s->Create(ToDef(root)).ok());
  return s;
}

/// The bytes of the file at `path`; REQUIREs that it opens.
inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Writes `bytes` to `path`, replacing what it held; REQUIREs success.
inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// One whole TFRecord of `data`, framed here from the format (not by
/// RecordWriter): the length as uint64 LE, the masked CRC32C of those 8 bytes,
/// the data, the masked CRC32C of the data.
inline std::string Frame(const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(static_cast<uint64_t>(data.size()) >> (8 * i));
  auto put32 = [&out](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  put32(crc32c::Mask(crc32c::Value(out.data(), 8)));
  out += data;
  put32(crc32c::Mask(crc32c::Value(data.data(), data.size())));
  return out;
}

/// A fresh directory under the system's temp directory, removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "af_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return File(name); }
  /// Names in the directory that contain `part`.
  std::vector<std::string> Find(const std::string& part) const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      if (e.path().filename().string().find(part) != std::string::npos) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::string path_;
};

/// A session on `rt` running steps with a bound (a step that should finish
/// does, long before), and on another thread (Start) for steps that wait.
class StepClient {
 public:
  static constexpr int64_t kStepBoundMs = 20000;
  StepClient(Runtime* rt, const proto::GraphDef& def) {
    SessionOptions so;
    so.runtime = rt;
    session = std::make_unique<Session>(so);
    REQUIRE(session->Create(def).ok());
  }
  /// No Catch assertions: safe on any thread.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* out, int64_t timeout_ms = kStepBoundMs) {
    RunOptions opts;
    opts.timeout_in_ms = timeout_ms;
    return session->Run(opts, feeds, fetches, targets, out);
  }
  std::vector<Tensor> RunOk(const std::vector<std::pair<std::string, Tensor>>& feeds,
                            const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
    std::vector<Tensor> out;
    Status s = Run(feeds, fetches, targets, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return out;
  }
  /// Starts a step on another thread; its Status comes through the future.
  std::future<Status> Start(std::vector<std::pair<std::string, Tensor>> feeds, std::vector<std::string> fetches,
                            std::vector<std::string> targets, std::vector<Tensor>* out,
                            int64_t timeout_ms = kStepBoundMs) {
    return std::async(std::launch::async, [=] { return Run(feeds, fetches, targets, out, timeout_ms); });
  }
  std::unique_ptr<Session> session;
};

/// Whether the step behind `f` still runs after a short while (a waiting op never finishes early).
inline bool StillWaiting(std::future<Status>& f) {
  return f.wait_for(std::chrono::milliseconds(150)) == std::future_status::timeout;
}
/// The step's Status; REQUIREs that it ends within 30 s.
inline Status Finished(std::future<Status>& f) {
  REQUIRE(f.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  return f.get();
}

}  // namespace test
}  // namespace actorflow
