// TensorFlow's V2 checkpoint format byte by byte: golden bytes for known
// tensors (derived by the format brief's re-implementation of TensorFlow's
// writer, not written by TensorFlow: tf_written_test.cpp compares our files
// with TensorFlow's own), the .index table read by LevelDB's own reader and
// tables LevelDB writes (several blocks, Snappy) read by ours, truncation and
// corruption of every byte of an index, damaged data files, forged entries,
// MergeV2Checkpoints. Both formats' common behaviour: checkpoint_test.cpp.
#include <catch2/catch.hpp>

#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <filesystem>

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/checkpoint/checkpoint_state.hpp"
#include "actorflow/checkpoint/merge.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/checkpoint/tf_bundle_format.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/tensor_bundle.pb.h"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::ReadBytes;
using test::Strings;
using test::WriteBytes;
namespace fs = std::filesystem;

namespace {

// What LevelDB's TableBuilder writes to: a string.
struct StringFile : leveldb::WritableFile {
  std::string bytes;
  leveldb::Status Append(const leveldb::Slice& d) override {
    bytes.append(d.data(), d.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }
};

std::string Unhex(std::string hex) {
  hex.erase(std::remove(hex.begin(), hex.end(), ' '), hex.end());
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

Tensor Floats(std::vector<float> v) {
  Tensor t(DT_FLOAT, TensorShape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

void Save(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::unique_ptr<BundleWriter> w;
  REQUIRE(BundleWriter::Create(prefix, &w).ok());
  for (const auto& [name, t] : tensors) REQUIRE(w->Add(name, t).ok());
  Status s = w->Finish();
  INFO(s.ToString());
  REQUIRE(s.ok());
}

/// Opens `prefix` and reads every readable tensor; the first error.
Status ReadAll(const std::string& prefix, std::map<std::string, Tensor>* out = nullptr) {
  std::unique_ptr<BundleReader> r;
  AF_RETURN_IF_ERROR(BundleReader::Open(prefix, &r));
  for (const auto& name : r->TensorNames()) {
    Tensor t;
    AF_RETURN_IF_ERROR(r->Lookup(name, &t));
    if (out) (*out)[name] = t;
  }
  return Status::OK();
}

std::vector<std::pair<std::string, Tensor>> SomeTensors() {
  Tensor strings = Strings({"", "checkpoint", std::string(300, 'z'), std::string("\0\xff", 2)});
  Tensor ints(DT_INT64, TensorShape{2, 3});
  for (int i = 0; i < 6; ++i) ints.data<int64_t>()[i] = (int64_t{1} << 40) * (i - 3);
  return {{"dense/kernel", Floats({1.5f, -2.f, 0.25f, 8.f})},
          {"global_step", Tensor::Scalar<int64_t>(1234)},
          {"vocab", strings},
          {"dense/bias", ints},
          {"empty", Tensor(DT_FLOAT, TensorShape{0, 3})},
          {"flag", Tensor::Scalar<bool>(true)}};
}

/// A checkpoint index made of `entries` (header included when given).
void WriteIndex(const std::string& prefix, const sstable::Entries& entries) {
  std::string bytes;
  REQUIRE(sstable::Build(entries, &bytes).ok());
  WriteBytes(prefix + ".index", bytes);
}

std::string Entry(DataType dtype, std::vector<int64_t> dims, int shard, int64_t offset, int64_t size, uint32_t crc) {
  proto::BundleEntryProto e;
  e.set_dtype(static_cast<proto::DataType>(dtype));
  auto* shape = e.mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_size(d);
  e.set_shard_id(shard);
  e.set_offset(offset);
  e.set_size(size);
  e.set_crc32c(crc);
  return e.SerializeAsString();
}

}  // namespace

TEST_CASE("tf checkpoint: the bytes are the format brief's golden vector (from our re-implementation, not from TensorFlow)") {
  // Golden bytes (docs/tensorflow-formats/tf_checkpoint_v2.md): "w" = float [1, 2],
  // then "s" = the string scalar "hi", as the brief's Python re-implementation of
  // TensorFlow's BundleWriter writes them (that re-implementation rebuilt three
  // TensorFlow-written indexes; tf_written_test.cpp compares with TensorFlow's own files).
  test::TempDir dir("af_tfckpt_test");
  Save(dir / "m", {{"w", Floats({1.f, 2.f})}, {"s", Strings({"hi"}).Reshaped(TensorShape{})}});
  CHECK(ReadBytes(dir / "m.data-00000-of-00001") == Unhex("0000803f 00000040 02 d8d81073 6869"));
  const std::string index = Unhex(
      "00000608011a02080100010d7308071200200828073509eb4d1500010f770801120412020802280835593ce535"
      "00000000 01000000 00 86dd0239"
      "00000000 01000000 00 c0f2a1b0"
      "000102780035 00000000 01000000 00 ecb2222a"
      "3a08470e" + std::string(72, '0') + "57fb808b247547db");
  REQUIRE(index.size() == 138);
  CHECK(ReadBytes(dir / "m.index") == index);
  CHECK(dir.Find(".tmp").empty());
  std::map<std::string, Tensor> back;
  REQUIRE(ReadAll(dir / "m", &back).ok());
  CHECK(back["s"].dims() == 0);
  CHECK(back["s"].scalar<std::string>() == "hi");
}

TEST_CASE("tf checkpoint: LevelDB's reader reads our index, ours reads LevelDB's tables") {
  test::TempDir dir("af_tfckpt_test");
  std::vector<std::pair<std::string, Tensor>> tensors = SomeTensors();
  Save(dir / "m", tensors);
  // Our .index through LevelDB's own table reader.
  leveldb::Env* env = leveldb::Env::Default();
  leveldb::RandomAccessFile* raw = nullptr;
  REQUIRE(env->NewRandomAccessFile(dir / "m.index", &raw).ok());
  std::unique_ptr<leveldb::RandomAccessFile> file(raw);
  uint64_t size = 0;
  REQUIRE(env->GetFileSize(dir / "m.index", &size).ok());
  leveldb::Options options;
  options.paranoid_checks = true;
  leveldb::Table* table_raw = nullptr;
  REQUIRE(leveldb::Table::Open(options, file.get(), size, &table_raw).ok());
  std::unique_ptr<leveldb::Table> table(table_raw);
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(ro));
  std::vector<std::string> keys;
  for (it->SeekToFirst(); it->Valid(); it->Next()) keys.push_back(it->key().ToString());
  REQUIRE(it->status().ok());
  std::vector<std::string> want = {""};
  for (const auto& kv : tensors) want.push_back(kv.first);
  std::sort(want.begin(), want.end());
  CHECK(keys == want);

  // Tables LevelDB writes with small blocks (many data blocks, restarts), plain and Snappy.
  for (auto compression : {leveldb::kNoCompression, leveldb::kSnappyCompression}) {
    INFO("compression " << compression);
    StringFile out;
    leveldb::Options o;
    o.block_size = 1024;
    o.compression = compression;
    leveldb::TableBuilder b(o, &out);
    sstable::Entries entries;
    for (int i = 0; i < 3000; ++i) {
      char key[32];
      std::snprintf(key, sizeof(key), "layer_%05d/kernel", i);
      entries.emplace_back(key, std::string(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 7)));
      b.Add(entries.back().first, entries.back().second);
    }
    REQUIRE(b.Finish().ok());
    sstable::Entries got;
    Status s = sstable::Parse("leveldb.table", out.bytes.data(), out.bytes.size(), &got);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(got == entries);
    // Our Build of the same entries is LevelDB's with TensorFlow's options; ours parses it too.
    std::string ours;
    REQUIRE(sstable::Build(entries, &ours).ok());
    REQUIRE(sstable::Parse("ours", ours.data(), ours.size(), &got).ok());
    CHECK(got == entries);
  }
  sstable::Entries unsorted = {{"b", ""}, {"a", ""}};
  std::string bytes;
  CHECK(errors::IsInvalidArgument(sstable::Build(unsorted, &bytes)));
}

TEST_CASE("tf checkpoint: an index cut or damaged at any byte is DataLoss, never a wrong tensor") {
  test::TempDir dir("af_tfckpt_test");
  Save(dir / "m", SomeTensors());
  std::map<std::string, Tensor> good;
  REQUIRE(ReadAll(dir / "m", &good).ok());
  const std::string index = ReadBytes(dir / "m.index");
  fs::copy_file(dir / "m.data-00000-of-00001", dir / "bad.data-00000-of-00001");
  for (size_t cut = 0; cut < index.size(); ++cut) {
    INFO("cut at " << cut);
    WriteBytes(dir / "bad.index", index.substr(0, cut));
    Status s = ReadAll(dir / "bad");
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(dir / "bad.index"));
  }
  int opened = 0;
  for (size_t pos = 0; pos < index.size(); ++pos) {
    INFO("flipped byte " << pos);
    for (int bit : {0x01, 0x80}) {
      std::string bad = index;
      bad[pos] = static_cast<char>(bad[pos] ^ bit);
      WriteBytes(dir / "bad.index", bad);
      std::map<std::string, Tensor> back;
      Status s = ReadAll(dir / "bad", &back);
      if (s.ok()) {
        // Only bytes nothing reads may change and still open: the footer's
        // padding and the (empty) metaindex block, which TensorFlow's reader ignores too.
        ++opened;
        REQUIRE(back.size() == good.size());
        for (const auto& [name, t] : good) CHECK(TensorEquals(back[name], t));
      } else {
        CHECK(errors::IsDataLoss(s));
      }
    }
  }
  CHECK(opened <= 2 * (36 + 8 + 5));
}

TEST_CASE("tf checkpoint: damaged or truncated data is DataLoss naming the tensor and the data file") {
  test::TempDir dir("af_tfckpt_test");
  const auto tensors = SomeTensors();
  Save(dir / "m", tensors);
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "m", &r).ok());
  const std::string data = ReadBytes(dir / "m.data-00000-of-00001");
  fs::copy_file(dir / "m.index", dir / "bad.index");
  // Flip every byte of the data file in turn: the tensor holding it fails, the others read.
  for (size_t pos = 0; pos < data.size(); ++pos) {
    INFO("flipped data byte " << pos);
    std::string bad = data;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x20);
    WriteBytes(dir / "bad.data-00000-of-00001", bad);
    std::unique_ptr<BundleReader> b;
    REQUIRE(BundleReader::Open(dir / "bad", &b).ok());
    int failed = 0;
    for (const auto& [name, want] : tensors) {
      Tensor got;
      Status s = b->Lookup(name, &got);
      if (s.ok()) {
        CHECK(TensorEquals(got, want));
      } else {
        ++failed;
        CHECK(errors::IsDataLoss(s));
        CHECK_THAT(s.message(), Contains("'" + name + "'") && Contains("bad.data-00000-of-00001"));
      }
    }
    CHECK(failed == 1);
  }
  // A data file cut short: Open names the first tensor past its end.
  WriteBytes(dir / "bad.data-00000-of-00001", data.substr(0, data.size() - 1));
  Status s = ReadAll(dir / "bad");
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("bad.data-00000-of-00001"));
  fs::remove(dir / "bad.data-00000-of-00001");
  s = ReadAll(dir / "bad");
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("bad.data-00000-of-00001"));
}

TEST_CASE("tf checkpoint: forged headers and entries are refused before anything is allocated") {
  test::TempDir dir("af_tfckpt_test");
  const std::string prefix = dir / "f";
  WriteBytes(prefix + ".data-00000-of-00001", std::string(16, '\0'));
  const std::string header = tf_bundle::EncodeHeader(1);
  auto open = [&](const sstable::Entries& entries) {
    WriteIndex(prefix, entries);
    return ReadAll(prefix);
  };
  // No header; a header that does not parse; versions and byte order this reader refuses.
  CHECK(errors::IsDataLoss(open({{"w", Entry(DT_FLOAT, {1}, 0, 0, 4, 0)}})));
  CHECK(errors::IsDataLoss(open({{"", "\xff\xff"}})));
  proto::BundleHeaderProto h;
  h.set_num_shards(1);
  h.mutable_version()->set_min_consumer(2);
  Status s = open({{"", h.SerializeAsString()}});
  CHECK(errors::IsUnimplemented(s));
  CHECK_THAT(s.message(), Contains("f.index"));
  h.mutable_version()->set_min_consumer(0);
  h.set_endianness(proto::BundleHeaderProto::BIG);
  CHECK(errors::IsUnimplemented(open({{"", h.SerializeAsString()}})));
  h.set_endianness(proto::BundleHeaderProto::LITTLE);
  h.set_num_shards(0);
  CHECK(errors::IsDataLoss(open({{"", h.SerializeAsString()}})));
  // Sizes past the data file, huge shapes, a shard that does not exist, sizes that disagree with the shape.
  for (const std::string& entry :
       {Entry(DT_FLOAT, {1 << 30, 1 << 30}, 0, 0, int64_t{1} << 62, 0), Entry(DT_FLOAT, {4}, 0, 8, 16, 0),
        Entry(DT_FLOAT, {-1}, 0, 0, 4, 0), Entry(DT_FLOAT, {2}, 3, 0, 8, 0), Entry(DT_FLOAT, {3}, 0, 0, 8, 0),
        Entry(DT_STRING, {int64_t{1} << 40}, 0, 0, 16, 0), Entry(DT_FLOAT, {1}, 0, -4, 4, 0)}) {
    s = open({{"", header}, {"w", entry}});
    INFO(s.ToString());
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains("'w'"));
  }
  // A partitioned tensor and a dtype we do not store are listed, refused by
  // name on Lookup, and do not stop the others.
  proto::BundleEntryProto sliced;
  sliced.set_dtype(proto::DT_FLOAT);
  sliced.mutable_shape()->add_dim()->set_size(4);
  sliced.add_slices()->add_extent()->set_start(0);
  Tensor zero = Tensor::Scalar<float>(0.f);
  const std::string zeros(4, '\0');
  WriteBytes(prefix + ".data-00000-of-00001", zeros);
  WriteIndex(prefix, {{"", header},
                      {"ok", Entry(DT_FLOAT, {}, 0, 0, 4, crc32c::Mask(crc32c::Value(zeros.data(), 4)))},
                      {"sliced", sliced.SerializeAsString()},
                      {"variant", Entry(DT_VARIANT, {}, 0, 0, 4, 0)}});
  std::unique_ptr<BundleReader> r;
  s = BundleReader::Open(prefix, &r);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(r->TensorNames() == std::vector<std::string>{"ok", "sliced", "variant"});
  Tensor t;
  REQUIRE(r->Lookup("ok", &t).ok());
  CHECK(TensorEquals(t, zero));
  s = r->Lookup("sliced", &t);
  CHECK(errors::IsUnimplemented(s));
  CHECK_THAT(s.message(), Contains("'sliced'") && Contains("partitioned"));
  CHECK(errors::IsUnimplemented(r->Lookup("variant", &t)));
}

TEST_CASE("tf checkpoint: MergeV2Checkpoints joins the savers' parts into one checkpoint") {
  test::TempDir dir("af_tfckpt_test");
  // As tf.train.Checkpoint saves: parts under <prefix>_temp, merged into <prefix>.
  const std::string tmp = dir / "ckpt-1_temp";
  Save(tmp + "/part-00000-of-00002", {{"a", Floats({1.f, 2.f})}, {"c", Strings({"x", "yz"})}});
  Save(tmp + "/part-00001-of-00002", {{"b", Tensor::Scalar<int64_t>(7)}});
  Scope root = Scope::NewRootScope();
  auto merge = ops::MergeV2Checkpoints(root.WithOpName("merge"),
                                       Strings({tmp + "/part-00000-of-00002", tmp + "/part-00001-of-00002"}),
                                       dir / "ckpt-1");
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  Session session;
  REQUIRE(session.Create(def).ok());
  RunOptions bounded;
  bounded.timeout_in_ms = 60000;
  std::vector<Tensor> out;
  Status s = session.Run(bounded, {}, {}, {"merge"}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(!fs::exists(tmp));  // the parts' directory is gone
  CHECK(fs::exists(dir / "ckpt-1.data-00000-of-00002"));
  CHECK(fs::exists(dir / "ckpt-1.data-00001-of-00002"));
  std::map<std::string, Tensor> back;
  REQUIRE(ReadAll(dir / "ckpt-1", &back).ok());
  CHECK(back.size() == 3);
  CHECK(TensorEquals(back["a"], Floats({1.f, 2.f})));
  CHECK(back["b"].scalar<int64_t>() == 7);
  CHECK(back["c"].data<std::string>()[1] == "yz");
  REQUIRE(DeleteCheckpoint(dir / "ckpt-1").ok());
  CHECK(dir.Find("ckpt-1").empty());

  // The same tensor in two parts; a missing part; allow_missing_files.
  Save(dir / "p1", {{"a", Floats({1.f})}});
  Save(dir / "p2", {{"a", Floats({2.f})}});
  s = MergeCheckpoints({dir / "p1", dir / "p2"}, dir / "both");
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("'a'"));
  CHECK(fs::exists(dir / "p1.index"));  // nothing moved
  CHECK(errors::IsNotFound(MergeCheckpoints({dir / "p1", dir / "nope"}, dir / "one")));
  REQUIRE(MergeCheckpoints({dir / "p1", dir / "nope"}, dir / "one", true, /*allow_missing_files=*/true).ok());
  REQUIRE(ReadAll(dir / "one", &back).ok());
  CHECK(TensorEquals(back["a"], Floats({1.f})));
  CHECK(errors::IsInvalidArgument(MergeCheckpoints({dir / "nope"}, dir / "none", true, true)));
}

TEST_CASE("tf checkpoint: a small table whose keys expand without bound is refused") {
  // Keys "a", "aa", "aaa", ... with one restart point (LevelDB writes it so
  // when told to): each entry stores one new byte while the keys grow, 20,000
  // of them to 200 MB from a table of ~100 KB.
  StringFile out;
  leveldb::Options o;
  o.block_size = 1 << 30;
  o.block_restart_interval = 1 << 30;
  o.compression = leveldb::kNoCompression;
  leveldb::TableBuilder b(o, &out);
  std::string key;
  for (int i = 0; i < 20000; ++i) {
    key.push_back('a');
    b.Add(key, "");
  }
  REQUIRE(b.Finish().ok());
  CHECK(out.bytes.size() < 200000);
  sstable::Entries got;
  Status s = sstable::Parse("forged.index", out.bytes.data(), out.bytes.size(), &got);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("forged.index") && Contains("expand"));
}
