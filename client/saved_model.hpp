// SavedModel: loading a model TensorFlow (or anyone) saved in TensorFlow's
// SavedModel layout into a Session, and its signatures, the named inputs and
// outputs a model is served by.
//
//   <dir>/saved_model.pb (or .pbtxt)   a SavedModel: one MetaGraphDef per tag set
//   <dir>/variables/variables.index    the variables, a TensorFlow V2 checkpoint
//   <dir>/variables/variables.data-*
//   <dir>/assets/                      files the graph reads (vocabularies)
//
//   Session session;
//   proto::MetaGraphDef meta;
//   AF_RETURN_IF_ERROR(LoadSavedModel("/models/mnist/1", {"serve"}, &session, &meta));
//   const proto::SignatureDef* sig;
//   AF_RETURN_IF_ERROR(FindSignature(meta, "serving_default", &sig));
//   // feed sig->inputs().at("x").name(), fetch sig->outputs().at("y").name()
//
// LoadSavedModel picks the meta graph whose tags include every requested one,
// creates the session's graph from it, restores the variables by running the
// saver's restore op with the checkpoint's prefix fed (when the model has
// variables), then runs the init op (TF2's "__saved_model_init_op"
// signature, else the collection "saved_model_main_op", else the older
// "legacy_init_op") with each asset's path fed. That is how TensorFlow 1
// wrote SavedModels (tf.compat.v1.saved_model, Estimator.export_saved_model),
// and how TensorFlow 2's load too: their computation is in the graph's
// function library, called through StatefulPartitionedCall (the serving
// function, the restore function fed "saver_filename"), and those calls are
// inlined when the graph is imported (graph/function_inlining.hpp). A model
// using ops this build lacks is refused with every one of them named.
#pragma once

#include <set>
#include <string>

#include "actorflow/client/session.hpp"
#include "actorflow/core/proto/saved_model.pb.h"
#include "actorflow/core/status.hpp"

namespace actorflow {

constexpr char kSavedModelFilename[] = "saved_model.pb";
constexpr char kSavedModelTextFilename[] = "saved_model.pbtxt";
constexpr char kSavedModelServeTag[] = "serve";
constexpr char kDefaultServingSignature[] = "serving_default";

/// Reads <dir>/saved_model.pb (or .pbtxt): NotFound naming the directory when
/// it has neither; InvalidArgument naming the file when it does not parse.
Status ReadSavedModel(const std::string& dir, proto::SavedModel* model);

/// The meta graph of `model` whose tags include all of `tags`; NotFound
/// listing the tag sets it has.
Status FindMetaGraph(const proto::SavedModel& model, const std::set<std::string>& tags,
                     const proto::MetaGraphDef** meta);

/// The signature `key` of `meta`; NotFound listing the keys it has.
Status FindSignature(const proto::MetaGraphDef& meta, const std::string& key, const proto::SignatureDef** signature);

/// Loads the SavedModel in `dir` (the meta graph tagged `tags`) into the new
/// `session`: its graph, its variables, its main op. `meta`, when given, gets
/// the meta graph (signatures, collections). Errors name the directory.
Status LoadSavedModel(const std::string& dir, const std::set<std::string>& tags, Session* session,
                      proto::MetaGraphDef* meta = nullptr);

/// "serve", "serve, gpu": a tag set as written in messages.
std::string TagSetString(const proto::MetaGraphDef& meta);

}  // namespace actorflow
