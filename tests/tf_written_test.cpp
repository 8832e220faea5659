// Files TensorFlow itself wrote (tests/data/tensorflow/): from a TF 1.x
// Saver, the checkpoint's index table decodes, and our table builder gives its
// very bytes for its entries; its state file reads; its MetaGraphDef loads,
// trains a step, and saves a checkpoint whose tensors have the names, dtypes
// and shapes of TensorFlow's. From TF 2.10's Keras, a CNN's SavedModel loads
// (functions inlined, weights restored by its restore function) and classifies
// MNIST test images as it did when trained; its variables (a V2 checkpoint,
// index and data file as TensorFlow wrote them), re-saved by our BundleWriter,
// are TensorFlow's two files byte for byte.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/checkpoint/checkpoint_state.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/checkpoint/tf_bundle_format.hpp"
#include "actorflow/client/saved_model.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/meta_graph.pb.h"
#include "actorflow/graph/graph_def_io.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::ReadBytes;

namespace {

const std::string kDir = std::string(AF_TEST_DATA_DIR) + "/tensorflow";

// name -> (dtype, shape) of the entries of TensorFlow's index.
std::map<std::string, std::pair<DataType, TensorShape>> TensorFlowEntries() {
  const std::string bytes = ReadBytes(kDir + "/model.ckpt.index");
  sstable::Entries table;
  Status s = sstable::Parse("model.ckpt.index", bytes.data(), bytes.size(), &table);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(!table.empty());
  int shards = 0;
  REQUIRE(tf_bundle::DecodeHeader("model.ckpt.index", table[0].second, &shards).ok());
  CHECK(shards == 1);
  std::map<std::string, std::pair<DataType, TensorShape>> out;
  for (size_t i = 1; i < table.size(); ++i) {
    bundle::IndexEntry e;
    REQUIRE(tf_bundle::DecodeEntry("model.ckpt.index", table[i].first, table[i].second, shards, &e).ok());
    CHECK(e.unreadable.empty());
    out[e.name] = {e.dtype, e.shape};
  }
  return out;
}

// The first offset where `a` and `b` differ (the shorter one's size when one
// is a prefix of the other); npos when they are equal.
size_t FirstDifference(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return i;
  return a.size() == b.size() ? std::string::npos : n;
}

}  // namespace

TEST_CASE("TensorFlow's checkpoint index decodes, and our builder writes its bytes for its entries") {
  const std::string bytes = ReadBytes(kDir + "/model.ckpt.index");
  sstable::Entries table;
  REQUIRE(sstable::Parse("model.ckpt.index", bytes.data(), bytes.size(), &table).ok());
  std::string rebuilt;
  REQUIRE(sstable::Build(table, &rebuilt).ok());
  CHECK(rebuilt == bytes);
  const auto entries = TensorFlowEntries();
  CHECK(entries.size() == 14);  // 4 variables, 2 Adam slots each, beta1_power, beta2_power
  REQUIRE(entries.count("Variable"));
  CHECK(entries.at("Variable").first == DT_FLOAT);
  CHECK(entries.at("Variable").second == TensorShape({500, 10}));
  // Its entries re-encoded as we encode them are TensorFlow's bytes too.
  for (size_t i = 1; i < table.size(); ++i) {
    bundle::IndexEntry e;
    REQUIRE(tf_bundle::DecodeEntry("x", table[i].first, table[i].second, 1, &e).ok());
    INFO(e.name);
    CHECK(tf_bundle::EncodeEntry(e) == table[i].second);
  }
  CHECK(tf_bundle::EncodeHeader(1) == table[0].second);
}

TEST_CASE("TensorFlow's checkpoint state file reads") {
  CheckpointState st;
  REQUIRE(ReadCheckpointState(kDir, &st).ok());
  CHECK(st.latest == kDir + "/model.ckpt");
  CHECK(st.all == std::vector<std::string>{kDir + "/model.ckpt"});
}

TEST_CASE("TensorFlow's MetaGraphDef loads, trains, and saves a checkpoint of TensorFlow's names and shapes") {
  proto::MetaGraphDef meta;
  Status s = ReadProtoFile(kDir + "/model.ckpt.meta", "MetaGraphDef", &meta);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(UnregisteredOps(meta.graph_def()).empty());
  Session session;
  s = session.Create(meta.graph_def());
  INFO(s.ToString());
  REQUIRE(s.ok());
  RunOptions bounded;
  bounded.timeout_in_ms = 120000;
  std::vector<Tensor> out;
  REQUIRE(session.Run(bounded, {}, {}, {"init"}, &out).ok());
  // One Adam step on a batch of two images, then the model's softmax.
  Tensor x(DT_FLOAT, TensorShape{2, 784}), y(DT_FLOAT, TensorShape{2, 10});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) / 7.f;
  for (int64_t i = 0; i < y.NumElements(); ++i) y.data<float>()[i] = i % 10 == (i / 10) * 3 ? 1.f : 0.f;
  s = session.Run(bounded, {{"Placeholder", x}, {"Placeholder_1", y}}, {"Softmax:0"}, {"Adam"}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].shape() == TensorShape({2, 10}));
  float sum = 0;
  for (int j = 0; j < 10; ++j) sum += out[0].data<float>()[j];
  CHECK(sum == Approx(1.f).epsilon(1e-4));
  // Its saver, fed our path: the checkpoint holds TensorFlow's names, dtypes and shapes.
  test::TempDir dir("af_tf_written_test");
  const auto& saver = meta.saver_def();
  CHECK(saver.restore_op_name() == "save_1/restore_all");  // the script made a second Saver
  Tensor prefix(DT_STRING, TensorShape{});
  prefix.scalar<std::string>() = dir / "model.ckpt";
  s = session.Run(bounded, {{saver.filename_tensor_name(), prefix}}, {saver.save_tensor_name()}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::unique_ptr<BundleReader> r;
  REQUIRE(BundleReader::Open(dir / "model.ckpt", &r).ok());
  const auto want = TensorFlowEntries();
  std::vector<std::string> names;
  for (const auto& kv : want) names.push_back(kv.first);
  CHECK(r->TensorNames() == names);
  for (const auto& [name, dtype_shape] : want) {
    INFO(name);
    DataType dtype;
    TensorShape shape;
    REQUIRE(r->LookupDtypeAndShape(name, &dtype, &shape).ok());
    CHECK(dtype == dtype_shape.first);
    CHECK(shape == dtype_shape.second);
  }
  // And restores through the saver's restore op.
  s = session.Run(bounded, {{saver.filename_tensor_name(), prefix}}, {}, {saver.restore_op_name()}, &out);
  INFO(s.ToString());
  CHECK(s.ok());
}

TEST_CASE("TensorFlow 2's Keras SavedModel loads, restores its weights and classifies MNIST as trained") {
  Session session;
  proto::MetaGraphDef meta;
  Status s = LoadSavedModel(kDir + "/keras_cnn", {"serve"}, &session, &meta);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(meta.meta_info_def().tensorflow_version() == "2.10.0");
  const proto::SignatureDef* sig = nullptr;
  REQUIRE(FindSignature(meta, "serving_default", &sig).ok());
  // The test images, normalized as the model was trained
  // (tf.keras.utils.normalize(x, axis=1): each column of an image to unit L2 norm).
  const std::string raw = ReadBytes(kDir + "/mnist_t10k_200.bin");
  const int n = 200;
  REQUIRE(raw.size() == static_cast<size_t>(n * 784 + n));
  Tensor x(DT_FLOAT, TensorShape{n, 28, 28, 1});
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < 28; ++j) {
      double norm = 0;
      for (int i = 0; i < 28; ++i) norm += std::pow(static_cast<unsigned char>(raw[k * 784 + i * 28 + j]), 2.0);
      norm = std::sqrt(norm);
      for (int i = 0; i < 28; ++i) {
        const double v = static_cast<unsigned char>(raw[k * 784 + i * 28 + j]);
        x.data<float>()[k * 784 + i * 28 + j] = norm > 0 ? static_cast<float>(v / norm) : 0.f;
      }
    }
  RunOptions bounded;
  bounded.timeout_in_ms = 120000;
  std::vector<Tensor> out;
  s = session.Run(bounded, {{sig->inputs().at("conv2d_input").name(), x}}, {sig->outputs().at("dense_1").name()}, {},
                  &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].shape() == TensorShape({n, 10}));
  int correct = 0;
  for (int k = 0; k < n; ++k) {
    const float* p = out[0].data<float>() + k * 10;
    const int predicted = static_cast<int>(std::max_element(p, p + 10) - p);
    correct += predicted == static_cast<unsigned char>(raw[n * 784 + k]);
  }
  // Keras reported ~99% on the test set; untrained or misread weights give ~10%.
  CHECK(correct >= 0.97 * n);
}

TEST_CASE("TensorFlow 2's checkpoint re-saved by our BundleWriter is TensorFlow's index and data file byte for byte") {
  // keras_cnn/variables: TensorFlow 2.10's own files (tests/data/tensorflow/README.md).
  const std::string tf_prefix = kDir + "/keras_cnn/variables/variables";
  const std::string tf_index = ReadBytes(tf_prefix + ".index");
  const std::string tf_data = ReadBytes(tf_prefix + ".data-00000-of-00001");
  REQUIRE(tf_index.size() == 4172);
  REQUIRE(tf_data.size() == 1592451);
  // Every entry of TensorFlow's index: the BundleHeaderProto under "", then
  // each tensor's BundleEntryProto, which our encoder gives back unchanged.
  sstable::Entries table;
  Status s = sstable::Parse("variables.index", tf_index.data(), tf_index.size(), &table);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(table.size() == 65);  // the header, 64 tensors
  CHECK(table[0].first.empty());
  CHECK(table[0].second == tf_bundle::EncodeHeader(1));
  int shards = 0;
  REQUIRE(tf_bundle::DecodeHeader("variables.index", table[0].second, &shards).ok());
  REQUIRE(shards == 1);
  std::vector<bundle::IndexEntry> entries;
  for (size_t i = 1; i < table.size(); ++i) {
    INFO(table[i].first);
    bundle::IndexEntry e;
    REQUIRE(tf_bundle::DecodeEntry("variables.index", table[i].first, table[i].second, shards, &e).ok());
    CHECK(e.unreadable.empty());
    CHECK(tf_bundle::EncodeEntry(e) == table[i].second);
    entries.push_back(e);
  }
  // TensorFlow wrote the tensors in the order its saver added them, one after
  // another, unpadded: that order is their order in the data file.
  std::sort(entries.begin(), entries.end(),
            [](const bundle::IndexEntry& a, const bundle::IndexEntry& b) { return a.offset < b.offset; });
  uint64_t end = 0;
  for (const auto& e : entries) {
    INFO(e.name);
    CHECK(e.offset == end);
    end = e.offset + e.length;
  }
  CHECK(end == tf_data.size());
  // The object graph of TF2's object-based checkpoints: a string scalar (a
  // serialized TrackableObjectGraph), stored last.
  const bundle::IndexEntry& graph = entries.back();
  CHECK(graph.name == "_CHECKPOINTABLE_OBJECT_GRAPH");
  CHECK(graph.dtype == DT_STRING);
  CHECK(graph.shape == TensorShape({}));
  const auto floats = std::count_if(entries.begin(), entries.end(), [](const auto& e) { return e.dtype == DT_FLOAT; });
  CHECK(floats == 62);  // and optimizer/iter, an int64

  // Read by our reader, written by our writer in TensorFlow's order.
  std::unique_ptr<BundleReader> r;
  s = BundleReader::Open(tf_prefix, &r);
  INFO(s.ToString());
  REQUIRE(s.ok());
  test::TempDir dir("af_tf_written_resave");
  std::unique_ptr<BundleWriter> w;
  REQUIRE(BundleWriter::Create(dir / "variables", &w).ok());
  for (const auto& e : entries) {
    INFO(e.name);
    Tensor t;
    s = r->Lookup(e.name, &t);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(t.dtype() == e.dtype);
    CHECK(t.shape() == e.shape);
    REQUIRE(w->Add(e.name, t).ok());
  }
  s = w->Finish();
  INFO(s.ToString());
  REQUIRE(s.ok());

  // Compared by the first differing byte (printing megabytes of binary would say less).
  const std::string data = ReadBytes(dir / "variables.data-00000-of-00001");
  const size_t data_diff = FirstDifference(data, tf_data);
  std::string in_tensor = "none";
  for (const auto& e : entries)
    if (data_diff >= e.offset && data_diff < e.offset + e.length) in_tensor = e.name;
  INFO("the data files (" << data.size() << " and " << tf_data.size() << " bytes) first differ at byte "
                          << static_cast<int64_t>(data_diff) << ", in tensor " << in_tensor);
  CHECK(data_diff == std::string::npos);
  const std::string index = ReadBytes(dir / "variables.index");
  const size_t index_diff = FirstDifference(index, tf_index);
  INFO("the indexes (" << index.size() << " and " << tf_index.size() << " bytes) first differ at byte "
                       << static_cast<int64_t>(index_diff));
  CHECK(index_diff == std::string::npos);
}
