#include "graph/graph_def_io.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>

namespace actorflow {

Status ImportGraphDef(const proto::GraphDef& def, Graph* g) {
  std::vector<std::pair<Node*, const proto::NodeDef*>> added;
  added.reserve(def.node_size());
  for (const auto& nd : def.node()) {
    Node* n;
    AF_RETURN_IF_ERROR(g->AddNode(nd, &n));
    added.emplace_back(n, &nd);
  }
  for (auto& [n, nd] : added) {
    int data_index = 0;
    bool seen_control = false;
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
        g->AddControlEdge(src, n);
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
  g->set_versions(def.versions());
  g->set_library(def.library());
  return ValidateGraph(*g);
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
}  // namespace

Status ParseGraphDefText(const std::string& text, proto::GraphDef* def, const std::string& origin) {
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errs;
  parser.RecordErrorsTo(&errs);
  parser.AllowUnknownField(true);
  parser.AllowUnknownExtension(true);
  if (!parser.ParseFromString(text, def))
    return errors::InvalidArgument("cannot parse text GraphDef ", origin, ": ", errs.first);
  return Status::OK();
}

Status ReadGraphDefFile(const std::string& path, proto::GraphDef* def) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errors::NotFound("cannot open graph file '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  const bool text_ext = EndsWith(path, ".pbtxt") || EndsWith(path, ".txt") || EndsWith(path, ".prototxt");
  const bool binary_ext = EndsWith(path, ".pb");
  if (text_ext) return ParseGraphDefText(bytes, def, "'" + path + "'");
  if (binary_ext) {
    if (!def->ParseFromString(bytes)) return errors::InvalidArgument("cannot parse binary GraphDef '", path, "'");
    return Status::OK();
  }
  // Unknown extension: binary if it parses as such and is not plain text.
  bool printable = !bytes.empty();
  for (unsigned char c : bytes)
    if (c < 0x09 || (c > 0x0d && c < 0x20)) { printable = false; break; }
  if (printable) return ParseGraphDefText(bytes, def, "'" + path + "'");
  if (!def->ParseFromString(bytes)) return errors::InvalidArgument("cannot parse GraphDef '", path, "' as binary or text");
  return Status::OK();
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
