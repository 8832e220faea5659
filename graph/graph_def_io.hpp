// GraphDef import/export and files.
//
// ImportGraphDef builds a Graph from a GraphDef (TensorFlow's or ours):
// attrs get their defaults, inputs are resolved by name, and every problem is
// an error naming the node: unknown op, missing input node or port, dtype
// mismatch, wrong number of inputs, duplicate name, cycle.
#pragma once

#include <string>

#include "core/proto/graph.pb.h"
#include "core/status.hpp"
#include "graph/graph.hpp"

namespace actorflow {

Status ImportGraphDef(const proto::GraphDef& def, Graph* g);

/// Reads a binary (.pb) or text (.pbtxt, '#' comments allowed) GraphDef.
/// The format is chosen by extension, else sniffed; fields actorflow does not
/// model are skipped in text and kept in binary. NotFound for a missing file,
/// InvalidArgument with the file name and line for a malformed one.
Status ReadGraphDefFile(const std::string& path, proto::GraphDef* def);
Status ParseGraphDefText(const std::string& text, proto::GraphDef* def, const std::string& origin = "<text>");
/// Writes text when the path ends in .pbtxt or .txt, binary otherwise.
Status WriteGraphDefFile(const std::string& path, const proto::GraphDef& def);

}  // namespace actorflow
