// GraphDef import/export and files.
//
// ImportGraphDef builds a Graph from a GraphDef (TensorFlow's or ours):
// attrs get their defaults, inputs are resolved by name, and every problem is
// an error naming the node: a name TensorFlow would refuse, unknown op,
// missing input node or port, dtype mismatch, wrong number of inputs,
// duplicate name, cycle.
//
// GraphDefs may be hostile: count attrs are checked against the inputs a node
// lists and bounded (ops/attrs.hpp) before they size anything, the graph's
// outputs are bounded by kMaxImportedOutputs and files by kMaxGraphDefBytes.
// None of these functions throws: as a last line of defence an exception
// becomes a Status (std::bad_alloc ResourceExhausted, std::length_error
// InvalidArgument, anything else Internal), naming the node when known. After
// a failed ImportGraphDef the graph holds whatever was added before the error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

/// The most outputs (of all nodes together) an imported GraphDef may have:
/// each costs a dtype here and a shape in static shape inference, so a small
/// GraphDef of many nodes with huge output counts cannot take gigabytes.
constexpr int64_t kMaxImportedOutputs = int64_t{1} << 24;
/// The largest GraphDef file read: protobuf parses at most 2 GiB.
constexpr int64_t kMaxGraphDefBytes = (int64_t{1} << 31) - 1;

/// A Placeholder's empty `shape {}` meant "unknown shape" up to this producer
/// (TensorFlow's Placeholder shape function); from 22 on it is a scalar.
constexpr int kLastLegacyPlaceholderProducer = 21;

/// An op type a GraphDef uses that the registry lacks: the first node using
/// it and how many use it.
struct UnregisteredOp {
  std::string op, first_node;
  int64_t nodes = 0;
  bool in_function_library = false;  // used by a function of the graph's library (first_node: "function/node")
};
/// Every unregistered op type `def` uses, in the order the graph first uses
/// them, then those only its library's functions use (calls of those
/// functions are inlined on import: graph/function_inlining.hpp).
std::vector<UnregisteredOp> UnregisteredOps(const proto::GraphDef& def);

/// The graph keeps the GraphDef's versions, and TensorFlow's rules for its
/// producer apply (a GraphDef without `versions` has producer 0, the oldest).
/// Before adding any node, every op type the graph uses that the registry
/// lacks is reported in one NotFound error, with the first node using each.
Status ImportGraphDef(const proto::GraphDef& def, Graph* g);

/// TensorFlow's rule for node names (graph_constructor.cc, internal ops
/// allowed): pieces joined by '>', the first starting with a letter, digit,
/// '.' or '_', every later one with a letter, digit or '.', then letters,
/// digits and "_.-/". A name outside it (a ':' or a space, say) could not be
/// referred to as an input "name:port" once the graph is rewritten for a step.
bool IsValidNodeName(const std::string& name);

/// Reads a binary (.pb) or text (.pbtxt, '#' comments allowed) GraphDef.
/// The format is chosen by extension, else sniffed; a .pb file holding text
/// (what tf.io.write_graph(as_text=True) writes under any name) is read as
/// text. In text, a field no message here declares is an error naming it and
/// its line, except TensorFlow's fields these protos leave out (debug info,
/// full types), which are skipped; binary keeps unknown fields unread.
/// NotFound for a missing file; InvalidArgument naming the file for a
/// directory, an empty file or a malformed one (with the line, for text).
Status ReadGraphDefFile(const std::string& path, proto::GraphDef* def);
Status ParseGraphDefText(const std::string& text, proto::GraphDef* def, const std::string& origin = "<text>");
/// ReadGraphDefFile's rules for another message of TensorFlow's (`kind`
/// names it in errors: "SavedModel"), e.g. a saved_model.pb or .pbtxt.
Status ReadProtoFile(const std::string& path, const std::string& kind, google::protobuf::Message* message);
/// Writes text when the path ends in .pbtxt or .txt, binary otherwise.
Status WriteGraphDefFile(const std::string& path, const proto::GraphDef& def);

}  // namespace actorflow
