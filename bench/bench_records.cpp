// TFRecord read throughput: a ~200 MB file of 64-float records (256-byte
// payloads, 272 bytes framed) read front to back by io::RecordReader (both
// CRC-32Cs checked per record), beside plain buffered I/O of the same file:
// std::fread in 1 MiB blocks, counting the bytes. Both read from the page
// cache (the file was just written, and a warm-up round reads it first), so
// the figures are of the reading code, not of the disk; they come from the two
// implementations interleaved pass by pass (bench_util.hpp).
//   bench_records [DIR] [MB]   (default: a new directory under $TMPDIR or /tmp; 200 MB)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "actorflow/core/io/record_reader.hpp"
#include "actorflow/core/io/record_writer.hpp"

using namespace actorflow;

namespace {

constexpr size_t kFloatsPerRecord = 64;
constexpr size_t kPayload = kFloatsPerRecord * sizeof(float);

[[noreturn]] void Die(const std::string& what, const Status& s = Status::OK()) {
  std::fprintf(stderr, "bench_records: %s %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

void WriteFile(const std::string& path, int64_t records) {
  std::unique_ptr<io::RecordWriter> writer;
  Status s = io::RecordWriter::Create(path, {}, &writer);
  if (!s.ok()) Die("creating", s);
  std::vector<float> values(kFloatsPerRecord);
  for (int64_t r = 0; r < records; ++r) {
    for (size_t i = 0; i < kFloatsPerRecord; ++i) values[i] = static_cast<float>((r * 31 + i) % 1000) * 0.5f;
    s = writer->WriteRecord(std::string_view(reinterpret_cast<const char*>(values.data()), kPayload));
    if (!s.ok()) Die("writing", s);
  }
  if (!(s = writer->Close()).ok()) Die("closing", s);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::ScratchDir scratch(argc > 1 ? argv[1] : "", "af_bench_records");
  const std::string& dir = scratch.path();
  const double megabytes = argc > 2 ? std::atof(argv[2]) : 200.0;
  const int64_t records = static_cast<int64_t>(megabytes * 1e6 / (kPayload + 16));
  if (records <= 0) Die("MB must be positive");
  const std::string path = dir + "/bench.tfrecord";
  WriteFile(path, records);
  const uint64_t file_bytes = static_cast<uint64_t>(records) * (kPayload + 16);

  int64_t sink = 0;
  auto af_read = [&] {
    std::unique_ptr<io::RecordReader> reader;
    Status s = io::RecordReader::Open(path, io::Compression::kNone, &reader);
    if (!s.ok()) Die("opening", s);
    std::string record;
    int64_t n = 0;
    while ((s = reader->ReadRecord(&record)).ok()) n += static_cast<int64_t>(record.size());
    if (!errors::IsOutOfRange(s)) Die("reading", s);
    if (n != records * static_cast<int64_t>(kPayload)) Die("read " + std::to_string(n) + " bytes of records");
    sink += n;
  };
  std::vector<char> block(1 << 20);
  auto plain_read = [&] {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) Die("fopen " + path);
    uint64_t n = 0;
    for (size_t got; (got = std::fread(block.data(), 1, block.size(), f)) > 0;) n += got;
    std::fclose(f);
    if (n != file_bytes) Die("fread read " + std::to_string(n) + " bytes");
    sink += static_cast<int64_t>(n);
  };

  const auto stats = bench::MeasureInterleaved(7, 1, {af_read, plain_read});
  const std::string params = "\"records\":" + std::to_string(records) + ",\"record_bytes\":" +
                             std::to_string(kPayload) + ",\"file_bytes\":" + std::to_string(file_bytes);
  const char* impls[] = {"actorflow", "plain_fread"};
  for (int i = 0; i < 2; ++i)
    bench::Print("records_read", params + ",\"impl\":\"" + impls[i] + "\"", "throughput", "MB/s", stats[i],
                 static_cast<double>(file_bytes) / 1e6, true);
  if (sink == 42) std::puts("");  // keeps the reads observable

  std::error_code ec;
  std::filesystem::remove(path, ec);
  return 0;
}
