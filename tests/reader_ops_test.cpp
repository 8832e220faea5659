// Reader ops through sessions (ops/io/reader_ops.cpp, reader_resource.hpp):
// each reader over plain and gzip files written with core/io, reading across
// files from a filename queue, ReaderReadUpTo batches, OutOfRange once the
// queue is closed and empty, damage reported and skipped, concurrent steps on
// one reader, shared readers; then the filename producer
// (client/train/input_producers.hpp). Every wait is bounded: a test fails, never hangs.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/reader_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/input_producers.hpp"
#include "actorflow/core/io/file_output_stream.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "actorflow/core/io/zlib_output_stream.hpp"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::MakeTensor;
using test::ToDef;
using test::Finished;
using test::StillWaiting;
using test::Strings;
using test::TwoThreads;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kStepBound = test::StepClient::kStepBoundMs;

/// Writes `bytes` to `path`, gzip-compressed when `gzip`.
void WriteFile(const std::string& path, const std::string& bytes, bool gzip) {
  std::unique_ptr<io::FileOutputStream> file;
  REQUIRE(io::FileOutputStream::Create(path, &file).ok());
  std::unique_ptr<io::OutputStream> out = std::move(file);
  if (gzip) out = std::make_unique<io::ZlibOutputStream>(std::move(out), io::Compression::kGzip);
  REQUIRE(out->Append(bytes.data(), bytes.size()).ok());
  REQUIRE(out->Close().ok());
}

void WriteTFRecords(const std::string& path, const std::vector<std::string>& records, bool gzip) {
  io::RecordWriterOptions o;
  o.compression = gzip ? io::Compression::kGzip : io::Compression::kNone;
  std::unique_ptr<io::RecordWriter> w;
  REQUIRE(io::RecordWriter::Create(path, o, &w).ok());
  for (const auto& r : records) REQUIRE(w->WriteRecord(r).ok());
  REQUIRE(w->Close().ok());
}

/// The keys a TFRecord file of `records` gives: "FILE:OFFSET" (12 header + data + 4 footer bytes each).
std::vector<std::string> TFRecordKeys(const std::string& path, const std::vector<std::string>& records) {
  std::vector<std::string> keys;
  uint64_t offset = 0;
  for (const auto& r : records) {
    keys.push_back(path + ":" + std::to_string(offset));
    offset += 16 + r.size();
  }
  return keys;
}

std::vector<std::string> StringValues(const Tensor& t) {
  REQUIRE(t.dtype() == DT_STRING);
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.NumElements());
}

using MakeReader = std::function<Output(const Scope&)>;

// A filename queue "files" and a reader "reader" with the ops around them:
//   names (fed [n] string) -> "enq"; "close";
//   "key", "value" (ReaderRead); n (fed int64) -> "keys", "values" (ReaderReadUpTo);
//   "num_records", "num_units", "reset".
proto::GraphDef ReaderGraph(const MakeReader& make_reader) {
  Scope root = Scope::NewRootScope();
  ops::QueueOptions qo;
  qo.shapes = {PartialTensorShape::Scalar()};
  Output files = ops::FIFOQueue(root.WithOpName("files"), {DT_STRING}, qo);
  auto names = ops::Placeholder(root.WithOpName("names"), DT_STRING);
  ops::QueueEnqueueMany(root.WithOpName("enq"), files, {names});
  ops::QueueClose(root.WithOpName("close"), files);
  Output reader = make_reader(root.WithOpName("reader"));
  auto kv = ops::ReaderRead(root, reader, files);
  ops::Identity(root.WithOpName("key"), kv.key);
  ops::Identity(root.WithOpName("value"), kv.value);
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT64);
  auto batch = ops::ReaderReadUpTo(root, reader, files, n);
  ops::Identity(root.WithOpName("keys"), batch.keys);
  ops::Identity(root.WithOpName("values"), batch.values);
  ops::Identity(root.WithOpName("num_records"), ops::ReaderNumRecordsProduced(root, reader));
  ops::Identity(root.WithOpName("num_units"), ops::ReaderNumWorkUnitsCompleted(root, reader));
  ops::ReaderReset(root.WithOpName("reset"), reader);
  return ToDef(root);
}

class Client : public test::StepClient {
 public:
  using StepClient::StepClient;
  void Enqueue(const std::vector<std::string>& files) { RunOk({{"names", Strings(files)}}, {}, {"enq"}); }
  void Close() { RunOk({}, {}, {"close"}); }
  /// One ReaderRead: (key, value), or the failing status in *s.
  std::pair<std::string, std::string> Read(Status* s = nullptr) {
    std::vector<Tensor> out;
    Status st = Run({}, {"key", "value"}, {}, &out);
    if (s) *s = st;
    if (!st.ok()) {
      INFO(st.ToString());
      REQUIRE(s != nullptr);
      return {};
    }
    return {out[0].scalar<std::string>(), out[1].scalar<std::string>()};
  }
  Status ReadUpTo(int64_t n, std::vector<std::string>* keys, std::vector<std::string>* values) {
    std::vector<Tensor> out;
    Status s = Run({{"n", Tensor::Scalar<int64_t>(n)}}, {"keys", "values"}, {}, &out);
    if (s.ok()) {
      *keys = StringValues(out[0]);
      *values = StringValues(out[1]);
    }
    return s;
  }
  int64_t NumRecords() { return RunOk({}, {"num_records"}, {})[0].scalar<int64_t>(); }
  int64_t NumUnits() { return RunOk({}, {"num_units"}, {})[0].scalar<int64_t>(); }
  std::future<Status> Start(std::vector<std::string> fetches, std::vector<Tensor>* out,
                            int64_t timeout_ms = kStepBound) {
    return StepClient::Start({}, std::move(fetches), {}, out, timeout_ms);
  }
};

MakeReader TFRecord(const std::string& compression = "") {
  return [compression](const Scope& s) {
    ops::TFRecordReaderOptions o;
    o.compression_type = compression;
    return ops::TFRecordReader(s, o);
  };
}

}  // namespace

TEST_CASE("readers: TFRecordReaderV2 reads the records of several files in queue order, plain and gzip") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  for (bool gzip : {false, true}) {
    INFO((gzip ? "GZIP" : "plain"));
    const std::string a = dir.File(gzip ? "a.tfrecord.gz" : "a.tfrecord");
    const std::string b = dir.File(gzip ? "b.tfrecord.gz" : "b.tfrecord");
    const std::vector<std::string> ra = {"alpha", "", "gamma-gamma"}, rb = {"delta", std::string(1000, 'x')};
    WriteTFRecords(a, ra, gzip);
    WriteTFRecords(b, rb, gzip);
    Client c(&rt, ReaderGraph(TFRecord(gzip ? "GZIP" : "")));
    c.Enqueue({a, b});
    c.Close();
    std::vector<std::string> keys = TFRecordKeys(a, ra), want_keys = TFRecordKeys(b, rb), values = ra;
    keys.insert(keys.end(), want_keys.begin(), want_keys.end());
    values.insert(values.end(), rb.begin(), rb.end());
    for (size_t i = 0; i < keys.size(); ++i) {
      auto kv = c.Read();
      CHECK(kv.first == keys[i]);
      CHECK(kv.second == values[i]);
    }
    Status s;
    c.Read(&s);
    CHECK(s.code() == Code::kOutOfRange);
    CHECK(c.NumRecords() == 5);
    CHECK(c.NumUnits() == 2);
  }
}

TEST_CASE("readers: TextLineReaderV2 skips header lines; keys are FILE:LINE; plain and gzip") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  for (bool gzip : {false, true}) {
    INFO((gzip ? "GZIP" : "plain"));
    const std::string a = dir.File(gzip ? "a.csv.gz" : "a.csv");
    const std::string b = dir.File(gzip ? "b.csv.gz" : "b.csv");
    const std::string empty = dir.File("empty.csv");
    WriteFile(a, "x,y\n1,2\n3,4\n", gzip);
    WriteFile(b, "x,y\r\n5,6", gzip);  // CRLF, and a last line without '\n'
    WriteFile(empty, "", false);
    auto make = [gzip](const Scope& s) {
      ops::TextLineReaderOptions o;
      o.skip_header_lines = 1;
      if (gzip) o.compression_type = "GZIP";
      return ops::TextLineReader(s, o);
    };
    Client c(&rt, ReaderGraph(make));
    c.Enqueue({a, b});
    if (!gzip) c.Enqueue({empty});  // no records: skipped
    c.Close();
    CHECK(c.Read() == std::make_pair(a + ":2", std::string("1,2")));
    CHECK(c.Read() == std::make_pair(a + ":3", std::string("3,4")));
    CHECK(c.Read() == std::make_pair(b + ":2", std::string("5,6")));
    Status s;
    c.Read(&s);
    CHECK(s.code() == Code::kOutOfRange);
    CHECK(c.NumRecords() == 3);
  }
}

TEST_CASE("readers: FixedLengthRecordReaderV2 reads records between header and footer; plain and gzip") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  for (bool gzip : {false, true}) {
    INFO((gzip ? "GZIP" : "plain"));
    const std::string a = dir.File(gzip ? "a.bin.gz" : "a.bin");
    WriteFile(a, "HHabcdefghiF", gzip);  // header 2, three records of 3, footer 1
    auto make = [gzip](const Scope& s) {
      ops::FixedLengthRecordReaderOptions o;
      o.header_bytes = 2;
      o.record_bytes = 3;
      o.footer_bytes = 1;
      if (gzip) o.encoding = "GZIP";
      return ops::FixedLengthRecordReader(s, o);
    };
    Client c(&rt, ReaderGraph(make));
    c.Enqueue({a});
    c.Close();
    CHECK(c.Read() == std::make_pair(a + ":0", std::string("abc")));
    std::vector<std::string> keys, values;
    REQUIRE(c.ReadUpTo(5, &keys, &values).ok());
    CHECK(keys == std::vector<std::string>{a + ":1", a + ":2"});
    CHECK(values == std::vector<std::string>{"def", "ghi"});
    Status s = c.ReadUpTo(5, &keys, &values);
    CHECK(s.code() == Code::kOutOfRange);
  }
}

TEST_CASE("readers: a FixedLengthRecordReaderV2 declared with record_bytes 0 fails, naming the node") {
  Runtime rt(TwoThreads());
  auto make = [](const Scope& s) { return ops::FixedLengthRecordReader(s, {}); };
  SessionOptions so;
  so.runtime = &rt;
  Session session(so);
  REQUIRE(session.Create(ReaderGraph(make)).ok());
  std::vector<Tensor> out;
  RunOptions opts;
  opts.timeout_in_ms = kStepBound;
  Status s = session.Run(opts, {}, {"num_records"}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("reader"));
}

TEST_CASE("readers: size attrs that are negative, overflow or exceed max_record_bytes fail, naming node and attr") {
  Runtime rt(TwoThreads());
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    const char* attr;
    MakeReader make;
  };
  auto fixed = [](int64_t header, int64_t record, int64_t footer, int64_t hop, int64_t max) {
    return [=](const Scope& s) {
      ops::FixedLengthRecordReaderOptions o;
      o.header_bytes = header;
      o.record_bytes = record;
      o.footer_bytes = footer;
      o.hop_bytes = hop;
      o.max_record_bytes = max;
      return ops::FixedLengthRecordReader(s, o);
    };
  };
  const std::vector<Case> cases = {
      {"record_bytes", fixed(0, kMax, 1, 0, 0)},  // record_bytes + footer_bytes overflows int64
      {"footer_bytes", fixed(0, 1, kMax, 0, 0)},
      {"header_bytes", fixed(-1, 4, 0, 0, 0)},
      {"hop_bytes", fixed(0, 4, 0, -8, 0)},
      {"header_bytes", fixed(kMax, 4, 0, 0, 0)},
      {"record_bytes + footer_bytes", fixed(0, 8, 4, 0, 10)},
      {"max_record_bytes", fixed(0, 8, 0, 0, -1)},
      {"max_record_bytes",
       [](const Scope& s) {
         ops::TFRecordReaderOptions o;
         o.max_record_bytes = -5;
         return ops::TFRecordReader(s, o);
       }},
      {"skip_header_lines",
       [](const Scope& s) {
         ops::TextLineReaderOptions o;
         o.skip_header_lines = -1;
         return ops::TextLineReader(s, o);
       }},
  };
  for (const Case& c : cases) {
    SessionOptions so;
    so.runtime = &rt;
    Session session(so);
    REQUIRE(session.Create(ReaderGraph(c.make)).ok());
    std::vector<Tensor> out;
    RunOptions opts;
    opts.timeout_in_ms = kStepBound;
    Status s = session.Run(opts, {}, {"num_records"}, {}, &out);
    INFO(c.attr << ": " << s.ToString());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Contains("reader") && Contains(c.attr));
  }
}

TEST_CASE("readers: a record or line over max_record_bytes is DataLoss naming file and offset; the next file is read") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  for (bool gzip : {false, true}) {
    INFO((gzip ? "GZIP" : "plain"));
    const std::string big = dir.File(gzip ? "big.tfrecord.gz" : "big.tfrecord");
    const std::string next = dir.File(gzip ? "next.tfrecord.gz" : "next.tfrecord");
    WriteTFRecords(big, {"0123456789", "0123456789A"}, gzip);
    WriteTFRecords(next, {"n0"}, gzip);
    auto make = [gzip](const Scope& s) {
      ops::TFRecordReaderOptions o;
      o.compression_type = gzip ? "GZIP" : "";
      o.max_record_bytes = 10;
      return ops::TFRecordReader(s, o);
    };
    Client c(&rt, ReaderGraph(make));
    c.Enqueue({big, next});
    c.Close();
    CHECK(c.Read().second == "0123456789");  // at the bound
    Status s;
    c.Read(&s);
    CHECK(s.code() == Code::kDataLoss);
    CHECK_THAT(s.message(), Contains(big) && Contains("offset 26") && Contains("max_record_bytes"));
    CHECK(c.Read() == std::make_pair(next + ":0", std::string("n0")));

    const std::string text = dir.File(gzip ? "a.csv.gz" : "a.csv");
    WriteFile(text, "fits\nthis is too long\n", gzip);
    auto lines = [gzip](const Scope& s) {
      ops::TextLineReaderOptions o;
      if (gzip) o.compression_type = "GZIP";
      o.max_record_bytes = 8;
      return ops::TextLineReader(s, o);
    };
    Client t(&rt, ReaderGraph(lines));
    t.Enqueue({text});
    t.Close();
    CHECK(t.Read().second == "fits");
    t.Read(&s);
    CHECK(s.code() == Code::kDataLoss);
    CHECK_THAT(s.message(), Contains(text) && Contains("offset 5"));
  }
}

TEST_CASE("readers: ReaderReadUpToV2 returns batches of one file, fewer at a file's end, then OutOfRange") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  const std::string a = dir.File("a.tfrecord"), b = dir.File("b.tfrecord");
  WriteTFRecords(a, {"a0", "a1", "a2", "a3", "a4"}, false);
  WriteTFRecords(b, {"b0", "b1", "b2"}, false);
  Client c(&rt, ReaderGraph(TFRecord()));
  c.Enqueue({a, b});
  c.Close();
  std::vector<std::string> keys, values;
  REQUIRE(c.ReadUpTo(0, &keys, &values).ok());
  CHECK(keys.empty());
  REQUIRE(c.ReadUpTo(3, &keys, &values).ok());
  CHECK(values == std::vector<std::string>{"a0", "a1", "a2"});
  CHECK(keys[0] == a + ":0");
  REQUIRE(c.ReadUpTo(3, &keys, &values).ok());
  CHECK(values == std::vector<std::string>{"a3", "a4"});  // a batch never spans files
  REQUIRE(c.ReadUpTo(3, &keys, &values).ok());
  CHECK(values == std::vector<std::string>{"b0", "b1", "b2"});
  CHECK(keys[0] == b + ":0");
  Status s = c.ReadUpTo(3, &keys, &values);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(c.NumRecords() == 8);
  CHECK(c.NumUnits() == 2);
  s = c.ReadUpTo(-1, &keys, &values);
  CHECK(s.code() == Code::kInvalidArgument);
}

TEST_CASE("readers: a read waits for a filename without holding a thread; OutOfRange once the queue is closed") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  const std::string a = dir.File("a.tfrecord");
  WriteTFRecords(a, {"only"}, false);
  Client c(&rt, ReaderGraph(TFRecord()));
  std::vector<Tensor> out1, out2;
  // Two reads wait: the first for a filename, the second behind it. Other
  // steps of the 2-thread runtime still run meanwhile.
  auto first = c.Start({"value"}, &out1);
  REQUIRE(StillWaiting(first));
  auto second = c.Start({"value"}, &out2);
  REQUIRE(StillWaiting(second));
  CHECK(c.NumRecords() == 0);
  c.Enqueue({a});
  REQUIRE(Finished(first).ok());
  CHECK(out1[0].scalar<std::string>() == "only");
  REQUIRE(StillWaiting(second));  // the file is done: it waits for the next filename
  c.Close();
  CHECK(Finished(second).code() == Code::kOutOfRange);
}

TEST_CASE("readers: a step cancelled while its read waits its turn fails; the reader goes on") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  const std::string a = dir.File("a.tfrecord");
  WriteTFRecords(a, {"r0", "r1"}, false);
  Client c(&rt, ReaderGraph(TFRecord()));
  std::vector<Tensor> out1, out2;
  auto first = c.Start({"value"}, &out1);  // waits for a filename
  REQUIRE(StillWaiting(first));
  auto second = c.Start({"value"}, &out2, /*timeout_ms=*/200);  // waits behind it, then its deadline passes
  CHECK(Finished(second).code() == Code::kDeadlineExceeded);
  c.Enqueue({a});
  REQUIRE(Finished(first).ok());
  CHECK(out1[0].scalar<std::string>() == "r0");
  CHECK(c.Read().second == "r1");  // the cancelled read took nothing
}

TEST_CASE("readers: closing the session cancels reads waiting for a filename or their turn; shutdown never hangs") {
  std::future<Status> first, second;
  std::vector<Tensor> out1, out2;
  {
    auto rt = std::make_unique<Runtime>(TwoThreads());
    auto c = std::make_unique<Client>(rt.get(), ReaderGraph(TFRecord()));
    first = c->Start({"value"}, &out1, 0);  // no deadline: only the close ends them
    REQUIRE(StillWaiting(first));
    second = c->Start({"value"}, &out2, 0);
    REQUIRE(StillWaiting(second));
    REQUIRE(c->session->Close().ok());
    CHECK(Finished(first).code() == Code::kCancelled);
    CHECK(Finished(second).code() == Code::kCancelled);
    c.reset();
  }  // the runtime goes
}

TEST_CASE("readers: a damaged TFRecord file is DataLoss naming file and offset; the next read takes the next file") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  const std::string good = dir.File("good.tfrecord"), bad = dir.File("bad.tfrecord"), next = dir.File("next.tfrecord");
  WriteTFRecords(good, {"g0"}, false);
  WriteTFRecords(bad, {"b0", "b1", "b2"}, false);
  WriteTFRecords(next, {"n0", "n1"}, false);
  {  // flip a byte of b1's data: its data CRC fails
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(18 + 12);
    f.put('X');
  }
  const std::string missing = dir.File("missing.tfrecord");
  SECTION("ReaderRead") {
    Client c(&rt, ReaderGraph(TFRecord()));
    c.Enqueue({good, bad, missing, next});
    c.Close();
    CHECK(c.Read().second == "g0");
    CHECK(c.Read().second == "b0");
    Status s;
    c.Read(&s);
    CHECK(s.code() == Code::kDataLoss);
    CHECK_THAT(s.message(), Contains(bad) && Contains("18"));
    c.Read(&s);  // the missing file
    CHECK(s.code() == Code::kNotFound);
    CHECK_THAT(s.message(), Contains(missing));
    CHECK(c.Read() == std::make_pair(next + ":0", std::string("n0")));
    CHECK(c.Read().second == "n1");
    c.Read(&s);
    CHECK(s.code() == Code::kOutOfRange);
  }
  SECTION("ReaderReadUpTo: the records before the damage come first, the error with the next read") {
    Client c(&rt, ReaderGraph(TFRecord()));
    c.Enqueue({bad, next});
    c.Close();
    std::vector<std::string> keys, values;
    REQUIRE(c.ReadUpTo(10, &keys, &values).ok());
    CHECK(values == std::vector<std::string>{"b0"});
    Status s = c.ReadUpTo(10, &keys, &values);
    CHECK(s.code() == Code::kDataLoss);
    CHECK_THAT(s.message(), Contains(bad));
    REQUIRE(c.ReadUpTo(10, &keys, &values).ok());
    CHECK(values == std::vector<std::string>{"n0", "n1"});
  }
}

TEST_CASE("readers: concurrent steps reading one reader get distinct records, none lost") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  std::vector<std::string> files;
  std::set<std::string> all;
  for (int f = 0; f < 4; ++f) {
    files.push_back(dir.File("part-" + std::to_string(f) + ".tfrecord.gz"));
    std::vector<std::string> records;
    for (int r = 0; r < 50; ++r) records.push_back("f" + std::to_string(f) + "r" + std::to_string(r));
    WriteTFRecords(files.back(), records, true);
    all.insert(records.begin(), records.end());
  }
  Client c(&rt, ReaderGraph(TFRecord("GZIP")));
  c.Enqueue(files);
  c.Close();
  constexpr int kThreads = 4;
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::future<Status>> workers;
  for (int t = 0; t < kThreads; ++t) {
    // No Catch assertion off the main thread (Catch is not thread-safe): a
    // worker's Status says what went wrong; the main thread checks.
    workers.push_back(std::async(std::launch::async, [&c, &got, t] {
      for (;;) {
        std::vector<Tensor> out;
        // Single reads and batches of 3 interleave on the one reader.
        Status s = t % 2 == 0 ? c.Run({}, {"value"}, {}, &out)
                              : c.Run({{"n", Tensor::Scalar<int64_t>(3)}}, {"values"}, {}, &out);
        if (!s.ok()) return s;
        if (out[0].dtype() != DT_STRING) return errors::Internal("a read gave ", DataTypeString(out[0].dtype()));
        const std::string* v = out[0].data<std::string>();
        got[static_cast<size_t>(t)].insert(got[static_cast<size_t>(t)].end(), v, v + out[0].NumElements());
      }
    }));
  }
  std::vector<std::string> merged;
  for (int t = 0; t < kThreads; ++t) {
    CHECK(Finished(workers[static_cast<size_t>(t)]).code() == Code::kOutOfRange);
    merged.insert(merged.end(), got[static_cast<size_t>(t)].begin(), got[static_cast<size_t>(t)].end());
  }
  CHECK(merged.size() == all.size());
  CHECK(std::set<std::string>(merged.begin(), merged.end()) == all);
  CHECK(c.NumRecords() == 200);
}

TEST_CASE("readers: a shared reader is one reader for two sessions; declared otherwise it is refused") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  const std::string a = dir.File("a.tfrecord");
  WriteTFRecords(a, {"r0", "r1", "r2"}, false);
  auto shared = [](const Scope& s) {
    ops::TFRecordReaderOptions o;
    o.shared_name = "reader_ops_test_shared";
    return ops::TFRecordReader(s, o);
  };
  Client c1(&rt, ReaderGraph(shared));
  Client c2(&rt, ReaderGraph(shared));
  // Each session has its own (private) filename queue; the reader is one.
  c1.Enqueue({a});
  CHECK(c1.Read().second == "r0");
  CHECK(c2.Read().second == "r1");  // the shared reader is in a's file still
  CHECK(c1.NumRecords() == 2);
  auto other = [](const Scope& s) {
    ops::TextLineReaderOptions o;
    o.shared_name = "reader_ops_test_shared";
    return ops::TextLineReader(s, o);
  };
  Client c3(&rt, ReaderGraph(other));
  std::vector<Tensor> out;
  Status s = c3.Run({}, {"num_records"}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("reader_ops_test_shared") && Contains("TFRecordReaderV2") &&
                              Contains("TextLineReaderV2"));
}

TEST_CASE("readers: ReaderResetV2 drops the current file and zeroes the counters; IdentityReaderV2 gives work units") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  const std::string a = dir.File("a.tfrecord"), b = dir.File("b.tfrecord");
  WriteTFRecords(a, {"a0", "a1"}, false);
  WriteTFRecords(b, {"b0"}, false);
  {
    Client c(&rt, ReaderGraph(TFRecord()));
    c.Enqueue({a, b});
    CHECK(c.Read().second == "a0");
    CHECK(c.NumRecords() == 1);
    c.RunOk({}, {}, {"reset"});
    CHECK(c.NumRecords() == 0);
    CHECK(c.Read().second == "b0");  // a1 was dropped with a's file
  }
  {
    Client c(&rt, ReaderGraph([](const Scope& s) { return ops::IdentityReader(s); }));
    c.Enqueue({"unit-1", "unit-2"});
    c.Close();
    CHECK(c.Read() == std::make_pair(std::string("unit-1"), std::string("unit-1")));
    CHECK(c.Read() == std::make_pair(std::string("unit-2"), std::string("unit-2")));
    Status s;
    c.Read(&s);
    CHECK(s.code() == Code::kOutOfRange);
    CHECK(c.NumUnits() == 2);
  }
}

namespace {

// A string input producer over `names` with an "all" dequeue-up-to(100) of
// its queue; the enqueue, close and init_local ops by name.
struct ProducerGraph {
  ProducerGraph(const std::vector<std::string>& names, const ops::InputProducerOptions& o) {
    Scope root = Scope::NewRootScope();
    InputProducer p = StringInputProducer(root, Strings(names), o);
    ops::Identity(root.WithOpName("all"), ops::QueueDequeueUpTo(root, p.queue, 100, {DT_STRING})[0]);
    ops::Identity(root.WithOpName("size"), ops::QueueSize(root, p.queue));
    LocalVariablesInitializer(root);
    REQUIRE(root.ok());
    enqueue = p.enqueue.node()->name();
    close = p.close.node()->name();
    has_epochs = p.epochs.valid();
    def = ToDef(root);
  }
  proto::GraphDef def;
  std::string enqueue, close;
  bool has_epochs = false;
};

// Runs the producer's enqueue `epochs` times (each must succeed), closes the
// queue and returns what it holds.
std::vector<std::string> Produce(Runtime* rt, const ProducerGraph& g, int epochs) {
  Client c(rt, g.def);
  c.RunOk({}, {}, {"init_local"});
  for (int e = 0; e < epochs; ++e) c.RunOk({}, {}, {g.enqueue});
  c.RunOk({}, {}, {g.close});
  return StringValues(c.RunOk({}, {"all"}, {})[0]);
}

}  // namespace

TEST_CASE("StringInputProducer: each filename once per epoch, reshuffled with a seed; OutOfRange after num_epochs") {
  Runtime rt(TwoThreads());
  const std::vector<std::string> names = {"f0", "f1", "f2", "f3", "f4", "f5", "f6"};
  ops::InputProducerOptions o;
  o.num_epochs = 3;
  o.seed = 5;
  ProducerGraph g(names, o);
  REQUIRE(g.has_epochs);
  Client c(&rt, g.def);
  c.RunOk({}, {}, {"init_local"});
  for (int e = 0; e < 3; ++e) c.RunOk({}, {}, {g.enqueue});
  std::vector<Tensor> out;
  Status s = c.Run({}, {}, {g.enqueue}, &out);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(c.RunOk({}, {"size"}, {})[0].scalar<int32_t>() == 21);  // the failed run enqueued nothing
  c.RunOk({}, {}, {g.close});
  const std::vector<std::string> got = StringValues(c.RunOk({}, {"all"}, {})[0]);
  REQUIRE(got.size() == 21);
  std::set<std::vector<std::string>> orders;
  for (int e = 0; e < 3; ++e) {
    std::vector<std::string> epoch(got.begin() + 7 * e, got.begin() + 7 * (e + 1));
    orders.insert(epoch);
    std::sort(epoch.begin(), epoch.end());
    CHECK(epoch == names);  // each filename exactly once per epoch
  }
  CHECK(orders.size() > 1);          // reshuffled per epoch
  CHECK(orders.count(names) == 0);   // (with this seed no epoch keeps the given order)
  CHECK(Produce(&rt, g, 3) == got);  // a fixed seed repeats in a new session
  o.seed = 6;
  CHECK(Produce(&rt, ProducerGraph(names, o), 3) != got);
}

TEST_CASE("StringInputProducer: unshuffled and without num_epochs, every run enqueues the list in order") {
  Runtime rt(TwoThreads());
  const std::vector<std::string> names = {"a", "b", "c"};
  ops::InputProducerOptions o;
  o.shuffle = false;
  ProducerGraph g(names, o);
  CHECK_FALSE(g.has_epochs);
  CHECK(Produce(&rt, g, 4) == std::vector<std::string>{"a", "b", "c", "a", "b", "c", "a", "b", "c", "a", "b", "c"});
}

TEST_CASE("StringInputProducer feeding a reader: every record once per epoch, then OutOfRange") {
  Runtime rt(TwoThreads());
  test::TempDir dir("af_reader_ops_test");
  std::vector<std::string> files;
  std::multiset<std::string> want;
  for (int f = 0; f < 3; ++f) {
    files.push_back(dir.File("data-" + std::to_string(f) + ".tfrecord"));
    std::vector<std::string> records;
    for (int r = 0; r <= f; ++r) records.push_back("f" + std::to_string(f) + "r" + std::to_string(r));
    WriteTFRecords(files.back(), records, false);
    for (int epoch = 0; epoch < 2; ++epoch) want.insert(records.begin(), records.end());
  }
  Scope root = Scope::NewRootScope();
  ops::InputProducerOptions o;
  o.num_epochs = 2;
  o.seed = 3;
  o.capacity = 4;  // less than two epochs: the enqueue waits for the reader part of the time
  InputProducer p = StringInputProducer(root.WithOpName("filenames"), Strings(files), o);
  Output reader = ops::TFRecordReader(root.WithOpName("reader"));
  ops::Identity(root.WithOpName("value"), ops::ReaderRead(root, reader, p.queue).value);
  ops::Identity(root.WithOpName("num_units"), ops::ReaderNumWorkUnitsCompleted(root, reader));
  LocalVariablesInitializer(root);
  CHECK(p.enqueue.node()->name() == "filenames/input_producer_EnqueueMany");
  Client c(&rt, ToDef(root));
  c.RunOk({}, {}, {"init_local"});
  // The producer's loop (a QueueRunner's, by hand): enqueue until OutOfRange, then close.
  auto producer = std::async(std::launch::async, [&c, &p] {
    for (int i = 0; i < 10; ++i) {
      std::vector<Tensor> out;
      Status s = c.Run({}, {}, {p.enqueue.node()->name()}, &out);
      if (errors::IsOutOfRange(s)) return c.Run({}, {}, {p.close.node()->name()}, &out);
      if (!s.ok()) return s;
    }
    return errors::Internal("the producer did not stop after num_epochs");
  });
  std::multiset<std::string> got;
  Status s;
  for (int i = 0; i < 100; ++i) {
    std::vector<Tensor> out;
    s = c.Run({}, {"value"}, {}, &out);
    if (!s.ok()) break;
    got.insert(out[0].scalar<std::string>());
  }
  CHECK(s.code() == Code::kOutOfRange);
  REQUIRE(Finished(producer).ok());
  CHECK(got == want);
  CHECK(c.NumUnits() == 6);
}

TEST_CASE("StringInputProducer refuses bad options and empty lists, naming them") {
  {
    Scope root = Scope::NewRootScope();
    ops::InputProducerOptions o;
    o.num_epochs = -1;
    StringInputProducer(root, Strings({"a"}), o);
    CHECK(root.status().code() == Code::kInvalidArgument);
    CHECK_THAT(root.status().message(), Contains("num_epochs"));
  }
  {
    Scope root = Scope::NewRootScope();
    StringInputProducer(root, Strings({}));
    CHECK(root.status().code() == Code::kInvalidArgument);
    CHECK_THAT(root.status().message(), Contains("non-empty"));
  }
  Runtime rt(TwoThreads());
  Scope root = Scope::NewRootScope();
  auto names = ops::Placeholder(root.WithOpName("names"), DT_STRING);
  InputProducer p = StringInputProducer(root, names);
  Client c(&rt, ToDef(root));
  std::vector<Tensor> out;
  Status s = c.Run({{"names", Strings({})}}, {}, {p.enqueue.node()->name()}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("non-null input tensor"));
  REQUIRE(c.Run({{"names", Strings({"x"})}}, {}, {p.enqueue.node()->name()}, &out).ok());
}
