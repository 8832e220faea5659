// A small program using the installed library's public API: a graph with a
// variable, a step, a TensorFlow checkpoint saved and restored. Prints
// "y = [...]" and "restored w = [...]". It has a core/status.hpp of its own
// (core/status.hpp here), as many projects do.
#include <cstdio>
#include <string>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "core/status.hpp"  // the consumer's own, beside actorflow's core/status.hpp

using namespace actorflow;

int main(int argc, char** argv) {
  const std::string prefix = argc > 1 ? argv[1] : "/tmp/actorflow_consumer/model";
  std::printf("%s\n", consumer::OwnStatus());
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Const(root.WithOpName("w"), {{2.f, 0.f}, {0.f, 3.f}});
  auto y = ops::MatMul(root.WithOpName("y"), x, w);
  auto save = ops::SaveV2(root.WithOpName("save"), prefix, {"w"}, {""}, {w});
  auto restored = ops::RestoreV2(root.WithOpName("restore"), prefix, {"w"}, {""}, {DT_FLOAT});
  proto::GraphDef def;
  Status s = root.ToGraphDef(&def);
  Session session;
  if (s.ok()) s = session.Create(def);
  Tensor feed(DT_FLOAT, TensorShape{1, 2});
  feed.data<float>()[0] = 1.f;
  feed.data<float>()[1] = 1.f;
  std::vector<Tensor> out;
  if (s.ok()) s = session.Run({{"x", feed}}, {"y"}, {"save"}, &out);
  if (s.ok()) std::printf("y = [%g, %g]\n", out[0].data<float>()[0], out[0].data<float>()[1]);
  if (s.ok()) s = session.Run({}, {restored[0].name()}, {}, &out);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  const float* r = out[0].data<float>();
  std::printf("restored w = [%g, %g, %g, %g]\n", r[0], r[1], r[2], r[3]);
  return 0;
}
