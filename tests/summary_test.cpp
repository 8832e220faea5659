// TensorBoard: the summary ops (ScalarSummary, HistogramSummary,
// MergeSummary, TensorSummaryV2) against TensorFlow's messages and the byte
// vectors of the format brief, events files framed byte for byte as that brief
// frames them, a file in the brief's bytes read back, and FileWriter's events
// (the graph, fetched summaries, host scalars) read back record by record.
// The byte vectors (docs/tensorflow-formats/tf_events.md) were derived from
// TensorFlow's sources by the brief's own re-implementation, not taken from
// files TensorFlow wrote; the test names say so.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cfloat>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "actorflow/client/train/summary_writer.hpp"
#include "actorflow/core/io/events_writer.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "actorflow/core/proto/event.pb.h"
#include "actorflow/core/proto/summary.pb.h"
#include "test_util.hpp"

using namespace actorflow;
using test::RunOk;
using test::RunStatus;

namespace {

std::string FromHex(const std::string& hex) {
  std::string out;
  std::string digits;
  for (char c : hex)
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  for (size_t i = 0; i + 1 < digits.size(); i += 2) out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  return out;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every record of an events file, parsed; REQUIREs that each frame's CRCs hold and each parses.
std::vector<proto::Event> ReadEvents(const std::string& path) {
  std::unique_ptr<io::FileRecordReader> reader;
  REQUIRE(io::TFRecordFileReader::Create({}, &reader).ok());
  REQUIRE(reader->Open(path).ok());
  std::vector<proto::Event> events;
  std::string key, value;
  Status s;
  while ((s = reader->ReadRecord(&key, &value)).ok()) {
    proto::Event e;
    REQUIRE(e.ParseFromString(value));
    events.push_back(e);
  }
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kOutOfRange);  // the end, nothing torn
  return events;
}

std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("af_summary_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

std::string SummaryBytes(const Scope& root, const Output& summary) {
  const std::vector<Tensor> out = RunOk(root, {summary});
  REQUIRE(out[0].dtype() == DT_STRING);
  REQUIRE(out[0].dims() == 0);
  return out[0].scalar<std::string>();
}

}  // namespace

TEST_CASE("HistogramSummary gives the format brief's bytes (our re-implementation's vector, not TensorFlow's output): exponential buckets, empty runs collapsed") {
  Scope root = Scope::NewRootScope();
  const std::string bytes = SummaryBytes(root, ops::HistogramSummary(root, std::string("h"), ops::Const(root, {1.f, 2.f})));
  // The serialized Summary for tag "h" and values {1, 2} (138 bytes), as the
  // brief's re-implementation of TensorFlow's histogram.cc encodes it.
  CHECK(bytes == FromHex("0a87010a01682a810109000000000000f03f110000000000000040190000000000000040210000000000000840"
                         "290000000000001440322808996919155aed3f2b14facdbe24f03fdc94cd2e8d75ff3fe011f10c744d0140ffffff"
                         "ffffffef7f3a280000000000000000000000000000f03f0000000000000000000000000000f03f0000000000000000"));
  proto::Summary empty;
  REQUIRE(empty.ParseFromString(SummaryBytes(root, ops::HistogramSummary(root, std::string("e"), Tensor(DT_FLOAT, TensorShape{0})))));
  CHECK(empty.value(0).histo().bucket_limit_size() == 1);
  CHECK(empty.value(0).histo().bucket_limit(0) == DBL_MAX);
  CHECK(empty.value(0).histo().min() == DBL_MAX);

  auto p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT);
  const Status nan = RunStatus(root, {ops::HistogramSummary(root.WithOpName("weights_hist"), std::string("w"), p)},
                               {{"p", test::MakeTensor<float>({1.f, std::nanf("")}, {2})}});
  CHECK(nan.code() == Code::kInvalidArgument);
  CHECK_THAT(nan.message(), Catch::Contains("Nan in summary histogram for: weights_hist"));
}

TEST_CASE("ScalarSummary tags each value; MergeSummary joins summaries and refuses a tag twice") {
  Scope root = Scope::NewRootScope();
  auto loss = ops::ScalarSummary(root, std::string("loss"), 0.5f);
  CHECK(SummaryBytes(root, loss) == FromHex("0a0b0a046c6f7373150000003f"));  // value {tag: "loss" simple_value: 0.5}
  auto pair = ops::ScalarSummary(root, ops::Const(root, {std::string("a"), std::string("b")}), ops::Const(root, {1, 2}));
  proto::Summary merged;
  REQUIRE(merged.ParseFromString(SummaryBytes(root, ops::MergeSummary(root, {loss, pair}))));
  REQUIRE(merged.value_size() == 3);
  CHECK(merged.value(0).tag() == "loss");
  CHECK(merged.value(2).tag() == "b");
  CHECK(merged.value(2).simple_value() == 2.f);

  Status s = RunStatus(root, {ops::MergeSummary(root, {loss, loss})}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("Duplicate tag loss found in summary inputs"));
  s = RunStatus(root, {ops::ScalarSummary(root, ops::Const(root, {std::string("a"), std::string("b")}), ops::Const(root, {1.f}))}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("tags and values not the same shape: [2] != [1]"));
  s = RunStatus(root, {ops::MergeSummary(root, {ops::Const(root, std::string("\xff\xff"))})}, {});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("Could not parse one of the summary inputs"));
}

TEST_CASE("an events file is framed as the format brief's vector (our re-implementation of TensorFlow's framing), named by time and host, version record first") {
  const std::string dir = TempDir("events");
  io::EventsWriter::Options o;
  o.now_seconds = 1700000000.75;
  o.filename_suffix = ".v2";
  std::unique_ptr<io::EventsWriter> w;
  REQUIRE(io::EventsWriter::Create(dir, o, &w).ok());  // creates the directory
  const std::string name = std::filesystem::path(w->filename()).filename().string();
  CHECK(name.rfind("events.out.tfevents.1700000000.", 0) == 0);
  CHECK(name.size() > 4);
  CHECK(name.substr(name.size() - 3) == ".v2");
  const size_t version_record = FileBytes(w->filename()).size();  // flushed at once
  CHECK(version_record > 0);

  proto::Event e;
  e.set_wall_time(1700000001.5);
  e.set_step(3);
  proto::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag("loss");
  v->set_simple_value(0.5f);
  REQUIRE(w->WriteEvent(e).ok());
  REQUIRE(w->Close().ok());
  // The brief's record of that event: length, masked CRC, the Event, masked CRC.
  CHECK(FileBytes(w->filename()).substr(version_record) ==
        FromHex("1a00000000000000129bd82d0900006040fc54d94110032a0d0a0b0a046c6f7373150000003f96253a59"));
  const std::vector<proto::Event> events = ReadEvents(w->filename());
  REQUIRE(events.size() == 2);
  CHECK(events[0].file_version() == "brain.Event:2");
  CHECK(events[0].wall_time() == 1700000000.0);  // whole seconds, as TensorFlow writes it
  CHECK(events[1].summary().value(0).simple_value() == 0.5f);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an events file in the format brief's bytes for TensorFlow's writer (first record, a scalar; not a TensorFlow-written file) reads back") {
  const std::string dir = TempDir("tf_bytes");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/events.out.tfevents.1700000000.tfhost";
  std::ofstream(path, std::ios::binary)
      << FromHex("3e00000000000000d9d240e70900000040fc54d9411a0d627261696e2e4576656e743a32522"
                 "40a2274656e736f72666c6f772e636f72652e7574696c2e6576656e74735f777269746572248c2258"
                 "1a00000000000000129bd82d0900006040fc54d94110032a0d0a0b0a046c6f7373150000003f96253a59");
  const std::vector<proto::Event> events = ReadEvents(path);
  REQUIRE(events.size() == 2);
  CHECK(events[0].file_version() == "brain.Event:2");
  CHECK(events[0].source_metadata().writer() == "tensorflow.core.util.events_writer");
  CHECK(events[1].step() == 3);
  CHECK(events[1].summary().value(0).tag() == "loss");
  std::filesystem::remove_all(dir);
}

TEST_CASE("FileWriter writes the graph, fetched summaries and host scalars with their steps") {
  const std::string dir = TempDir("file_writer");
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto merged = ops::MergeSummary(root, {ops::ScalarSummary(root, std::string("mean"), ops::Mean(root, x, 0)),
                                         ops::HistogramSummary(root, std::string("x"), x)});
  proto::GraphDef graph;
  REQUIRE(root.ToGraphDef(&graph).ok());
  std::unique_ptr<FileWriter> w;
  FileWriter::Options o;
  o.max_queue = 2;
  REQUIRE(FileWriter::Create(dir, o, &w).ok());
  REQUIRE(w->AddGraph(graph).ok());
  for (int step = 1; step <= 3; ++step) {
    const std::vector<Tensor> out = RunOk(root, {merged}, {{"x", test::MakeTensor<float>({1.f * step, 3.f * step}, {2})}});
    REQUIRE(w->AddSummary(out[0], step).ok());
    REQUIRE(w->AddScalar("accuracy", 0.25 * step, step).ok());
  }
  // max_queue 2: all but the last event are on disk before Close.
  CHECK(ReadEvents(w->filename()).size() >= 1 + 1 + 5);
  REQUIRE(w->Close().ok());
  const std::vector<proto::Event> events = ReadEvents(w->filename());
  REQUIRE(events.size() == 1 + 1 + 6);
  proto::GraphDef back;
  REQUIRE(back.ParseFromString(events[1].graph_def()));
  CHECK(back.node_size() == graph.node_size());
  CHECK(events[2].step() == 1);
  REQUIRE(events[2].summary().value_size() == 2);
  CHECK(events[2].summary().value(0).simple_value() == 2.f);
  CHECK(events[2].summary().value(1).histo().num() == 2);
  CHECK(events[7].step() == 3);
  CHECK(events[7].summary().value(0).tag() == "accuracy");
  CHECK(events[7].summary().value(0).simple_value() == 0.75f);
  CHECK(events[7].wall_time() > 1.6e9);
  CHECK(w->AddSummary(std::string("\xff"), 4).code() == Code::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("train_digits --logdir writes each model's graph, loss per step and held-out accuracy") {
  const std::string dir = TempDir("train_digits");
  const test::ShellResult r = test::Shell(std::string("timeout 120 ") + AF_EXAMPLES_BIN_DIR +
                                          "/train_digits --steps 20 --log-every 10 --logdir " + dir + " 2>&1");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const char* run : {"softmax_regression", "mlp"}) {
    INFO(run);
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/" + run)) files.push_back(entry.path());
    REQUIRE(files.size() == 1);
    const std::vector<proto::Event> events = ReadEvents(files[0]);
    REQUIRE(events.size() == 1 + 1 + 20 + 1);  // version, graph, a loss per step, held-out accuracy
    CHECK_FALSE(events[1].graph_def().empty());
    CHECK(events[2].step() == 1);
    CHECK(events[2].summary().value(0).tag() == "loss");
    CHECK(events[21].step() == 20);
    CHECK(events[22].summary().value(0).tag() == "heldout_accuracy");
    CHECK(events[22].summary().value(0).simple_value() > 0.5f);
  }
  std::filesystem::remove_all(dir);
}
