#include "actorflow/graph/graph_def_io.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "actorflow/graph/function_inlining.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

namespace {

// Every op type the graph uses that the registry lacks, in one error (a run
// per missing op would be needed otherwise): each with how many nodes use it
// and the first one's name, in the order the graph first uses them.
Status CheckOpsRegistered(const proto::GraphDef& def) {
  const std::vector<UnregisteredOp> missing = UnregisteredOps(def);
  if (missing.empty()) return Status::OK();
  std::string list;
  constexpr size_t kMaxListed = 50;
  for (size_t i = 0; i < missing.size() && i < kMaxListed; ++i) {
    const UnregisteredOp& m = missing[i];
    list += (i ? ", '" : "'") + m.op + "' (node '" + m.first_node + "'" +
            (m.nodes > 1 ? " and " + std::to_string(m.nodes - 1) + " more" : std::string()) +
            (m.in_function_library ? ", in a function of the graph's library" : "") + ")";
  }
  if (missing.size() > kMaxListed) list += " and " + std::to_string(missing.size() - kMaxListed) + " more op types";
  return errors::NotFound("the graph uses ", missing.size(), missing.size() == 1 ? " op type" : " op types",
                          " not registered in this build: ", list);
}

// TensorFlow's rule for graphs of producer 21 or older: a Placeholder's
// shape attr that is empty (`shape {}`, what they wrote for "any shape")
// means an unknown shape, not a scalar.
bool IsLegacyUnknownShape(const proto::NodeDef& nd) {
  if (nd.op() != "Placeholder") return false;
  auto it = nd.attr().find("shape");
  if (it == nd.attr().end() || !it->second.has_shape()) return false;
  const proto::TensorShapeProto& shape = it->second.shape();
  return !shape.unknown_rank() && shape.dim_size() == 0;
}

// ImportGraphDef proper; `*current` is the node being worked on, for the
// message when an exception ends the import.
Status ImportNodes(const proto::GraphDef& def, Graph* g, const proto::NodeDef** current) {
  AF_RETURN_IF_ERROR(CheckOpsRegistered(def));
  const bool legacy_placeholders = def.versions().producer() <= kLastLegacyPlaceholderProducer;
  std::vector<std::pair<Node*, const proto::NodeDef*>> added;
  added.reserve(def.node_size());
  int64_t outputs = 0;
  for (const auto& nd : def.node()) {
    *current = &nd;
    if (!nd.name().empty() && !IsValidNodeName(nd.name()))
      return errors::InvalidArgument("node '", nd.name(), "' (op '", nd.op(),
                                     "'): the name has characters TensorFlow does not allow in a node name");
    Node* n;
    if (legacy_placeholders && IsLegacyUnknownShape(nd)) {
      proto::NodeDef unknown = nd;
      (*unknown.mutable_attr())["shape"].mutable_shape()->set_unknown_rank(true);
      AF_RETURN_IF_ERROR(g->AddNode(std::move(unknown), &n, NumDataInputs(nd)));
    } else {
      AF_RETURN_IF_ERROR(g->AddNode(nd, &n, NumDataInputs(nd)));
    }
    added.emplace_back(n, &nd);
    outputs += n->num_outputs();  // each at most kMaxArgCount: no overflow before the check
    if (outputs > kMaxImportedOutputs)
      return errors::InvalidArgument("node '", nd.name(), "' (op '", nd.op(), "') brings the graph's outputs to ",
                                     outputs, ", more than the ", kMaxImportedOutputs, " a GraphDef may have");
  }
  for (auto& [n, nd] : added) {
    *current = nd;
    int data_index = 0;
    bool seen_control = false;
    // Its control inputs so far: AddControlEdge's scan of the node's edges
    // made a node with 100,000 control inputs take quadratic time.
    std::unordered_set<const Node*> control_srcs;
    for (int i = 0; i < nd->input_size(); ++i) {
      const std::string& in = nd->input(i);
      std::string src_name;
      int port;
      if (!ParseTensorName(in, &src_name, &port))
        return errors::InvalidArgument("node '", n->name(), "' has malformed input '", in, "'");
      Node* src = g->FindNode(src_name);
      if (!src)
        return errors::InvalidArgument("node '", n->name(), "': input ", i, " refers to unknown node '", src_name, "'");
      if (port == kControlSlot) {
        seen_control = true;
        if (control_srcs.insert(src).second) g->AddEdge(src, kControlSlot, n, kControlSlot);
        continue;
      }
      if (seen_control)
        return errors::InvalidArgument("node '", n->name(), "' has data input '", in, "' after a control input");
      if (port >= src->num_outputs())
        return errors::InvalidArgument("node '", n->name(), "': input '", in, "' refers to output ", port, " of '",
                                       src_name, "' (op '", src->type_string(), "'), which has ", src->num_outputs(),
                                       " outputs");
      if (data_index >= n->num_inputs())
        return errors::InvalidArgument("node '", n->name(), "' (op '", n->type_string(), "') has more than ",
                                       n->num_inputs(), " data inputs");
      g->AddEdge(src, port, n, data_index++);
    }
    if (data_index != n->num_inputs())
      return errors::InvalidArgument("node '", n->name(), "' (op '", n->type_string(), "') has ", data_index,
                                     " data inputs, expects ", n->num_inputs());
  }
  *current = nullptr;
  g->set_versions(def.versions());
  g->set_library(def.library());
  return ValidateGraph(*g);
}

std::string AtNode(const proto::NodeDef* nd) {
  return nd == nullptr ? std::string() : " at node '" + nd->name() + "' (op '" + nd->op() + "')";
}

}  // namespace

std::vector<UnregisteredOp> UnregisteredOps(const proto::GraphDef& def) {
  std::vector<UnregisteredOp> out;
  std::unordered_map<std::string, size_t> index;
  std::unordered_set<std::string> functions;
  for (const auto& f : def.library().function()) functions.insert(f.signature().name());
  // Calls of the library's functions are inlined on import: what counts is
  // the ops their bodies use.
  auto visit = [&](const proto::NodeDef& nd, const std::string& where, bool in_library) {
    if (OpRegistry::Global()->Find(nd.op()) != nullptr || functions.count(nd.op())) return;
    auto [it, added] = index.emplace(nd.op(), out.size());
    if (added) out.push_back({nd.op(), where + nd.name(), 0, in_library});
    ++out[it->second].nodes;
  };
  for (const auto& nd : def.node()) visit(nd, "", false);
  for (const auto& f : def.library().function())
    for (const auto& nd : f.node_def()) visit(nd, f.signature().name() + "/", true);
  return out;
}

bool IsValidNodeName(const std::string& name) {
  auto letter_digit = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  auto body = [&](char c) { return letter_digit(c) || c == '_' || c == '.' || c == '-' || c == '/'; };
  size_t i = 0;
  bool first_piece = true;
  while (true) {
    if (i >= name.size()) return false;  // empty name, or a '>' at its end
    const char head = name[i];
    if (!(letter_digit(head) || head == '.' || (first_piece && head == '_'))) return false;
    for (++i; i < name.size() && body(name[i]); ++i) {
    }
    if (i == name.size()) return true;
    if (name[i] != '>') return false;
    ++i;
    first_piece = false;
  }
}

Status ImportGraphDef(const proto::GraphDef& def, Graph* g) {
  // Counts and shapes are checked before they size anything; this is the last
  // line of defence, so that loading a graph never throws.
  const proto::NodeDef* current = nullptr;
  try {
    if (HasFunctionCalls(def)) {
      // Every op the functions use is known before their bodies are inlined.
      AF_RETURN_IF_ERROR(CheckOpsRegistered(def));
      proto::GraphDef inlined = def;
      AF_RETURN_IF_ERROR(InlineFunctionCalls(&inlined));
      return ImportNodes(inlined, g, &current);
    }
    return ImportNodes(def, g, &current);
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("out of memory importing the GraphDef", AtNode(current));
  } catch (const std::length_error& e) {
    return errors::InvalidArgument("GraphDef asks for a size too large", AtNode(current), ": ", e.what());
  } catch (const std::exception& e) {
    return errors::Internal("importing the GraphDef failed", AtNode(current), ": ", e.what());
  } catch (...) {
    return errors::Internal("importing the GraphDef failed", AtNode(current), ": unknown exception");
  }
}

namespace {
// The parser's first error, and the first field it skipped (a warning) that
// is not one of TensorFlow's fields the protos here leave out.
class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty()) first = At(line, column) + message;
  }
  void AddWarning(int line, int column, const std::string& message) override {
    // protobuf 3.21: Message type "actorflow.proto.NodeDef" has no field named "nmae".
    static const std::string kNoField = "has no field named \"";
    const size_t at = message.find(kNoField);
    if (at == std::string::npos || !unknown_field.empty()) return;
    const size_t begin = at + kNoField.size(), end = message.find('"', begin);
    const std::string field = message.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (IsTensorFlowFieldNotModelled(field)) return;
    std::string type;
    const size_t q = message.find('"');
    if (q < at) {
      type = message.substr(q + 1, message.find('"', q + 1) - q - 1);
      const size_t dot = type.rfind('.');
      if (dot != std::string::npos) type = type.substr(dot + 1);
    }
    unknown_field = At(line, column) + "unknown field '" + field + "'" + (type.empty() ? "" : " in " + type);
  }
  std::string first, unknown_field;

 private:
  static std::string At(int line, int column) {
    return "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": ";
  }
  // Fields of TensorFlow's GraphDef, NodeDef, FunctionDef and OpDef messages
  // that the protos here do not declare (debug information, full types,
  // handle data): skipped, as the binary parser keeps them unread.
  static bool IsTensorFlowFieldNotModelled(const std::string& field) {
    static const std::unordered_set<std::string> kFields = {
        "debug_info", "experimental_type", "arg_attr", "resource_arg_unique_id",
        "handle_data", "experimental_full_type", "deprecation",
        // MetaGraphDef's (saved_model.pbtxt): the op list, the TF2 object graph
        "stripped_op_list", "any_info", "object_graph_def", "composite_tensor"};
    return kFields.count(field) != 0;
  }
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Runs `fn`, turning an exception into a Status naming `what`.
template <class Fn>
Status NoThrow(const std::string& what, Fn fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("out of memory ", what);
  } catch (const std::length_error& e) {
    return errors::InvalidArgument(what, ": a size is too large: ", e.what());
  } catch (const std::exception& e) {
    return errors::Internal(what, ": ", e.what());
  } catch (...) {
    return errors::Internal(what, ": unknown exception");
  }
}

// Protobuf's text parser limits the nesting of the messages it knows, but
// skips an unknown field's value ({...}, <...>, [...]) recursively without a
// limit: "[[[[..." 30,000 deep overflows the stack (found by fuzz_graphdef,
// protobuf 3.21). So the text's nesting is measured first, outside strings
// and comments, and bounded as protobuf bounds known messages.
constexpr int kMaxTextNesting = 100;

Status CheckTextNesting(const std::string& text, const std::string& origin) {
  int depth = 0, line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '#') {  // a comment, to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {  // a string, escapes skipped; it ends at its quote or the line's end
      while (i + 1 < text.size() && text[i + 1] != c && text[i + 1] != '\n') i += text[i + 1] == '\\' ? 2 : 1;
      if (i + 1 < text.size() && text[i + 1] == c) ++i;
    } else if (c == '{' || c == '<' || c == '[') {
      if (++depth > kMaxTextNesting)
        return errors::InvalidArgument("cannot parse text GraphDef ", origin, ": line ", line, ", column ",
                                       i - line_start + 1, ": nested deeper than ", kMaxTextNesting, " levels");
    } else if ((c == '}' || c == '>' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return Status::OK();
}

Status ParseText(const std::string& text, google::protobuf::Message* def, const std::string& origin,
                 const std::string& kind = "GraphDef") {
  AF_RETURN_IF_ERROR(CheckTextNesting(text, origin));
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errs;
  parser.RecordErrorsTo(&errs);
  parser.AllowUnknownField(true);
  parser.AllowUnknownExtension(true);
  if (!parser.ParseFromString(text, def))
    return errors::InvalidArgument("cannot parse text ", kind, " ", origin, ": ", errs.first);
  if (!errs.unknown_field.empty())  // a misspelt field would otherwise be dropped without a word
    return errors::InvalidArgument("cannot parse text ", kind, " ", origin, ": ", errs.unknown_field);
  return Status::OK();
}

// Whether the bytes look like text: no control characters but whitespace.
bool LooksLikeText(const std::string& bytes) {
  if (bytes.empty()) return false;
  for (unsigned char c : bytes)
    if (c < 0x09 || (c > 0x0d && c < 0x20)) return false;
  return true;
}

Status ReadFile(const std::string& path, google::protobuf::Message* def, const std::string& kind = "GraphDef") {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const bool saved_model = std::filesystem::exists(std::filesystem::path(path) / "saved_model.pb", ec);
    return errors::InvalidArgument("graph file '", path, "' is a directory, not a ", kind,
                                   saved_model ? " (it holds a SavedModel: use --saved-model)" : "");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return errors::NotFound("cannot open ", kind, " file '", path, "'");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size > kMaxGraphDefBytes)
    return errors::InvalidArgument(kind, " file '", path, "' has ", static_cast<int64_t>(size),
                                   " bytes, more than the ", kMaxGraphDefBytes, " protobuf can parse");
  std::string bytes;
  if (size > 0) {
    bytes.resize(static_cast<size_t>(size));
    in.read(&bytes[0], size);
    bytes.resize(static_cast<size_t>(in.gcount()));
  } else {  // not seekable (a pipe): read what comes, then check
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
    if (static_cast<int64_t>(bytes.size()) > kMaxGraphDefBytes)
      return errors::InvalidArgument(kind, " file '", path, "' has more than the ", kMaxGraphDefBytes,
                                     " bytes protobuf can parse");
  }
  if (bytes.empty()) return errors::InvalidArgument(kind, " file '", path, "' is empty");
  const bool text_ext = EndsWith(path, ".pbtxt") || EndsWith(path, ".txt") || EndsWith(path, ".prototxt");
  const bool binary_ext = EndsWith(path, ".pb");
  if (text_ext) return ParseText(bytes, def, "'" + path + "'", kind);
  if (binary_ext) {
    if (def->ParseFromString(bytes)) return Status::OK();
    def->Clear();
    // A text GraphDef saved as .pb (tf.io.write_graph's as_text=True keeps the name it is given).
    if (LooksLikeText(bytes)) return ParseText(bytes, def, "'" + path + "' (text in a .pb file)", kind);
    return errors::InvalidArgument("cannot parse binary ", kind, " '", path, "' (", bytes.size(),
                                   " bytes): not a serialized ", kind, ", or truncated");
  }
  // Unknown extension: text if it is plain text, else binary.
  if (LooksLikeText(bytes)) return ParseText(bytes, def, "'" + path + "'", kind);
  if (!def->ParseFromString(bytes))
    return errors::InvalidArgument("cannot parse ", kind, " '", path, "' as binary or text");
  return Status::OK();
}

}  // namespace

Status ParseGraphDefText(const std::string& text, proto::GraphDef* def, const std::string& origin) {
  return NoThrow("parsing text GraphDef " + origin, [&] { return ParseText(text, def, origin); });
}

Status ReadGraphDefFile(const std::string& path, proto::GraphDef* def) {
  return NoThrow("reading graph file '" + path + "'", [&] { return ReadFile(path, def); });
}

Status ReadProtoFile(const std::string& path, const std::string& kind, google::protobuf::Message* message) {
  return NoThrow("reading " + kind + " file '" + path + "'", [&] { return ReadFile(path, message, kind); });
}

Status WriteGraphDefFile(const std::string& path, const proto::GraphDef& def) {
  std::string bytes;
  if (EndsWith(path, ".pbtxt") || EndsWith(path, ".txt")) {
    if (!google::protobuf::TextFormat::PrintToString(def, &bytes)) return errors::Internal("cannot print GraphDef");
  } else if (!def.SerializeToString(&bytes)) {
    return errors::Internal("cannot serialize GraphDef");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return errors::NotFound("cannot open '", path, "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return errors::DataLoss("failed writing '", path, "'");
  return Status::OK();
}

}  // namespace actorflow
