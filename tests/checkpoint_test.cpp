// Checkpoints: the bundle writer and reader in both formats (round trips,
// mismatches, threads), actorflow's .afckpt format byte by byte (truncation
// and corruption at every byte of the header and index), crash safety of
// saves, the checkpoint state file, and SaveV2/RestoreV2 in a Session.
// TensorFlow's format byte by byte: tf_checkpoint_test.cpp. CRC32C itself is
// tested in records_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "actorflow/checkpoint/atomic_file.hpp"
#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/checkpoint/checkpoint_state.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::ReadBytes;
using test::Strings;
using test::WriteBytes;
namespace fs = std::filesystem;

namespace {

// Deterministic element values: negative, fractional, binary strings.
template <class T>
T ValueAt(int64_t i, int seed) {
  return static_cast<T>((i * 7 + seed) % 251 - 100);
}
template <>
float ValueAt<float>(int64_t i, int seed) {
  return static_cast<float>((i * 7 + seed) % 1000) * 0.25f - 100.f;
}
template <>
double ValueAt<double>(int64_t i, int seed) {
  return static_cast<double>((i * 7 + seed) % 1000) / 3.0 - 100.0;
}
template <>
uint8_t ValueAt<uint8_t>(int64_t i, int seed) {
  return static_cast<uint8_t>(i * 7 + seed);
}
template <>
bool ValueAt<bool>(int64_t i, int seed) {
  return (i + seed) % 3 == 0;
}
template <>
std::string ValueAt<std::string>(int64_t i, int seed) {
  if (i % 4 == 0) return "";  // empty strings round-trip too
  std::string s = "s" + std::to_string(i + seed);
  s.push_back('\0');
  s += "\n\xff";
  return s;
}

Tensor Filled(DataType dtype, const TensorShape& shape, int seed = 0) {
  Tensor t(dtype, shape);
  AF_SWITCH_ALL(dtype, FAIL("unsupported dtype"), for (int64_t i = 0; i < t.NumElements(); ++i)
                                                       t.data<T>()[i] = ValueAt<T>(i, seed));
  return t;
}

/// The file a checkpoint's reader opens first: P.index, or P.afckpt.
std::string MainFile(const std::string& prefix, BundleFormat format) {
  return format == BundleFormat::kTensorFlow ? prefix + ".index" : bundle::BundleFileName(prefix);
}
/// The file holding a checkpoint's tensor bytes.
std::string DataFile(const std::string& prefix, BundleFormat format) {
  return format == BundleFormat::kTensorFlow ? prefix + ".data-00000-of-00001" : bundle::BundleFileName(prefix);
}

Status Save(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& tensors,
            BundleFormat format = BundleFormat::kActorflow) {
  BundleWriter::Options options;
  options.format = format;
  std::unique_ptr<BundleWriter> w;
  AF_RETURN_IF_ERROR(BundleWriter::Create(prefix, options, &w));
  for (const auto& [name, t] : tensors) AF_RETURN_IF_ERROR(w->Add(name, t));
  return w->Finish();
}

void SaveOk(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& tensors,
            BundleFormat format = BundleFormat::kActorflow) {
  Status s = Save(prefix, tensors, format);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

/// Opens `prefix` and reads every tensor; the first error.
Status OpenAndReadAll(const std::string& prefix) {
  std::unique_ptr<BundleReader> r;
  AF_RETURN_IF_ERROR(BundleReader::Open(prefix, &r));
  for (const auto& name : r->TensorNames()) {
    Tensor t;
    AF_RETURN_IF_ERROR(r->Lookup(name, &t));
  }
  return Status::OK();
}

/// Where each tensor's bytes lie in a bundle file, from its (valid) index.
struct Region {
  std::string name;
  uint64_t begin, end;
};
std::vector<Region> DataRegions(const std::string& bytes) {
  const uint64_t index_offset = fixed::DecodeFixed64(bytes.data() + 16);
  const uint64_t n = fixed::DecodeFixed64(bytes.data() + 32);
  bundle::Decoder d(bytes.data() + index_offset, bytes.size() - index_offset, index_offset, "test", "index");
  std::vector<Region> regions;
  for (uint64_t i = 0; i < n; ++i) {
    bundle::IndexEntry e;
    REQUIRE(bundle::ReadIndexEntry(&d, index_offset, &e).ok());
    regions.push_back({e.name, e.offset, e.offset + e.length});
  }
  return regions;
}

/// A small bundle with tensors of several dtypes, strings among them.
std::vector<std::pair<std::string, Tensor>> SmallTensors() {
  return {{"a/float", Filled(DT_FLOAT, TensorShape{2, 3}, 1)},
          {"b/int64", Filled(DT_INT64, TensorShape{5}, 2)},
          {"c/strings", Filled(DT_STRING, TensorShape{3}, 3)},
          {"d/bool", Filled(DT_BOOL, TensorShape{7}, 4)},
          {"e/scalar", Tensor::Scalar<double>(2.5)},
          {"f/empty", Tensor(DT_INT32, TensorShape{0, 4})}};
}

RunOptions BoundedRun() {
  RunOptions opts;
  opts.timeout_in_ms = 60000;  // no test step may hang
  return opts;
}

}  // namespace

// ---------------------------------------------------------------------------
// Bundles

TEST_CASE("bundle: every dtype and shape round-trips, scalars and empty tensors included") {
  const BundleFormat format = GENERATE(BundleFormat::kTensorFlow, BundleFormat::kActorflow);
  test::TempDir dir("af_ckpt_test");
  const std::vector<DataType> dtypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_UINT8, DT_BOOL, DT_STRING,
                                        DT_INT8,  DT_INT16,  DT_UINT16, DT_UINT32, DT_UINT64};
  const std::vector<TensorShape> shapes = {TensorShape{}, TensorShape{0}, TensorShape{3, 0, 2}, TensorShape{1},
                                           TensorShape{2, 3}, TensorShape{2, 1, 2, 1, 3}};
  std::vector<std::pair<std::string, Tensor>> tensors;
  int seed = 0;
  for (DataType dt : dtypes)
    for (const auto& shape : shapes)
      tensors.emplace_back(DataTypeString(dt) + shape.DebugString(), Filled(dt, shape, seed++));
  // Large enough for direct writes from the buffer and several CRC pieces.
  tensors.emplace_back("large/float", Filled(DT_FLOAT, TensorShape{3, 400000}, 5));
  tensors.emplace_back("large/strings", Strings({std::string(3 << 20, 'x'), "", std::string(1000, '\0')}));
  const std::string prefix = dir / "model";
  SaveOk(prefix, tensors, format);
  REQUIRE(fs::exists(MainFile(prefix, format)));
  REQUIRE(fs::exists(DataFile(prefix, format)));
  CHECK(dir.Find(".tmp-").empty());

  std::unique_ptr<BundleReader> r;
  Status s = BundleReader::Open(prefix, &r);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::vector<std::string> names;
  for (const auto& kv : tensors) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  CHECK(r->TensorNames() == names);
  for (const auto& [name, want] : tensors) {
    INFO(name);
    CHECK(r->Contains(name));
    DataType dtype;
    TensorShape shape;
    REQUIRE(r->LookupDtypeAndShape(name, &dtype, &shape).ok());
    CHECK(dtype == want.dtype());
    CHECK(shape == want.shape());
    Tensor got;
    s = r->Lookup(name, &got);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(TensorEquals(got, want));
    Tensor into(want.dtype(), want.shape());
    REQUIRE(r->LookupInto(name, &into).ok());
    CHECK(TensorEquals(into, want));
  }
}

TEST_CASE("bundle: an empty bundle is valid; a missing file or tensor is NotFound naming it") {
  const BundleFormat format = GENERATE(BundleFormat::kTensorFlow, BundleFormat::kActorflow);
  test::TempDir dir("af_ckpt_test");
  SaveOk(dir / "empty", {}, format);
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "empty", &r).ok());
  CHECK(r->TensorNames().empty());
  Tensor t;
  Status s = r->Lookup("w", &t);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("'w'") && Contains(MainFile(dir / "empty", format)));

  s = BundleReader::Open(dir / "absent", &r);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains(dir / "absent.index") && Contains(dir / "absent.afckpt"));
}

TEST_CASE("bundle: the writer rejects bad names and dtypes and stays usable") {
  BundleWriter::Options options;
  options.format = GENERATE(BundleFormat::kTensorFlow, BundleFormat::kActorflow);
  test::TempDir dir("af_ckpt_test");
  std::unique_ptr<BundleWriter> w;
  REQUIRE(BundleWriter::Create(dir / "m", options, &w).ok());
  REQUIRE(w->Add("x", Tensor::Scalar<int32_t>(1)).ok());
  Status s = w->Add("x", Tensor::Scalar<int32_t>(2));
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("'x' added twice"));
  CHECK(errors::IsInvalidArgument(w->Add("", Tensor::Scalar<int32_t>(2))));
  CHECK(errors::IsInvalidArgument(w->Add("u", Tensor())));
  REQUIRE(w->Add("y", Tensor::Scalar<int32_t>(3)).ok());
  REQUIRE(w->Finish().ok());
  CHECK(errors::IsFailedPrecondition(w->Add("z", Tensor::Scalar<int32_t>(4))));
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "m", &r).ok());
  CHECK(r->TensorNames() == std::vector<std::string>{"x", "y"});
  Tensor x;
  REQUIRE(r->Lookup("x", &x).ok());
  CHECK(x.scalar<int32_t>() == 1);
}

TEST_CASE("bundle: a writer dropped before Finish leaves no file behind") {
  BundleWriter::Options options;
  options.format = GENERATE(BundleFormat::kTensorFlow, BundleFormat::kActorflow);
  test::TempDir dir("af_ckpt_test");
  {
    std::unique_ptr<BundleWriter> w;
    REQUIRE(BundleWriter::Create(dir / "m", options, &w).ok());
    REQUIRE(w->Add("big", Filled(DT_FLOAT, TensorShape{1 << 18})).ok());
    CHECK(dir.Find(".tmp-").size() == 1);
  }
  CHECK(dir.Find("m.").empty());
}

TEST_CASE("bundle: cutting the file at every byte of its header and index is DataLoss") {
  test::TempDir dir("af_ckpt_test");
  SaveOk(dir / "m", SmallTensors());
  const std::string bytes = ReadBytes(dir / "m.afckpt");
  const uint64_t index_offset = fixed::DecodeFixed64(bytes.data() + 16);
  REQUIRE(index_offset < bytes.size());
  std::vector<size_t> cuts;
  for (size_t c = 0; c <= bundle::kHeaderSize; ++c) cuts.push_back(c);
  for (size_t c = bundle::kHeaderSize + 1; c < index_offset; c += 7) cuts.push_back(c);  // inside the data
  for (size_t c = index_offset; c < bytes.size(); ++c) cuts.push_back(c);
  for (size_t cut : cuts) {
    INFO("cut at " << cut << " of " << bytes.size());
    WriteBytes(dir / "cut.afckpt", bytes.substr(0, cut));
    Status s = OpenAndReadAll(dir / "cut");
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(dir / "cut.afckpt"));
  }
  // Appended bytes are damage too.
  WriteBytes(dir / "long.afckpt", bytes + "x");
  CHECK(errors::IsDataLoss(OpenAndReadAll(dir / "long")));
}

TEST_CASE("bundle: a file truncated after it was opened is DataLoss naming the tensor") {
  test::TempDir dir("af_ckpt_test");
  SaveOk(dir / "m", {{"w", Filled(DT_FLOAT, TensorShape{1000})}});
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "m", &r).ok());
  fs::resize_file(dir / "m.afckpt", bundle::kDataStart + 100);
  Tensor t;
  Status s = r->Lookup("w", &t);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("'w'") && Contains(dir / "m.afckpt") && Contains("ends at offset"));
}

TEST_CASE("bundle: a flipped byte in tensor data is DataLoss naming that tensor") {
  test::TempDir dir("af_ckpt_test");
  SaveOk(dir / "m", SmallTensors());
  const std::string bytes = ReadBytes(dir / "m.afckpt");
  const std::vector<Region> regions = DataRegions(bytes);
  const uint64_t index_offset = fixed::DecodeFixed64(bytes.data() + 16);
  int detected = 0;
  for (uint64_t pos = bundle::kDataStart; pos < index_offset; ++pos) {
    std::string bad = bytes;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
    WriteBytes(dir / "bad.afckpt", bad);
    std::unique_ptr<BundleReader> r;
    REQUIRE(BundleReader::Open(dir / "bad", &r).ok());  // the index is intact
    for (const Region& region : regions) {
      INFO("flipped byte " << pos << ", reading '" << region.name << "'");
      Tensor t;
      Status s = r->Lookup(region.name, &t);
      if (pos >= region.begin && pos < region.end) {
        CHECK(errors::IsDataLoss(s));
        CHECK_THAT(s.message(), Contains("'" + region.name + "'") && Contains(dir / "bad.afckpt"));
        ++detected;
      } else {
        CHECK(s.ok());  // padding, or another tensor's bytes
      }
    }
  }
  CHECK(detected > 50);
}

TEST_CASE("bundle: a flipped byte in the header or index is DataLoss") {
  test::TempDir dir("af_ckpt_test");
  SaveOk(dir / "m", SmallTensors());
  const std::string bytes = ReadBytes(dir / "m.afckpt");
  const uint64_t index_offset = fixed::DecodeFixed64(bytes.data() + 16);
  std::vector<size_t> positions;
  for (size_t p = 0; p < bundle::kHeaderSize; ++p) positions.push_back(p);
  for (size_t p = index_offset; p < bytes.size(); ++p) positions.push_back(p);
  for (size_t pos : positions) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      INFO("byte " << pos << " xor " << int(flip));
      std::string bad = bytes;
      bad[pos] = static_cast<char>(bad[pos] ^ flip);
      WriteBytes(dir / "bad.afckpt", bad);
      Status s = OpenAndReadAll(dir / "bad");
      CHECK(errors::IsDataLoss(s));
      CHECK_THAT(s.message(), Contains(dir / "bad.afckpt"));
    }
  }
}

TEST_CASE("bundle: lengths in a forged index are checked before anything is allocated") {
  // A valid CRC over a hostile index: the checks must not trust it.
  test::TempDir dir("af_ckpt_test");
  auto forge = [&](const std::string& index, uint64_t num_entries) {
    bundle::Header h;
    h.index_offset = bundle::kDataStart;
    h.index_length = index.size();
    h.num_entries = num_entries;
    std::string header = bundle::EncodeHeaderPrefix(h);
    const uint32_t crc = crc32c::Extend(crc32c::Value(header.data(), header.size()), index.data(), index.size());
    fixed::Put<uint32_t>(&header, crc32c::Mask(crc));
    header.resize(bundle::kDataStart, '\0');
    WriteBytes(dir / "forged.afckpt", header + index);
    return OpenAndReadAll(dir / "forged");
  };
  auto entry = [](uint32_t name_len, const std::string& name, int32_t dtype, std::vector<uint64_t> dims,
                  uint64_t offset, uint64_t length) {
    // The masked CRC of no bytes: a forged entry passes every check but its lengths.
    std::string e;
    fixed::Put<uint32_t>(&e, name_len);
    e += name;
    fixed::Put<uint32_t>(&e, static_cast<uint32_t>(dtype));
    fixed::Put<uint32_t>(&e, static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) fixed::Put<uint64_t>(&e, d);
    fixed::Put<uint64_t>(&e, offset);
    fixed::Put<uint64_t>(&e, length);
    fixed::Put<uint32_t>(&e, crc32c::Mask(0));
    return e;
  };
  CHECK(errors::IsDataLoss(forge(entry(0xFFFFFFF0u, "w", DT_FLOAT, {}, 64, 4), 1)));           // name length
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_FLOAT, {uint64_t{1} << 62}, 64, 4), 1)));    // elements vs bytes
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_FLOAT, {1ull << 40, 1ull << 40}, 64, 0), 1)));  // overflow
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_FLOAT, {~uint64_t{0}}, 64, 4), 1)));         // negative dim
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_FLOAT, {1}, 64, uint64_t{1} << 40), 1)));    // past the data
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_STRING, {uint64_t{1} << 40}, 64, 0), 1)));  // strings vs bytes
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_RESOURCE, {}, 64, 0), 1)));                // dtype
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_FLOAT, std::vector<uint64_t>(300, 1), 64, 4), 1)));  // rank
  CHECK(errors::IsDataLoss(forge(entry(1, "w", DT_FLOAT, {}, 64, 4), uint64_t{1} << 60)));    // entry count
  CHECK(errors::IsDataLoss(forge(entry(1, "b", DT_FLOAT, {0}, 64, 0) + entry(1, "a", DT_FLOAT, {0}, 64, 0), 2)));
  CHECK(errors::IsDataLoss(forge(entry(1, "a", DT_FLOAT, {0}, 64, 0) + entry(1, "a", DT_FLOAT, {0}, 64, 0), 2)));
  CHECK(forge(entry(1, "a", DT_FLOAT, {0}, 64, 0), 1).ok());  // the same shape of file, well-formed
}

TEST_CASE("bundle: another dtype or shape requested is InvalidArgument naming both") {
  test::TempDir dir("af_ckpt_test");
  SaveOk(dir / "m", {{"w", Filled(DT_FLOAT, TensorShape{2, 3})}});
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "m", &r).ok());
  Tensor wrong_dtype(DT_INT32, TensorShape{2, 3});
  Status s = r->LookupInto("w", &wrong_dtype);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("float") && Contains("int32") && Contains("'w'") && Contains("m.afckpt"));
  Tensor wrong_shape(DT_FLOAT, TensorShape{3, 2});
  s = r->LookupInto("w", &wrong_shape);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("[2,3]") && Contains("[3,2]"));
}

TEST_CASE("bundle: LookupManyInto reads tensors in pieces on several threads and checks each whole") {
  test::TempDir dir("af_ckpt_test");
  // 10 MB: three pieces; the checksums of the pieces must join into the tensor's.
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"big", Filled(DT_FLOAT, TensorShape{5, 500000}, 1)},
      {"strings", Filled(DT_STRING, TensorShape{4}, 2)},
      {"empty", Tensor(DT_INT64, TensorShape{0})},
      {"flags", Filled(DT_BOOL, TensorShape{9}, 3)}};
  SaveOk(dir / "m", tensors);
  // A runner on four threads that each claim the next task.
  BundleReader::Runner threads = [](int num_tasks, const std::function<void(int)>& task) {
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
      pool.emplace_back([&] {
        for (int i = next.fetch_add(1); i < num_tasks; i = next.fetch_add(1)) task(i);
      });
    for (auto& th : pool) th.join();
  };
  auto read_all = [&](const std::string& prefix, const BundleReader::Runner& run, std::vector<Tensor>* out) {
    std::unique_ptr<BundleReader> r;
    AF_RETURN_IF_ERROR(BundleReader::Open(prefix, &r));
    std::vector<std::string> names;
    std::vector<Tensor*> dsts;
    out->clear();
    for (const auto& kv : tensors) out->emplace_back(kv.second.dtype(), kv.second.shape());
    for (size_t i = 0; i < tensors.size(); ++i) {
      names.push_back(tensors[i].first);
      dsts.push_back(&(*out)[i]);
    }
    return r->LookupManyInto(names, dsts, run);
  };
  for (const BundleReader::Runner& run : {BundleReader::Runner(), threads}) {
    std::vector<Tensor> out;
    Status s = read_all(dir / "m", run, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    for (size_t i = 0; i < tensors.size(); ++i) CHECK(TensorEquals(out[i], tensors[i].second));
  }

  // One flipped byte in the middle piece of "big" is DataLoss naming it.
  std::string bytes = ReadBytes(dir / "m.afckpt");
  for (const Region& r : DataRegions(bytes))
    if (r.name == "big") bytes[r.begin + 5'000'000] = static_cast<char>(bytes[r.begin + 5'000'000] ^ 0x04);
  WriteBytes(dir / "bad.afckpt", bytes);
  std::vector<Tensor> out;
  Status s = read_all(dir / "bad", threads, &out);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("'big'") && Contains("bad.afckpt"));

  // Destinations are checked before anything is read.
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "m", &r).ok());
  Tensor wrong(DT_FLOAT, TensorShape{3});
  s = r->LookupManyInto({"empty", "flags"}, {&out[2], &wrong}, threads);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("'flags'"));
  CHECK(errors::IsNotFound(r->LookupManyInto({"nope"}, {&wrong}, threads)));
  CHECK(errors::IsInvalidArgument(r->LookupManyInto({"big"}, {}, threads)));
}

TEST_CASE("bundle: threads read one open bundle at once") {
  const BundleFormat format = GENERATE(BundleFormat::kTensorFlow, BundleFormat::kActorflow);
  test::TempDir dir("af_ckpt_test");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 8; ++i) tensors.emplace_back("t" + std::to_string(i), Filled(DT_INT64, TensorShape{50000}, i));
  tensors.emplace_back("strings", Filled(DT_STRING, TensorShape{100}, 9));
  SaveOk(dir / "m", tensors, format);
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "m", &r).ok());
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int rep = 0; rep < 5; ++rep)
        for (const auto& [name, want] : tensors) {
          Tensor got;
          if (r->Lookup(name, &got).ok() && TensorEquals(got, want)) ++ok[th];
        }
    });
  }
  for (auto& t : threads) t.join();
  for (int n : ok) CHECK(n == 5 * 9);
}

// ---------------------------------------------------------------------------
// Crash safety and the checkpoint state

TEST_CASE("a crash mid-save leaves the previous checkpoint readable and the state file pointing to it") {
  const BundleFormat format = GENERATE(BundleFormat::kTensorFlow, BundleFormat::kActorflow);
  test::TempDir dir("af_ckpt_test");
  const std::string prefix = dir / "model";
  const Tensor old_w = Filled(DT_FLOAT, TensorShape{1 << 16}, 1);  // 256 KB: written straight from its buffer
  SaveOk(prefix, {{"w", old_w}, {"step", Tensor::Scalar<int64_t>(100)}}, format);
  REQUIRE(RecordCheckpoint(dir.path(), prefix, 5).ok());
  const std::string old_bytes = ReadBytes(DataFile(prefix, format));
  const std::string old_index = ReadBytes(MainFile(prefix, format));

  const int64_t size = static_cast<int64_t>(old_bytes.size());
  // actorflow's format: in the header's place, in the tensor, in the index,
  // before and during the final write of the header. TensorFlow's: in the
  // data file, whose crash leaves the index unwritten.
  std::vector<int64_t> crash_points = {0, 10, 64, size / 2, size - 20, size - 1};
  if (format == BundleFormat::kActorflow) crash_points.insert(crash_points.end(), {size, size + 10});
  for (int64_t crash_at : crash_points) {
    INFO("crash after " << crash_at << " bytes");
    BundleWriter::Options options;
    options.format = format;
    options.simulate_crash_after_bytes = crash_at;
    std::unique_ptr<BundleWriter> w;
    REQUIRE(BundleWriter::Create(prefix, options, &w).ok());
    Status s = w->Add("w", Filled(DT_FLOAT, TensorShape{1 << 16}, 2));
    if (s.ok()) s = w->Add("step", Tensor::Scalar<int64_t>(200));
    if (s.ok()) s = w->Finish();
    CHECK(errors::IsAborted(s));
    CHECK(errors::IsAborted(w->Finish()));  // a writer that failed stays failed
    w.reset();
    CHECK(ReadBytes(DataFile(prefix, format)) == old_bytes);
    CHECK(ReadBytes(MainFile(prefix, format)) == old_index);
    const std::vector<std::string> leftovers = dir.Find(".tmp-");  // what the dead process left
    REQUIRE(leftovers.size() == 1);
    fs::remove(dir / leftovers[0]);
    std::string latest;
    REQUIRE(LatestCheckpoint(dir.path(), &latest).ok());
    CHECK(latest == prefix);
    std::unique_ptr<BundleReader> r;
    REQUIRE(BundleReader::Open(latest, &r).ok());
    Tensor w_back, step;
    REQUIRE(r->Lookup("w", &w_back).ok());
    REQUIRE(r->Lookup("step", &step).ok());
    CHECK(TensorEquals(w_back, old_w));
    CHECK(step.scalar<int64_t>() == 100);
  }

  // A partial temporary file of the state, as a crash would leave it.
  std::unique_ptr<AtomicFileWriter> state_writer;
  REQUIRE(AtomicFileWriter::Create(dir / kCheckpointStateFile, &state_writer).ok());
  state_writer->SimulateCrashAfterBytesForTesting(12);
  CHECK(errors::IsAborted(state_writer->Append("actorflow checkpoint state 1\nlatest x\n", 38)));
  state_writer.reset();
  std::string latest;
  REQUIRE(LatestCheckpoint(dir.path(), &latest).ok());
  CHECK(latest == prefix);

  // The next save goes through beside the leftovers.
  SaveOk(prefix, {{"step", Tensor::Scalar<int64_t>(300)}}, format);
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(prefix, &r).ok());
  CHECK(r->TensorNames() == std::vector<std::string>{"step"});
}

TEST_CASE("checkpoint state: round trip, relative and absolute prefixes") {
  test::TempDir dir("af_ckpt_test");
  test::TempDir elsewhere("af_ckpt_test");
  REQUIRE(WriteCheckpointState(dir.path(), dir / "m-3", {dir / "m-1", elsewhere / "m-2"}).ok());
  CheckpointState st;
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.latest == dir / "m-3");
  CHECK(st.all == std::vector<std::string>{dir / "m-1", elsewhere / "m-2", dir / "m-3"});  // latest appended
  // TensorFlow's text format: tf.train.latest_checkpoint reads it.
  const std::string text = ReadBytes(dir / kCheckpointStateFile);
  CHECK_THAT(text, Contains("\nmodel_checkpoint_path: \"m-3\"\n") &&
                       Contains("\nall_model_checkpoint_paths: \"m-1\"\n") &&
                       Contains("all_model_checkpoint_paths: \"" + elsewhere / "m-2" + "\"") &&
                       Contains("\nall_model_checkpoint_timestamps: "));
  CHECK(st.timestamps.size() == 3);

  // Moving the directory keeps the prefixes inside it valid.
  test::TempDir parent("af_ckpt_test");
  const std::string moved = parent / "moved";
  fs::rename(dir.path(), moved);
  REQUIRE(ReadCheckpointState(moved, &st).ok());
  CHECK(st.latest == moved + "/m-3");
  fs::rename(moved, dir.path());

  CHECK(errors::IsInvalidArgument(WriteCheckpointState(dir.path(), dir / "a\nb", {})));
  CHECK(errors::IsInvalidArgument(WriteCheckpointState(dir.path(), "", {})));
  CHECK(errors::IsInvalidArgument(WriteCheckpointState(dir.path(), dir / "x", {dir / "y", dir / "y"})));
  test::TempDir empty("af_ckpt_test");
  CHECK(errors::IsNotFound(ReadCheckpointState(empty.path(), &st)));
  std::string latest;
  CHECK(errors::IsNotFound(LatestCheckpoint(empty.path(), &latest)));
  Status s = LatestCheckpoint(dir.path(), &latest);  // no bundle m-3 was written
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("m-3.afckpt"));
}

TEST_CASE("checkpoint state: a truncated or damaged state file is an error, not a crash") {
  test::TempDir dir("af_ckpt_test");
  REQUIRE(WriteCheckpointState(dir.path(), dir / "m-2", {dir / "m-1", dir / "m-2"}).ok());
  const std::string good = ReadBytes(dir / kCheckpointStateFile);
  CheckpointState st;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    INFO("cut at " << cut);
    WriteBytes(dir / kCheckpointStateFile, good.substr(0, cut));
    Status s = ReadCheckpointState(dir.path(), &st);
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(dir / kCheckpointStateFile));
  }
  CheckpointState good_state;
  REQUIRE(WriteCheckpointState(dir.path(), dir / "m-2", {dir / "m-1", dir / "m-2"}).ok());
  REQUIRE(ReadCheckpointState(dir.path(), &good_state).ok());
  const size_t first_line = good.find('\n');
  for (size_t pos = 0; pos < good.size(); ++pos) {
    INFO("flipped byte " << pos);
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x01);
    WriteBytes(dir / kCheckpointStateFile, bad);
    Status s = ReadCheckpointState(dir.path(), &st);
    if (pos < first_line && s.ok()) {
      // The first comment line no longer says the file is ours: it reads as
      // TensorFlow's, whose lines are intact.
      CHECK(st.all == good_state.all);
      CHECK(st.latest == good_state.latest);
    } else {
      CHECK(errors::IsDataLoss(s));
    }
  }
  WriteBytes(dir / kCheckpointStateFile, std::string(1000, '\0'));
  CHECK(errors::IsDataLoss(ReadCheckpointState(dir.path(), &st)));
  WriteBytes(dir / kCheckpointStateFile, good);
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  // actorflow's older state format is still read.
  std::string legacy = "actorflow checkpoint state 1\nlatest b\nkept a\nkept b\n";
  char legacy_crc[32];
  std::snprintf(legacy_crc, sizeof(legacy_crc), "crc32c %08x\n", crc32c::Value(legacy.data(), legacy.size()));
  WriteBytes(dir / kCheckpointStateFile, legacy + legacy_crc);
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.latest == dir / "b");
  CHECK(st.all == std::vector<std::string>{dir / "a", dir / "b"});
  // A well-formed (legacy) file whose latest is not kept.
  std::string body = "actorflow checkpoint state 1\nlatest a\nkept b\n";
  char crc[32];
  std::snprintf(crc, sizeof(crc), "crc32c %08x\n", crc32c::Value(body.data(), body.size()));
  WriteBytes(dir / kCheckpointStateFile, body + crc);
  Status s = ReadCheckpointState(dir.path(), &st);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("not among the kept"));
}

TEST_CASE("checkpoint state: TensorFlow's state files are read") {
  test::TempDir dir("af_ckpt_test");
  // As TensorFlow 1's Saver writes it (absolute paths happen too).
  WriteBytes(dir / kCheckpointStateFile,
             "model_checkpoint_path: \"model.ckpt-20\"\nall_model_checkpoint_paths: \"model.ckpt-10\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-20\"\n");
  CheckpointState st;
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.latest == dir / "model.ckpt-20");
  CHECK(st.all == std::vector<std::string>{dir / "model.ckpt-10", dir / "model.ckpt-20"});
  CHECK(st.timestamps.empty());
  // As TensorFlow 2's CheckpointManager writes it; comments and any field order.
  WriteBytes(dir / kCheckpointStateFile,
             "# a comment\nall_model_checkpoint_paths: \"ckpt-37\"\nmodel_checkpoint_path: \"ckpt-37\"\n"
             "all_model_checkpoint_timestamps: 1683890483.0369852\nlast_preserved_timestamp: 1683889369.1196783\n");
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.latest == dir / "ckpt-37");
  CHECK(st.timestamps == std::vector<double>{1683890483.0369852});
  CHECK(st.last_preserved_timestamp == 1683889369.1196783);
  // Recording a checkpoint keeps what TensorFlow wrote and adds to it.
  SaveOk(dir / "ckpt-38", {{"step", Tensor::Scalar<int64_t>(38)}}, BundleFormat::kTensorFlow);
  REQUIRE(RecordCheckpoint(dir.path(), dir / "ckpt-38", 5).ok());
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.all == std::vector<std::string>{dir / "ckpt-37", dir / "ckpt-38"});
  CHECK(st.timestamps.size() == 2);
  CHECK(st.timestamps[0] == 1683890483.0369852);
  CHECK(st.last_preserved_timestamp == 1683889369.1196783);
  // An unknown field or a syntax error is DataLoss naming the file and line.
  WriteBytes(dir / kCheckpointStateFile, "model_checkpoint_path: \"a\"\nmodel_checkpoint_pth: \"b\"\n");
  Status s = ReadCheckpointState(dir.path(), &st);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(dir / kCheckpointStateFile) && Contains("line 2"));
  WriteBytes(dir / kCheckpointStateFile, "all_model_checkpoint_paths: \"a\"\n");
  CHECK(errors::IsDataLoss(ReadCheckpointState(dir.path(), &st)));  // no latest
}

TEST_CASE("checkpoint state: keeping the last K deletes older bundles after the state names the rest") {
  test::TempDir dir("af_ckpt_test");
  auto prefix = [&](int i) { return dir / ("model-" + std::to_string(i)); };
  auto exists = [&](int i) {
    return fs::exists(prefix(i) + ".index") && fs::exists(prefix(i) + ".data-00000-of-00001");
  };
  for (int i = 1; i <= 5; ++i) {
    SaveOk(prefix(i), {{"step", Tensor::Scalar<int64_t>(i)}}, BundleFormat::kTensorFlow);
    std::vector<std::string> deleted;
    REQUIRE(RecordCheckpoint(dir.path(), prefix(i), 2, &deleted).ok());
    CHECK(deleted == (i > 2 ? std::vector<std::string>{prefix(i - 2)} : std::vector<std::string>{}));
  }
  for (int i = 1; i <= 5; ++i) CHECK(exists(i) == (i >= 4));
  CHECK(dir.Find("model-1.").empty());  // no file of a deleted checkpoint is left
  CheckpointState st;
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.latest == prefix(5));
  CHECK(st.all == std::vector<std::string>{prefix(4), prefix(5)});

  // Saving an existing prefix again makes it the newest instead of a duplicate.
  REQUIRE(RecordCheckpoint(dir.path(), prefix(4), 2).ok());
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.all == std::vector<std::string>{prefix(5), prefix(4)});
  CHECK(st.latest == prefix(4));

  // max_to_keep <= 0 keeps everything; a bundle already gone is not an error.
  fs::remove(prefix(5) + ".index");
  fs::remove(prefix(5) + ".data-00000-of-00001");
  for (int i = 6; i <= 8; ++i) {
    SaveOk(prefix(i), {{"step", Tensor::Scalar<int64_t>(i)}}, BundleFormat::kTensorFlow);
    REQUIRE(RecordCheckpoint(dir.path(), prefix(i), 0).ok());
  }
  REQUIRE(ReadCheckpointState(dir.path(), &st).ok());
  CHECK(st.all.size() == 5);
  std::vector<std::string> deleted;
  REQUIRE(RecordCheckpoint(dir.path(), prefix(8), 1, &deleted).ok());
  CHECK(deleted == std::vector<std::string>{prefix(4), prefix(6), prefix(7)});
  CHECK(dir.Find(".index") == std::vector<std::string>{"model-8.index"});
  CHECK(dir.Find(".data-") == std::vector<std::string>{"model-8.data-00000-of-00001"});
  CHECK(errors::IsNotFound(DeleteCheckpoint(prefix(1))));

  // A damaged state file stops the bookkeeping; nothing is deleted.
  SaveOk(prefix(9), {{"step", Tensor::Scalar<int64_t>(9)}}, BundleFormat::kTensorFlow);
  WriteBytes(dir / kCheckpointStateFile, "actorflow checkpoint state 1\nlatest model-8\n");
  CHECK(errors::IsDataLoss(RecordCheckpoint(dir.path(), prefix(9), 1)));
  CHECK(exists(8));
  // A checkpoint in actorflow's older format is deleted too.
  SaveOk(prefix(10), {{"step", Tensor::Scalar<int64_t>(10)}});
  REQUIRE(DeleteCheckpoint(prefix(10)).ok());
  CHECK(dir.Find("model-10").empty());
}

// ---------------------------------------------------------------------------
// SaveV2 and RestoreV2

namespace {

Status RunGraph(const Scope& root, const std::vector<std::pair<std::string, Tensor>>& feeds,
                const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                std::vector<Tensor>* out) {
  proto::GraphDef def;
  AF_RETURN_IF_ERROR(root.ToGraphDef(&def));
  Session session;
  AF_RETURN_IF_ERROR(session.Create(def));
  return session.Run(BoundedRun(), feeds, fetches, targets, out);
}

/// Restores `names` of `dtypes` from `prefix` in a Session.
Status Restore(const std::string& prefix, const std::vector<std::string>& names, const DataTypeVector& dtypes,
               std::vector<Tensor>* out, const std::vector<std::string>& slices = {}) {
  Scope root = Scope::NewRootScope();
  auto restored = ops::RestoreV2(root, prefix, Strings(names),
                                 Strings(slices.empty() ? std::vector<std::string>(names.size()) : slices), dtypes);
  std::vector<std::string> fetches;
  for (const auto& o : restored) fetches.push_back(o.name());
  return RunGraph(root, {}, fetches, {}, out);
}

}  // namespace

TEST_CASE("SaveV2 then RestoreV2 in a Session round-trips every dtype and shape") {
  test::TempDir dir("af_ckpt_test");
  const std::string prefix = dir / "model-1";
  const std::vector<std::pair<std::string, Tensor>> values = {
      {"float", Filled(DT_FLOAT, TensorShape{3, 4}, 1)},
      {"double", Filled(DT_DOUBLE, TensorShape{5}, 2)},
      {"int32", Tensor::Scalar<int32_t>(-7)},
      {"int64", Filled(DT_INT64, TensorShape{2, 2, 2}, 3)},
      {"uint8", Filled(DT_UINT8, TensorShape{300}, 4)},
      {"bool", Filled(DT_BOOL, TensorShape{4}, 5)},
      {"string", Filled(DT_STRING, TensorShape{2, 3}, 6)},
      {"empty", Tensor(DT_FLOAT, TensorShape{0, 7})},
      {"big", Filled(DT_FLOAT, TensorShape{256, 1024}, 7)},   // 1 MB
      {"huge", Filled(DT_DOUBLE, TensorShape{1300000}, 8)}};  // 10.4 MB: read in pieces
  Scope root = Scope::NewRootScope();
  std::vector<Output> inputs;
  std::vector<std::string> names;
  std::vector<std::pair<std::string, Tensor>> feeds;
  DataTypeVector dtypes;
  for (const auto& [name, t] : values) {
    inputs.push_back(ops::Placeholder(root.WithOpName("in_" + name), t.dtype()));
    names.push_back(name);
    feeds.emplace_back("in_" + name, t);
    dtypes.push_back(t.dtype());
  }
  auto save = ops::SaveV2(root.WithOpName("save"), prefix, Strings(names),
                          Strings(std::vector<std::string>(names.size())), inputs);
  std::vector<Tensor> out;
  Status s = RunGraph(root, feeds, {}, {save.name()}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(fs::exists(prefix + ".index"));  // TensorFlow's format
  REQUIRE(fs::exists(prefix + ".data-00000-of-00001"));

  // In another order, to see that names, not positions, select the tensors.
  std::vector<std::string> reversed(names.rbegin(), names.rend());
  DataTypeVector reversed_dtypes(dtypes.rbegin(), dtypes.rend());
  s = Restore(prefix, reversed, reversed_dtypes, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out.size() == values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(values[i].first);
    CHECK(TensorEquals(out[values.size() - 1 - i], values[i].second));
  }
}

TEST_CASE("RestoreV2 errors name the file and the tensor (a checkpoint in actorflow's format)") {
  test::TempDir dir("af_ckpt_test");
  const std::string prefix = dir / "m";
  SaveOk(prefix, {{"w", Filled(DT_FLOAT, TensorShape{4})}, {"b", Filled(DT_FLOAT, TensorShape{2})}});
  std::vector<Tensor> out;

  Status s = Restore(prefix, {"w", "missing"}, {DT_FLOAT, DT_FLOAT}, &out);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("'missing'") && Contains(prefix + ".afckpt"));

  s = Restore(prefix, {"w"}, {DT_INT32}, &out);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("'w'") && Contains("float") && Contains("int32") && Contains(prefix + ".afckpt"));

  s = Restore(dir / "absent", {"w"}, {DT_FLOAT}, &out);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains(dir / "absent.afckpt"));

  s = Restore(prefix, {"w"}, {DT_FLOAT}, &out, {"4 0,2"});
  CHECK(errors::IsUnimplemented(s));
  CHECK_THAT(s.message(), Contains("'w'") && Contains("slices"));

  // Damage the bytes of "w".
  std::string bytes = ReadBytes(prefix + ".afckpt");
  for (const Region& r : DataRegions(bytes))
    if (r.name == "w") bytes[r.begin + 1] = static_cast<char>(bytes[r.begin + 1] ^ 0x40);
  WriteBytes(prefix + ".afckpt", bytes);
  s = Restore(prefix, {"b", "w"}, {DT_FLOAT, DT_FLOAT}, &out);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("'w'") && Contains(prefix + ".afckpt"));
  REQUIRE(Restore(prefix, {"b"}, {DT_FLOAT}, &out).ok());
}

TEST_CASE("SaveV2 checks its arguments") {
  test::TempDir dir("af_ckpt_test");
  auto run_save = [&](const Tensor& names, const Tensor& slices) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root, {1.f, 2.f});
    auto save = ops::SaveV2(root.WithOpName("save"), dir / "m", names, slices, {x});
    if (!root.ok()) return root.status();  // the shape function refused it
    std::vector<Tensor> out;
    return RunGraph(root, {}, {}, {save.name()}, &out);
  };
  CHECK(errors::IsInvalidArgument(run_save(Strings({"a", "b"}), Strings({"", ""}))));
  CHECK(errors::IsUnimplemented(run_save(Strings({"a"}), Strings({"2 0,1"}))));
  CHECK(errors::IsInvalidArgument(run_save(Strings({""}), Strings({""}))));
  CHECK(dir.Find(".index").empty());
  CHECK(dir.Find(".tmp-").empty());
  REQUIRE(run_save(Strings({"a"}), Strings({""})).ok());
  CHECK(dir.Find(".index").size() == 1);

  // Missing directories are created, as TensorFlow does; a file in their place is an error naming it.
  auto save_to = [&](const std::string& prefix) {
    Scope root = Scope::NewRootScope();
    auto save = ops::SaveV2(root.WithOpName("save"), prefix, Strings({"a"}), Strings({""}), {ops::Const(root, 1.f)});
    std::vector<Tensor> out;
    return RunGraph(root, {}, {}, {save.name()}, &out);
  };
  REQUIRE(save_to(dir / "new/nested/m").ok());
  CHECK(fs::exists(dir / "new/nested/m.index"));
  WriteBytes(dir / "file", "x");
  Status s = save_to(dir / "file/m");
  CHECK(errors::IsFailedPrecondition(s));
  CHECK_THAT(s.message(), Contains(dir / "file") && Contains("not a directory"));
}
