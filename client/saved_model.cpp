#include "actorflow/client/saved_model.hpp"

#include <algorithm>
#include <filesystem>

#include "actorflow/checkpoint/tf_bundle_format.hpp"
#include "actorflow/core/io/file_io.hpp"
#include "actorflow/graph/graph_def_io.hpp"

namespace actorflow {
namespace {

constexpr char kInitOpSignature[] = "__saved_model_init_op";
constexpr char kMainOpCollection[] = "saved_model_main_op";
constexpr char kLegacyInitOpCollection[] = "legacy_init_op";
constexpr char kAssetsCollection[] = "saved_model_assets";
constexpr char kAssetFileDefType[] = "type.googleapis.com/tensorflow.AssetFileDef";

// The node of a collection holding one op ("saved_model_main_op"), or "".
std::string SingleOp(const proto::MetaGraphDef& meta, const std::string& collection) {
  auto it = meta.collection_def().find(collection);
  if (it == meta.collection_def().end() || it->second.node_list().value_size() == 0) return "";
  return it->second.node_list().value(0);
}

// Each asset's tensor, fed with the asset file's path.
Status AssetFeeds(const std::string& dir, const proto::MetaGraphDef& meta,
                  std::vector<std::pair<std::string, Tensor>>* feeds) {
  std::vector<proto::AssetFileDef> assets(meta.asset_file_def().begin(), meta.asset_file_def().end());
  auto it = meta.collection_def().find(kAssetsCollection);
  if (it != meta.collection_def().end()) {
    for (const auto& any : it->second.any_list().value()) {
      proto::AssetFileDef a;
      if (any.type_url() != kAssetFileDefType || !a.ParseFromString(any.value()))
        return errors::InvalidArgument("SavedModel '", dir, "': collection ", kAssetsCollection,
                                       " holds a ", any.type_url(), ", not an AssetFileDef");
      assets.push_back(std::move(a));
    }
  }
  for (const auto& a : assets) {
    if (a.tensor_info().name().empty() || a.filename().empty() || a.filename().find("..") != std::string::npos)
      return errors::InvalidArgument("SavedModel '", dir, "': an asset without a tensor or with file name '",
                                     a.filename(), "'");
    Tensor path(DT_STRING, TensorShape{});
    path.scalar<std::string>() = file_io::JoinPath(file_io::JoinPath(dir, "assets"), a.filename());
    feeds->emplace_back(a.tensor_info().name(), path);
  }
  return Status::OK();
}

// Why the graph cannot load, naming the model and the meta graph.
Status ExplainRefusal(const std::string& dir, const proto::MetaGraphDef& meta, const Status& s) {
  return Status(s.code(), "loading SavedModel '" + dir + "' (tags " + TagSetString(meta) + "): " + s.message());
}

}  // namespace

std::string TagSetString(const proto::MetaGraphDef& meta) {
  std::vector<std::string> tags(meta.meta_info_def().tags().begin(), meta.meta_info_def().tags().end());
  std::sort(tags.begin(), tags.end());
  std::string out = "{";
  for (size_t i = 0; i < tags.size(); ++i) out += (i ? ", " : "") + tags[i];
  return out + "}";
}

Status ReadSavedModel(const std::string& dir, proto::SavedModel* model) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return errors::NotFound("SavedModel '", dir, "': no such directory");
  const std::string pb = file_io::JoinPath(dir, kSavedModelFilename);
  const std::string pbtxt = file_io::JoinPath(dir, kSavedModelTextFilename);
  if (file_io::FileExists(pb)) return ReadProtoFile(pb, "SavedModel", model);
  if (file_io::FileExists(pbtxt)) return ReadProtoFile(pbtxt, "SavedModel", model);
  return errors::NotFound("'", dir, "' is not a SavedModel: it has neither ", kSavedModelFilename, " nor ",
                          kSavedModelTextFilename);
}

Status FindMetaGraph(const proto::SavedModel& model, const std::set<std::string>& tags,
                     const proto::MetaGraphDef** meta) {
  std::string have;
  for (const auto& m : model.meta_graphs()) {
    const auto& t = m.meta_info_def().tags();
    const bool all = std::all_of(tags.begin(), tags.end(),
                                 [&](const std::string& tag) { return std::find(t.begin(), t.end(), tag) != t.end(); });
    if (all) {
      *meta = &m;
      return Status::OK();
    }
    have += (have.empty() ? "" : ", ") + TagSetString(m);
  }
  std::string want;
  for (const auto& t : tags) want += (want.empty() ? "" : ", ") + t;
  return errors::NotFound("no meta graph tagged {", want, "}; the SavedModel has ",
                          have.empty() ? std::string("none") : have);
}

Status FindSignature(const proto::MetaGraphDef& meta, const std::string& key, const proto::SignatureDef** signature) {
  auto it = meta.signature_def().find(key);
  if (it != meta.signature_def().end()) {
    *signature = &it->second;
    return Status::OK();
  }
  std::vector<std::string> keys;
  for (const auto& kv : meta.signature_def()) keys.push_back("'" + kv.first + "'");
  std::sort(keys.begin(), keys.end());
  std::string list;
  for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
  return errors::NotFound("no signature '", key, "'; the meta graph has ", list.empty() ? std::string("none") : list);
}

Status LoadSavedModel(const std::string& dir, const std::set<std::string>& tags, Session* session,
                      proto::MetaGraphDef* meta_out) {
  proto::SavedModel model;
  AF_RETURN_IF_ERROR(ReadSavedModel(dir, &model));
  const proto::MetaGraphDef* meta = nullptr;
  Status s = FindMetaGraph(model, tags, &meta);
  if (!s.ok()) return s.WithContext("loading SavedModel '" + dir + "'");
  s = session->Create(meta->graph_def());
  if (!s.ok()) return ExplainRefusal(dir, *meta, s);
  RunOptions options;
  std::vector<Tensor> unused;
  // The variables: the saver's restore op, fed the checkpoint's prefix.
  const std::string variables = file_io::JoinPath(file_io::JoinPath(dir, "variables"), "variables");
  const proto::SaverDef& saver = meta->saver_def();
  if (meta->has_saver_def() && file_io::FileExists(tf_bundle::IndexFileName(variables))) {
    if (saver.restore_op_name().empty() || saver.filename_tensor_name().empty())
      return errors::InvalidArgument("SavedModel '", dir, "': its saver names no restore op or filename tensor");
    Tensor prefix(DT_STRING, TensorShape{});
    prefix.scalar<std::string>() = variables;
    s = session->Run(options, {{saver.filename_tensor_name(), prefix}}, {}, {saver.restore_op_name()}, &unused);
    if (!s.ok()) return s.WithContext("restoring the variables of SavedModel '" + dir + "' from '" + variables + "'");
  }
  // The init op (tables, local variables), with the assets' paths fed: as
  // TensorFlow's loader looks for it, the output of the "__saved_model_init_op"
  // signature (TF2), else the main op collection, else the legacy init op.
  std::string main_op;
  auto init = meta->signature_def().find(kInitOpSignature);
  if (init != meta->signature_def().end()) {
    auto out = init->second.outputs().find(kInitOpSignature);
    if (out != init->second.outputs().end()) main_op = out->second.name().substr(0, out->second.name().find(':'));
  }
  if (main_op.empty()) main_op = SingleOp(*meta, kMainOpCollection);
  if (main_op.empty()) main_op = SingleOp(*meta, kLegacyInitOpCollection);
  if (!main_op.empty()) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    AF_RETURN_IF_ERROR(AssetFeeds(dir, *meta, &feeds));
    s = session->Run(options, feeds, {}, {main_op}, &unused);
    if (!s.ok()) return s.WithContext("running the main op '" + main_op + "' of SavedModel '" + dir + "'");
  }
  if (meta_out) *meta_out = *meta;
  return Status::OK();
}

}  // namespace actorflow
