#include "graph/graph_def_io.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

namespace actorflow {

namespace {

// ImportGraphDef proper; `*current` is the node being worked on, for the
// message when an exception ends the import.
Status ImportNodes(const proto::GraphDef& def, Graph* g, const proto::NodeDef** current) {
  std::vector<std::pair<Node*, const proto::NodeDef*>> added;
  added.reserve(def.node_size());
  int64_t outputs = 0;
  for (const auto& nd : def.node()) {
    *current = &nd;
    if (!nd.name().empty() && !IsValidNodeName(nd.name()))
      return errors::InvalidArgument("node '", nd.name(), "' (op '", nd.op(),
                                     "'): the name has characters TensorFlow does not allow in a node name");
    Node* n;
    AF_RETURN_IF_ERROR(g->AddNode(nd, &n, NumDataInputs(nd)));
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
class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty()) first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string first;
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

Status ParseText(const std::string& text, proto::GraphDef* def, const std::string& origin) {
  AF_RETURN_IF_ERROR(CheckTextNesting(text, origin));
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errs;
  parser.RecordErrorsTo(&errs);
  parser.AllowUnknownField(true);
  parser.AllowUnknownExtension(true);
  if (!parser.ParseFromString(text, def))
    return errors::InvalidArgument("cannot parse text GraphDef ", origin, ": ", errs.first);
  return Status::OK();
}

Status ReadFile(const std::string& path, proto::GraphDef* def) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errors::NotFound("cannot open graph file '", path, "'");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size > kMaxGraphDefBytes)
    return errors::InvalidArgument("graph file '", path, "' has ", static_cast<int64_t>(size),
                                   " bytes, more than the ", kMaxGraphDefBytes, " a GraphDef may have");
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
      return errors::InvalidArgument("graph file '", path, "' has more than the ", kMaxGraphDefBytes,
                                     " bytes a GraphDef may have");
  }
  const bool text_ext = EndsWith(path, ".pbtxt") || EndsWith(path, ".txt") || EndsWith(path, ".prototxt");
  const bool binary_ext = EndsWith(path, ".pb");
  if (text_ext) return ParseText(bytes, def, "'" + path + "'");
  if (binary_ext) {
    if (!def->ParseFromString(bytes)) return errors::InvalidArgument("cannot parse binary GraphDef '", path, "'");
    return Status::OK();
  }
  // Unknown extension: binary if it parses as such and is not plain text.
  bool printable = !bytes.empty();
  for (unsigned char c : bytes)
    if (c < 0x09 || (c > 0x0d && c < 0x20)) { printable = false; break; }
  if (printable) return ParseText(bytes, def, "'" + path + "'");
  if (!def->ParseFromString(bytes)) return errors::InvalidArgument("cannot parse GraphDef '", path, "' as binary or text");
  return Status::OK();
}

}  // namespace

Status ParseGraphDefText(const std::string& text, proto::GraphDef* def, const std::string& origin) {
  return NoThrow("parsing text GraphDef " + origin, [&] { return ParseText(text, def, origin); });
}

Status ReadGraphDefFile(const std::string& path, proto::GraphDef* def) {
  return NoThrow("reading graph file '" + path + "'", [&] { return ReadFile(path, def); });
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
