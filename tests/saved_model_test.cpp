// SavedModels (client/saved_model.hpp): a model saved in TensorFlow 1's
// SavedModel layout (what tf.compat.v1.saved_model.Builder writes: the graph
// with its saver's save/ and restore/ nodes, the variables as a V2
// checkpoint under variables/, signatures, a main op fed its assets) loads
// into a session and serves through its signature; binary and text files,
// ref and resource variables; TensorFlow 2's layout, functions and all; the
// errors a user meets name the directory, the tags and the signatures there are.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <google/protobuf/text_format.h>

#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/saved_model.hpp"
#include "actorflow/client/session.hpp"
#include "test_util.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;
using test::Values;
namespace fs = std::filesystem;

namespace {

std::vector<Tensor> RunOk(Session& s, const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {}) {
  std::vector<Tensor> out;
  RunOptions bounded;
  bounded.timeout_in_ms = 60000;
  Status st = s.Run(bounded, feeds, fetches, targets, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

Tensor Str(const std::string& s) {
  Tensor t(DT_STRING, TensorShape{});
  t.scalar<std::string>() = s;
  return t;
}

proto::TensorInfo Info(const std::string& name, DataType dtype) {
  proto::TensorInfo t;
  t.set_name(name);
  t.set_dtype(static_cast<proto::DataType>(dtype));
  return t;
}

/// Writes a SavedModel to `dir` as TensorFlow 1's builder does: y = x * w + b
/// with w a ref variable [[2, 0], [0, 3]] and b a resource variable [1, -1];
/// an asset "vocab.txt" whose path the main op stores in the string variable
/// "asset_path". `text` writes saved_model.pbtxt instead of .pb.
void WriteSavedModel(const std::string& dir, bool text = false) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 2}));
  auto w = ops::Variable(root.WithOpName("w"), PartialTensorShape(TensorShape{2, 2}), DT_FLOAT);
  auto b = ops::VarHandleOp(root.WithOpName("b"), DT_FLOAT, PartialTensorShape(TensorShape{2}));
  auto asset_var = ops::Variable(root.WithOpName("asset_path"), PartialTensorShape(TensorShape{}), DT_STRING);
  auto y = ops::Add(root.WithOpName("y"), ops::MatMul(root, x, w), ops::ReadVariableOp(root, b, DT_FLOAT));
  ops::Assign(root.WithOpName("init_w"), w, ops::Const(root, {{2.f, 0.f}, {0.f, 3.f}}));
  ops::AssignVariableOp(root.WithOpName("init_b"), b, ops::Const(root, {1.f, -1.f}));
  // The saver, as tf.compat.v1.train.Saver builds it.
  Scope save = root.NewSubScope("save");
  auto filename = ops::Const(save.WithOpName("Const"), Str("model"));
  auto names = ops::Const(save, test::Strings({"b", "w"}));
  auto slices = ops::Const(save, test::Strings({"", ""}));
  auto save_op = ops::SaveV2(save.WithOpName("SaveV2"), filename, names, slices,
                             {ops::ReadVariableOp(save, b, DT_FLOAT), ops::Identity(save, w)});
  ops::Identity(save.WithOpName("control_dependency").WithControlDependencies({save_op}), filename);
  auto restored = ops::RestoreV2(save.WithOpName("RestoreV2"), filename, names, slices, {DT_FLOAT, DT_FLOAT});
  auto assign_b = ops::AssignVariableOp(save.WithOpName("AssignVariableOp"), b, restored[0]);
  auto assign_w = ops::Assign(save.WithOpName("Assign"), w, restored[1]);
  ops::NoOp(save.WithOpName("restore_all").WithControlDependencies({assign_b, Operation(assign_w.node())}));
  // The main op: the asset's path into a variable.
  auto asset = ops::Const(root.WithOpName("asset_filepath"), Str("vocab.txt"));
  ops::Assign(root.WithOpName("main_op"), asset_var, asset);
  ops::Identity(root.WithOpName("read_asset_path"), asset_var);

  proto::MetaGraphDef meta;
  REQUIRE(root.ToGraphDef(meta.mutable_graph_def()).ok());
  meta.mutable_meta_info_def()->add_tags("serve");
  meta.mutable_meta_info_def()->set_tensorflow_version("1.15.5");
  auto* saver = meta.mutable_saver_def();
  saver->set_filename_tensor_name("save/Const:0");
  saver->set_save_tensor_name("save/control_dependency:0");
  saver->set_restore_op_name("save/restore_all");
  saver->set_version(proto::SaverDef::V2);
  (*meta.mutable_collection_def())["saved_model_main_op"].mutable_node_list()->add_value("main_op");
  auto* asset_def = meta.add_asset_file_def();
  *asset_def->mutable_tensor_info() = Info("asset_filepath:0", DT_STRING);
  asset_def->set_filename("vocab.txt");
  proto::SignatureDef sig;
  (*sig.mutable_inputs())["inputs"] = Info("x:0", DT_FLOAT);
  (*sig.mutable_outputs())["scores"] = Info("y:0", DT_FLOAT);
  sig.set_method_name("tensorflow/serving/predict");
  (*meta.mutable_signature_def())["serving_default"] = sig;
  // Another meta graph, for training.
  proto::SavedModel model;
  model.set_saved_model_schema_version(1);
  *model.add_meta_graphs() = meta;
  proto::MetaGraphDef train = meta;
  train.mutable_meta_info_def()->clear_tags();
  train.mutable_meta_info_def()->add_tags("train");
  *model.add_meta_graphs() = train;

  // The variables, written by running the saver.
  fs::create_directories(dir + "/variables");
  fs::create_directories(dir + "/assets");
  std::ofstream(dir + "/assets/vocab.txt") << "a\nb\n";
  Session session;
  REQUIRE(session.Create(meta.graph_def()).ok());
  RunOk(session, {}, {}, {"init_w", "init_b"});
  RunOk(session, {{"save/Const:0", Str(dir + "/variables/variables")}}, {"save/control_dependency:0"});
  std::string bytes;
  if (text) {
    REQUIRE(google::protobuf::TextFormat::PrintToString(model, &bytes));
    std::ofstream(dir + "/saved_model.pbtxt") << bytes;
  } else {
    REQUIRE(model.SerializeToString(&bytes));
    std::ofstream(dir + "/saved_model.pb", std::ios::binary) << bytes;
  }
}

}  // namespace

TEST_CASE("a TensorFlow 1 SavedModel loads with its variables and assets and serves through its signature") {
  const bool text = GENERATE(false, true);
  test::TempDir dir("af_saved_model_test");
  const std::string model_dir = dir / "1";
  WriteSavedModel(model_dir, text);
  Session session;
  proto::MetaGraphDef meta;
  Status s = LoadSavedModel(model_dir, {"serve"}, &session, &meta);
  INFO(s.ToString());
  REQUIRE(s.ok());
  const proto::SignatureDef* sig = nullptr;
  REQUIRE(FindSignature(meta, kDefaultServingSignature, &sig).ok());
  Tensor x = test::MakeTensor<float>({1.f, 1.f, 2.f, -1.f}, TensorShape{2, 2});
  auto out = RunOk(session, {{sig->inputs().at("inputs").name(), x}}, {sig->outputs().at("scores").name()});
  CHECK(Values<float>(out[0]) == std::vector<float>{3, 2, 5, -4});  // x * [[2,0],[0,3]] + [1,-1]
  // The main op ran with the asset's path fed.
  CHECK(RunOk(session, {}, {"read_asset_path"})[0].scalar<std::string>() == model_dir + "/assets/vocab.txt");
  CHECK(TagSetString(meta) == "{serve}");
}

TEST_CASE("SavedModel errors name the directory, the tag sets and the signatures there are") {
  test::TempDir dir("af_saved_model_test");
  const std::string model_dir = dir / "1";
  WriteSavedModel(model_dir);
  Session session;
  Status s = LoadSavedModel(model_dir, {"serve", "gpu"}, &session);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains(model_dir) && Contains("{gpu, serve}") && Contains("{serve}") && Contains("{train}"));
  s = LoadSavedModel(dir / "nope", {"serve"}, &session);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains(dir / "nope"));
  s = LoadSavedModel(dir.path(), {"serve"}, &session);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("saved_model.pb"));

  proto::SavedModel model;
  REQUIRE(ReadSavedModel(model_dir, &model).ok());
  const proto::MetaGraphDef* meta = nullptr;
  REQUIRE(FindMetaGraph(model, {"serve"}, &meta).ok());
  const proto::SignatureDef* sig = nullptr;
  s = FindSignature(*meta, "predict", &sig);
  CHECK(errors::IsNotFound(s));
  CHECK_THAT(s.message(), Contains("'serving_default'"));

  // A truncated saved_model.pb is an error naming it.
  std::string bytes = test::ReadBytes(model_dir + "/saved_model.pb");
  test::WriteBytes(model_dir + "/saved_model.pb", bytes.substr(0, bytes.size() / 2));
  Session other;
  s = LoadSavedModel(model_dir, {"serve"}, &other);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("saved_model.pb"));

  // Damaged variables: the restore fails naming the checkpoint.
  test::WriteBytes(model_dir + "/saved_model.pb", bytes);
  test::WriteBytes(model_dir + "/variables/variables.data-00000-of-00001", "x");
  Session third;
  s = LoadSavedModel(model_dir, {"serve"}, &third);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains("variables/variables"));
}

TEST_CASE("a TensorFlow 2 SavedModel loads: its serving and restore functions are inlined") {
  // As tf.saved_model.save writes it: the variable's handle captured by the
  // serving function's call, the variables restored by calling the restore
  // function with "saver_filename" fed, keys in the object-graph style.
  test::TempDir dir("af_saved_model_test");
  const std::string model_dir = dir / "2";
  const char* graph = R"(
node { name: "serving_default_x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 2 } } } } }
node { name: "w" op: "VarHandleOp" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } dim { size: 2 } } } }
       attr { key: "shared_name" value { s: "saved_model_test_tf2_w" } } }
node { name: "saver_filename" op: "Placeholder" attr { key: "dtype" value { type: DT_STRING } } }
node { name: "table_size" op: "VarHandleOp" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "shape" value { shape { } } } attr { key: "shared_name" value { s: "saved_model_test_tf2_table" } } }
node { name: "seven" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 7 } } } }
node { name: "init_table" op: "AssignVariableOp" input: "table_size" input: "seven" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "NoOp" op: "NoOp" input: "^init_table" }
node { name: "read_table_size" op: "ReadVariableOp" input: "table_size" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "StatefulPartitionedCall" op: "StatefulPartitionedCall" input: "serving_default_x" input: "w"
       attr { key: "Tin" value { list { type: DT_FLOAT type: DT_RESOURCE } } }
       attr { key: "Tout" value { list { type: DT_FLOAT } } }
       attr { key: "f" value { func { name: "__inference_signature_wrapper_31" } } } }
node { name: "StatefulPartitionedCall_2" op: "StatefulPartitionedCall" input: "saver_filename" input: "w"
       attr { key: "Tin" value { list { type: DT_STRING type: DT_RESOURCE } } }
       attr { key: "Tout" value { list { type: DT_STRING } } }
       attr { key: "f" value { func { name: "__inference__traced_restore_55" } } } }
library {
  function {
    signature { name: "__inference_signature_wrapper_31" input_arg { name: "x" type: DT_FLOAT }
                input_arg { name: "matmul_readvariableop_resource" type: DT_RESOURCE }
                output_arg { name: "identity" type: DT_FLOAT } is_stateful: true }
    node_def { name: "MatMul/ReadVariableOp" op: "ReadVariableOp" input: "matmul_readvariableop_resource"
               attr { key: "dtype" value { type: DT_FLOAT } } }
    node_def { name: "MatMul" op: "MatMul" input: "x" input: "MatMul/ReadVariableOp:value:0"
               attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "Identity" op: "Identity" input: "MatMul:product:0" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "identity" value: "Identity:output:0" }
  }
  function {
    signature { name: "__inference__traced_restore_55" input_arg { name: "file_prefix" type: DT_STRING }
                input_arg { name: "assignvariableop_resource" type: DT_RESOURCE }
                output_arg { name: "identity_1" type: DT_STRING } is_stateful: true }
    node_def { name: "RestoreV2/tensor_names" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
               attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } }
                                                    string_val: "w/.ATTRIBUTES/VARIABLE_VALUE" } } } }
    node_def { name: "RestoreV2/shape_and_slices" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
               attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: "" } } } }
    node_def { name: "RestoreV2" op: "RestoreV2" input: "file_prefix" input: "RestoreV2/tensor_names:output:0"
               input: "RestoreV2/shape_and_slices:output:0" attr { key: "dtypes" value { list { type: DT_FLOAT } } } }
    node_def { name: "Identity" op: "Identity" input: "RestoreV2:tensors:0" attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "AssignVariableOp" op: "AssignVariableOp" input: "assignvariableop_resource"
               input: "Identity:output:0" attr { key: "dtype" value { type: DT_FLOAT } } }
    node_def { name: "NoOp" op: "NoOp" input: "^AssignVariableOp" }
    node_def { name: "Identity_1" op: "Identity" input: "file_prefix" input: "^NoOp"
               attr { key: "T" value { type: DT_STRING } } }
    ret { key: "identity_1" value: "Identity_1:output:0" }
    control_ret { key: "AssignVariableOp" value: "AssignVariableOp" }
  }
}
)";
  proto::SavedModel model;
  auto* meta = model.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags("serve");
  meta->mutable_meta_info_def()->set_tensorflow_version("2.15.0");
  REQUIRE(google::protobuf::TextFormat::ParseFromString(graph, meta->mutable_graph_def()));
  meta->mutable_saver_def()->set_filename_tensor_name("saver_filename:0");
  meta->mutable_saver_def()->set_save_tensor_name("StatefulPartitionedCall_1:0");
  meta->mutable_saver_def()->set_restore_op_name("StatefulPartitionedCall_2");
  meta->mutable_saver_def()->set_version(proto::SaverDef::V2);
  proto::SignatureDef sig;
  (*sig.mutable_inputs())["x"] = Info("serving_default_x:0", DT_FLOAT);
  (*sig.mutable_outputs())["output_0"] = Info("StatefulPartitionedCall:0", DT_FLOAT);
  sig.set_method_name("tensorflow/serving/predict");
  (*meta->mutable_signature_def())["serving_default"] = sig;
  // TF2's init op, run by the loader after the restore (tables would be filled here).
  proto::SignatureDef init;
  (*init.mutable_outputs())["__saved_model_init_op"].set_name("NoOp");
  (*meta->mutable_signature_def())["__saved_model_init_op"] = init;
  fs::create_directories(model_dir + "/variables");
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  test::WriteBytes(model_dir + "/saved_model.pb", bytes);
  {
    std::unique_ptr<BundleWriter> w;
    REQUIRE(BundleWriter::Create(model_dir + "/variables/variables", &w).ok());
    REQUIRE(w->Add("w/.ATTRIBUTES/VARIABLE_VALUE", test::MakeTensor<float>({2, 0, 0, 3}, TensorShape{2, 2})).ok());
    REQUIRE(w->Finish().ok());
  }
  Session session;
  proto::MetaGraphDef loaded;
  Status s = LoadSavedModel(model_dir, {"serve"}, &session, &loaded);
  INFO(s.ToString());
  REQUIRE(s.ok());
  auto out = RunOk(session, {{"serving_default_x:0", test::MakeTensor<float>({1, 1}, TensorShape{1, 2})}},
                   {"StatefulPartitionedCall:0"});
  CHECK(Values<float>(out[0]) == std::vector<float>{2, 3});
  CHECK(RunOk(session, {}, {"read_table_size"})[0].scalar<int32_t>() == 7);  // the init op ran
}

TEST_CASE("actorflow run and inspect take a SavedModel, feeding and fetching by signature keys") {
  test::TempDir dir("af_saved_model_test");
  const std::string model_dir = dir / "1";
  WriteSavedModel(model_dir);
  const std::string cli = AF_CLI_PATH;
  std::string out;
  int status = test::RunProgram(cli + " run --saved-model " + model_dir + " --feed 'inputs=[[1,1]]'", &out);
  INFO(out);
  CHECK(status == 0);
  CHECK_THAT(out, Contains("\"scores:0\"") && Contains("\"values\":[3.0,2.0]"));
  out.clear();
  // By tensor name too, and with another tag set and signature refused by name.
  status = test::RunProgram(cli + " run --saved-model " + model_dir + " --feed 'x=[[0,1]]' --fetch y", &out);
  CHECK(status == 0);
  CHECK_THAT(out, Contains("\"y:0\"") && Contains("[1.0,2.0]"));
  out.clear();
  status = test::RunProgram(cli + " run --saved-model " + model_dir + " --signature predict --feed 'inputs=[[1,1]]'", &out);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(out, Contains("'serving_default'"));
  out.clear();
  status = test::RunProgram(cli + " run --saved-model " + model_dir + " --tag train --feed 'inputs=[[1,1]]'", &out);
  CHECK(status == 0);
  out.clear();
  status = test::RunProgram(cli + " run --saved-model " + model_dir + " --graph g.pb", &out);
  CHECK(WEXITSTATUS(status) == 2);
  out.clear();
  status = test::RunProgram(cli + " inspect --saved-model " + model_dir, &out);
  CHECK(status == 0);
  CHECK_THAT(out, Contains("meta graph tagged {serve} (TensorFlow 1.15.5)") &&
                      Contains("'serving_default' (tensorflow/serving/predict)") &&
                      Contains("input  inputs: x:0  float") && Contains("output scores: y:0  float") &&
                      Contains("variables restored by 'save/restore_all'") && Contains("ops this build lacks: none"));
}
