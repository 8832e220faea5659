// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/):
// a few small valid inputs each, in the input layout its target documents.
//
//   build-asan/tests/fuzz/fuzz_make_seeds tests/fuzz/corpus tests/data
//
// The corpora are committed; run this again after changing a target's input
// layout or a file format. Seeds are made with the project's own writers
// (RecordWriter, BundleWriter, the GraphDef parser), so they are valid by
// construction. Exit status 0 written, 1 an error (printed).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/comm/collective_message.hpp"
#include "actorflow/comm/frame_codec.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/net/rendezvous_key.hpp"

using namespace actorflow;
namespace fs = std::filesystem;

namespace {

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

void Check(const Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

std::string Int64Le(int64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(static_cast<uint64_t>(v) >> (8 * i));
  return out;
}

// fuzz_records' option bytes: mode, param, header, record, footer, hop.
std::string RecordsHeader(uint8_t mode, uint8_t param, int64_t header = 0, int64_t record = 0,
                          int64_t footer = 0, int64_t hop = 0) {
  return std::string{static_cast<char>(mode), static_cast<char>(param)} + Int64Le(header) + Int64Le(record) +
         Int64Le(footer) + Int64Le(hop);
}

std::string TfRecords(const fs::path& scratch, io::Compression c, const std::vector<std::string>& records) {
  io::RecordWriterOptions o;
  o.compression = c;
  std::unique_ptr<io::RecordWriter> w;
  Check(io::RecordWriter::Create(scratch.string(), o, &w));
  for (const std::string& r : records) Check(w->WriteRecord(r));
  Check(w->Close());
  return ReadFile(scratch);
}

void GraphSeeds(const fs::path& out, const fs::path& data_dir) {
  int i = 0;
  for (const auto& entry : fs::directory_iterator(data_dir)) {
    if (entry.path().extension() != ".pbtxt") continue;
    const std::string text = ReadFile(entry.path());
    proto::GraphDef def;
    Check(ParseGraphDefText(text, &def, entry.path().string()));
    const std::string stem = entry.path().stem().string();
    WriteFile(out / (stem + ".txt"), "\x01" + text);        // text, targets
    WriteFile(out / (stem + "_fetch.txt"), "\x03" + text);  // text, fetches
    std::string binary;
    def.SerializeToString(&binary);
    WriteFile(out / (stem + ".pb"), std::string(1, '\x00') + binary);        // binary, targets
    WriteFile(out / (stem + "_rr.pb"), std::string(1, '\x06') + binary);     // binary, fetches, round robin
    ++i;
  }
  if (i == 0) throw std::runtime_error("no .pbtxt graphs in " + data_dir.string());
}

void RecordSeeds(const fs::path& out, const fs::path& scratch) {
  const std::vector<std::string> recs = {"hello", "", std::string(40, 'x'), "last record"};
  const std::string plain = TfRecords(scratch, io::Compression::kNone, recs);
  WriteFile(out / "tfrecord", RecordsHeader(0x00, 0) + plain);
  WriteFile(out / "tfrecord_fix_crcs", RecordsHeader(0x40, 0) + plain);
  WriteFile(out / "tfrecord_gzip_fix_crcs", RecordsHeader(0x54, 0) + plain);
  WriteFile(out / "tfrecord_small_buffer", RecordsHeader(0x20, 6) + plain);
  WriteFile(out / "tfrecord_gzip", RecordsHeader(0x04, 0) + TfRecords(scratch, io::Compression::kGzip, recs));
  WriteFile(out / "tfrecord_zlib", RecordsHeader(0x08, 0) + TfRecords(scratch, io::Compression::kZlib, recs));
  WriteFile(out / "tfrecord_gzip_by_target", RecordsHeader(0x14, 0) + plain);
  WriteFile(out / "tfrecord_zlib_small_buffer", RecordsHeader(0x38, 3) + plain);
  const std::string lines = "a,b,c\n1,2,3\r\n4,5,6\nno newline";
  WriteFile(out / "text", RecordsHeader(0x01, 1) + lines);
  WriteFile(out / "text_gzip_by_target", RecordsHeader(0x15, 0) + lines);
  const std::string fixed = "HDR" + std::string("0123456789abcdef") + "FT";
  WriteFile(out / "fixed", RecordsHeader(0x02, 0, 3, 4, 2, 0) + fixed);
  WriteFile(out / "fixed_hop", RecordsHeader(0x02, 0, 3, 4, 2, 3) + fixed);
  WriteFile(out / "fixed_zlib_by_target", RecordsHeader(0x1a, 0, 3, 4, 2, 5) + fixed);
}

void CheckpointSeeds(const fs::path& out, const fs::path& scratch) {
  auto bundle = [&](const std::string& name, const std::vector<std::pair<std::string, Tensor>>& tensors) {
    const std::string prefix = (scratch.parent_path() / "seed_bundle").string();
    std::unique_ptr<BundleWriter> w;
    BundleWriter::Options options;
    options.format = BundleFormat::kActorflow;  // the format fuzz_checkpoint reads
    Check(BundleWriter::Create(prefix, options, &w));
    for (const auto& [n, t] : tensors) Check(w->Add(n, t));
    Check(w->Finish());
    const std::string file = ReadFile(bundle::BundleFileName(prefix));
    WriteFile(out / name, std::string(1, '\x00') + file);       // checksums as written
    WriteFile(out / (name + "_fix"), std::string(1, '\x01') + file);  // the target recomputes them
    fs::remove(bundle::BundleFileName(prefix));
  };
  Tensor f(DT_FLOAT, TensorShape{2, 3});
  for (int i = 0; i < 6; ++i) f.data<float>()[i] = 0.5f * i;
  Tensor l(DT_INT64, TensorShape{2});
  l.data<int64_t>()[0] = -1;
  l.data<int64_t>()[1] = int64_t{1} << 40;
  Tensor b(DT_BOOL, TensorShape{3});
  for (int i = 0; i < 3; ++i) b.data<bool>()[i] = i != 1;
  Tensor s(DT_STRING, TensorShape{2});
  s.data<std::string>()[0] = "checkpoint";
  s.data<std::string>()[1] = "";
  Tensor scalar(DT_DOUBLE, TensorShape{});
  scalar.data<double>()[0] = 3.25;
  bundle("empty", {});
  bundle("one_float", {{"w", f}});
  bundle("mixed", {{"dense/kernel", f}, {"global_step", l}, {"mask", b}, {"names", s}, {"scale", scalar}});
}

// fuzz_tf_checkpoint: a TensorFlow checkpoint's index and data, raw and as records.
void TfCheckpointSeeds(const fs::path& out, const fs::path& scratch) {
  const std::string prefix = (scratch.parent_path() / "seed_tf_bundle").string();
  std::unique_ptr<BundleWriter> w;
  Check(BundleWriter::Create(prefix, &w));
  Tensor f(DT_FLOAT, TensorShape{2, 3});
  for (int i = 0; i < 6; ++i) f.data<float>()[i] = 0.5f * i;
  Tensor s(DT_STRING, TensorShape{2});
  s.data<std::string>()[0] = "checkpoint";
  Tensor scalar(DT_INT64, TensorShape{});
  scalar.data<int64_t>()[0] = 42;
  Check(w->Add("dense/kernel/.ATTRIBUTES/VARIABLE_VALUE", f));
  Check(w->Add("vocab", s));
  Check(w->Add("global_step", scalar));
  Check(w->Finish());
  const std::string index = ReadFile(prefix + ".index");
  const std::string data = ReadFile(prefix + ".data-00000-of-00001");
  auto u32 = [](size_t v) {
    std::string b(4, '\0');
    for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    return b;
  };
  WriteFile(out / "tf_bundle", std::string(1, '\x00') + u32(index.size()) + index + data);
  sstable::Entries entries;
  Check(sstable::Parse("seed", index.data(), index.size(), &entries));
  std::string records;
  for (const auto& [k, v] : entries) {
    records.push_back(static_cast<char>(k.size()));
    records += k;
    records.push_back(static_cast<char>(v.size() & 0xff));
    records.push_back(static_cast<char>(v.size() >> 8));
    records += v;
  }
  WriteFile(out / "tf_bundle_records", std::string(1, '\x01') + u32(records.size()) + records + data);
  std::filesystem::remove(prefix + ".index");
  std::filesystem::remove(prefix + ".data-00000-of-00001");
}

void JsonSeeds(const fs::path& out) {
  const std::vector<std::pair<std::string, std::string>> seeds = {
      {"scalar", "3.5"},
      {"ints", "[1, 2, 3]"},
      {"matrix", "[[1.5, -2], [3, 4e10]]"},
      {"bools", "[[true, false], [false, true]]"},
      {"strings", "[\"a\", \"\", \"\\u00e9\"]"},
      {"empty", "[]"},
      {"explicit", "{\"dtype\": \"float64\", \"shape\": [2, 2], \"values\": [1, 2, \"nan\", \"-inf\"]}"},
      {"explicit_uint64", "{\"dtype\": \"uint64\", \"shape\": [2], \"values\": [0, 18446744073709551615]}"},
      {"explicit_int8", "{\"dtype\": \"int8\", \"shape\": [], \"values\": [-128]}"},
      {"explicit_string", "{\"dtype\": \"string\", \"shape\": [1, 1], \"values\": [\"x\"]}"},
  };
  for (const auto& [name, text] : seeds) WriteFile(out / (name + ".json"), text);
}

// fuzz_frames: mode, param (begin flags / string count), cap byte, then the bytes.
void FrameSeeds(const fs::path& out) {
  auto seed = [&](const std::string& name, uint8_t mode, uint8_t param, const std::string& bytes) {
    WriteFile(out / name, std::string{static_cast<char>(mode), static_cast<char>(param), '\0'} + bytes);
  };
  auto body = [](const std::string& f) { return f.substr(frame::kHeaderBytes); };
  const std::string task = "/job:a/replica:0/task:0";
  const RendezvousKey key = MakeRendezvousKey(task + "/device:CPU:0", 0x1234, "/job:b/replica:0/task:0/device:CPU:0",
                                              "edge_7", 0, 0);
  std::string hello, proven, tensor, strings, control, lend, data;
  frame::AppendHello(&hello, frame::Hello{111, task, false, {}});
  frame::Hello with_proof{111, task, true, {}};
  with_proof.proof.pid = 4242;
  with_proof.proof.address = 0x7f0000001000u;
  for (size_t i = 0; i < with_proof.proof.cookie.size(); ++i) with_proof.proof.cookie[i] = static_cast<uint8_t>(i);
  frame::AppendHello(&proven, with_proof);
  frame::AppendBegin(&tensor, frame::kFlagDead, 1,
                     frame::Begin{1, DT_FLOAT, 24, EncodeRendezvousMeta(5, key), {2, 3}});
  frame::AppendBegin(&strings, 0, 2, frame::Begin{1, DT_STRING, 19, EncodeRendezvousMeta(5, key), {2}});
  CollectiveMessage join;
  join.group = 1;
  join.size = 2;
  join.forming = true;
  join.incarnation = 111;
  frame::AppendBegin(&control, 0, 3, frame::Begin{2, DT_INVALID, 0, EncodeCollectiveMessage(join), {}});
  frame::AppendLend(&lend, 1, 0x7f0000002000u);
  frame::AppendHeader(&data, frame::Header{frame::kData, 0, 1, 24});
  data += std::string(24, '\x01');
  const std::vector<std::string> elements = {"abc", ""};
  std::string payload;
  frame::AppendStrings(&payload, elements.data(), 2);
  std::string answer;
  frame::AppendHeader(&answer, frame::Header{frame::kSameHost, 0, 0, 0});
  CollectiveMessage chunk;
  chunk.kind = CollectiveMessage::kData;
  chunk.group = 1;
  chunk.epoch = 3;
  chunk.instance = 7;
  chunk.phase = 1;
  chunk.from = 1;
  chunk.dtype = DT_FLOAT;
  chunk.elements = 1024;
  chunk.plan = 99;

  seed("stream", 0, 0, hello + tensor + data);
  seed("stream_lend", 0, 0, proven + tensor + lend + strings + control);
  seed("header", 1, 0, answer);
  seed("hello", 2, 0, body(hello));
  seed("hello_proof", 2, 0, body(proven));
  seed("begin", 3, frame::kFlagDead, body(tensor));
  seed("begin_strings", 3, 0, body(strings));
  seed("begin_control", 3, 0, body(control));
  seed("lend", 4, 0, body(lend));
  seed("strings", 5, 2, payload);
  seed("rendezvous_meta", 6, 0, EncodeRendezvousMeta(-3, key));
  seed("collective_join", 7, 0, EncodeCollectiveMessage(join));
  seed("collective_data", 7, 0, EncodeCollectiveMessage(chunk));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_make_seeds CORPUS_DIR DATA_DIR (tests/fuzz/corpus tests/data)\n";
    return 1;
  }
  try {
    const fs::path corpus = argv[1];
    const fs::path scratch_dir = fs::temp_directory_path() / ("af_fuzz_seeds_" + std::to_string(::getpid()));
    fs::create_directories(scratch_dir);
    const fs::path scratch = scratch_dir / "file";
    for (const char* t : {"fuzz_graphdef", "fuzz_records", "fuzz_checkpoint", "fuzz_json_tensor", "fuzz_tf_checkpoint",
                          "fuzz_frames"}) {
      fs::remove_all(corpus / t);
      fs::create_directories(corpus / t);
    }
    GraphSeeds(corpus / "fuzz_graphdef", argv[2]);
    RecordSeeds(corpus / "fuzz_records", scratch);
    CheckpointSeeds(corpus / "fuzz_checkpoint", scratch);
    JsonSeeds(corpus / "fuzz_json_tensor");
    TfCheckpointSeeds(corpus / "fuzz_tf_checkpoint", scratch);
    FrameSeeds(corpus / "fuzz_frames");
    fs::remove_all(scratch_dir);
  } catch (const std::exception& e) {
    std::cerr << "fuzz_make_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
