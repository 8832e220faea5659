// Checkpoint save and restore throughput: 8 float tensors of 8 MiB (64 MiB)
// through SaveV2 and RestoreV2 in a Session, beside plain file I/O on the same
// bytes: write() of each buffer + fsync + close, and read() back into buffers.
//   bench_checkpoint [DIR]    (default: a new directory under $TMPDIR or /tmp)
//
// Both saves end in fsync, so both pay for the disk. Restores are measured
// after the saves, each reading the file it just wrote: both read from the page
// cache (warm), which is what a restore right after a save, or of a recently
// written checkpoint, sees; a cold read would measure the disk, the same for
// both. Save and restore figures come from implementations interleaved call
// by call (bench_util.hpp), so a slow spell of the shared disk hits both.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/checkpoint/checkpoint_state.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/client/session.hpp"

using namespace actorflow;

namespace {

constexpr int kTensors = 8;
constexpr int64_t kElements = 2 << 20;  // 8 MiB of float each

[[noreturn]] void Die(const std::string& what, const Status& s = Status::OK()) {
  std::fprintf(stderr, "bench_checkpoint: %s %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

void PlainWrite(const std::string& path, const std::vector<Tensor>& tensors) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + path);
  for (const Tensor& t : tensors) {
    const char* p = static_cast<const char*>(t.raw_data());
    for (size_t left = t.TotalBytes(); left > 0;) {
      const ssize_t w = ::write(fd, p, left);
      if (w <= 0) Die("write " + path);
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) Die("fsync " + path);
}

void PlainRead(const std::string& path, std::vector<Tensor>* tensors) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Die("open " + path);
  for (Tensor& t : *tensors) {
    char* p = static_cast<char*>(t.raw_data());
    for (size_t left = t.TotalBytes(); left > 0;) {
      const ssize_t r = ::read(fd, p, left);
      if (r <= 0) Die("read " + path);
      p += r;
      left -= static_cast<size_t>(r);
    }
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::ScratchDir scratch(argc > 1 ? argv[1] : "", "af_bench_ckpt");
  const std::string& dir = scratch.path();
  const std::string prefix = dir + "/model";
  const std::string plain_path = dir + "/plain.bin";

  Scope root = Scope::NewRootScope();
  std::vector<Output> inputs;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<Tensor> originals;
  Tensor names(DT_STRING, TensorShape{kTensors}), slices(DT_STRING, TensorShape{kTensors});
  for (int i = 0; i < kTensors; ++i) {
    const std::string name = "t" + std::to_string(i);
    inputs.push_back(ops::Placeholder(root.WithOpName(name), DT_FLOAT));
    Tensor t(DT_FLOAT, TensorShape{kElements});
    for (int64_t j = 0; j < kElements; ++j) t.data<float>()[j] = static_cast<float>((j * 31 + i) % 1000) * 0.5f;
    feeds.emplace_back(name, t);
    originals.push_back(t);
    names.data<std::string>()[i] = "layer" + std::to_string(i) + "/kernel";
  }
  auto save = ops::SaveV2(root.WithOpName("save"), prefix, names, slices, inputs);
  auto restored = ops::RestoreV2(root.WithOpName("restore"), prefix, names, slices,
                                 DataTypeVector(kTensors, DT_FLOAT));
  proto::GraphDef def;
  Status s = root.ToGraphDef(&def);
  if (!s.ok()) Die("building the graph:", s);
  Session session;
  if (!(s = session.Create(def)).ok()) Die("Session::Create:", s);
  std::vector<std::string> fetches;
  for (const auto& o : restored) fetches.push_back(o.name());

  std::vector<Tensor> out;
  auto af_save = [&] {
    Status st = session.Run(feeds, {}, {save.name()}, &out);
    if (!st.ok()) Die("SaveV2:", st);
  };
  auto af_restore = [&] {
    Status st = session.Run({}, fetches, {}, &out);
    if (!st.ok()) Die("RestoreV2:", st);
  };
  std::vector<Tensor> plain_buffers;
  for (int i = 0; i < kTensors; ++i) plain_buffers.emplace_back(DT_FLOAT, TensorShape{kElements});
  auto plain_write = [&] { PlainWrite(plain_path, originals); };
  auto plain_read = [&] { PlainRead(plain_path, &plain_buffers); };

  // Both paths once, checked, before anything is timed.
  af_save();
  af_restore();
  for (int i = 0; i < kTensors; ++i)
    if (!TensorEquals(out[i], originals[i])) Die("restored tensor " + std::to_string(i) + " differs");
  plain_write();
  plain_read();

  const double bytes = static_cast<double>(kTensors) * kElements * sizeof(float);
  const std::string params = "\"tensors\":" + std::to_string(kTensors) + ",\"bytes\":" +
                             std::to_string(static_cast<int64_t>(bytes)) + ",\"threads\":" +
                             std::to_string(Runtime::Default()->num_threads());
  const int rounds = 15;
  auto save_stats = bench::MeasureInterleaved(rounds, 1, {af_save, plain_write});
  auto restore_stats = bench::MeasureInterleaved(rounds, 1, {af_restore, plain_read});
  const char* impls[] = {"actorflow", "plain_io"};
  for (int i = 0; i < 2; ++i)
    bench::Print("checkpoint_save", params + ",\"impl\":\"" + impls[i] + "\"", "throughput", "MB/s", save_stats[i],
                 bytes / 1e6, true);
  for (int i = 0; i < 2; ++i)
    bench::Print("checkpoint_restore", params + ",\"impl\":\"" + impls[i] + "\"", "throughput", "MB/s",
                 restore_stats[i], bytes / 1e6, true);

  std::error_code ec;
  (void)DeleteCheckpoint(prefix);
  std::filesystem::remove(plain_path, ec);
  return 0;
}
