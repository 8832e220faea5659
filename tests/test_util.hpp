// Helpers shared by the tests: tensors from values, and running a built graph.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "actors/session.hpp"
#include "core/tensor.hpp"
#include "graph/cc_ops.hpp"

namespace actorflow {
namespace test {

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

/// The scope's graph; REQUIREs that building it succeeded.
inline proto::GraphDef ToDef(const Scope& root) {
  proto::GraphDef def;
  Status s = root.ToGraphDef(&def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return def;
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

/// Runs the shell command `cmd` (stderr too, bounded by `timeout 600`);
/// returns its exit status (pclose's) and puts its output in `output`.
inline int RunProgram(const std::string& cmd, std::string* output) {
  FILE* p = popen(("timeout 600 " + cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) *output += buf;
  return pclose(p);
}

}  // namespace test
}  // namespace actorflow
