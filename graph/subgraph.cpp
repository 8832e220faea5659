#include "actorflow/graph/subgraph.hpp"

#include <map>

#include "actorflow/ops/attrs.hpp"

namespace actorflow {

namespace {

Status ResolveTensor(const Graph& g, const std::string& name, const char* what, Node** node, int* port) {
  std::string node_name;
  if (!ParseTensorName(name, &node_name, port) || *port == kControlSlot)
    return errors::InvalidArgument(what, " '", name, "' is not a tensor name of the form node or node:port");
  *node = g.FindNode(node_name);
  if (!*node) return errors::NotFound(what, " tensor '", name, "' not found in graph: no node named '", node_name, "'");
  if (*port >= (*node)->num_outputs())
    return errors::InvalidArgument(what, " tensor '", name, "': node '", node_name, "' (op '", (*node)->type_string(),
                                   "') has ", (*node)->num_outputs(), " outputs");
  return Status::OK();
}

// An _Arg or _Retval node carrying `dtype`, the index-th feed or fetch.
Status AddCallNode(Graph* g, const std::string& op, const std::string& prefix, const Node* src, int port,
                   DataType dtype, size_t index, Node** out) {
  proto::NodeDef def;
  def.set_name(g->NewName(prefix + src->name() + "_" + std::to_string(port)));
  def.set_op(op);
  (*def.mutable_attr())["T"] = AttrType(dtype);
  (*def.mutable_attr())["index"] = AttrInt(static_cast<int64_t>(index));
  return g->AddNode(def, out);
}

}  // namespace

void PruneForRoots(Graph* g, const std::vector<Node*>& roots) {
  std::vector<bool> needed(g->num_node_ids(), false);
  std::vector<Node*> stack(roots.begin(), roots.end());
  for (Node* n : roots) needed[n->id()] = true;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge* e : n->in_edges()) {
      if (!needed[e->src->id()]) {
        needed[e->src->id()] = true;
        stack.push_back(e->src);
      }
    }
  }
  // One batch: RemoveNode per node scans every edge of the graph, so pruning
  // 100,000 nodes one by one took quadratic time.
  std::vector<Node*> unneeded;
  for (Node* n : g->nodes())
    if (!needed[n->id()]) unneeded.push_back(n);
  g->RemoveNodes(unneeded);
}

Status RewriteGraphForExecution(Graph* g, const std::vector<std::string>& feeds,
                                const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                FeedFetchInfo* info) {
  std::map<std::pair<Node*, int>, Node*> fed;  // fed endpoint -> its _Arg
  std::vector<std::string> arg_names;
  for (size_t i = 0; i < feeds.size(); ++i) {
    Node* src;
    int port;
    AF_RETURN_IF_ERROR(ResolveTensor(*g, feeds[i], "Feed", &src, &port));
    if (fed.count({src, port})) return errors::InvalidArgument("tensor '", feeds[i], "' is fed more than once");
    const DataType dtype = BaseType(src->output_type(port));
    Node* arg;
    AF_RETURN_IF_ERROR(AddCallNode(g, "_Arg", "_arg_", src, port, dtype, i, &arg));
    PartialTensorShape shape;
    if (src->type_string() == "Placeholder" || src->type_string() == "PlaceholderWithDefault")
      GetNodeAttr(src->def(), "shape", &shape);
    // The shape a feed must have (a Placeholder's), for the passes that size
    // tensors (placement's costs, Recv scheduling); a fed tensor is checked against it.
    if (!shape.unknown_rank()) (*arg->mutable_def()->mutable_attr())["_shape"] = AttrShape(shape);
    std::vector<const Edge*> cut;
    for (const Edge* e : src->out_edges())
      if (e->src_output == port) cut.push_back(e);
    for (const Edge* e : cut) {
      Node* dst = e->dst;
      int in = e->dst_input;
      g->RemoveEdge(e);
      g->AddEdge(arg, 0, dst, in);
    }
    fed[{src, port}] = arg;
    arg_names.push_back(arg->name());
    info->feed_types.push_back(dtype);
    info->feed_shapes.push_back(shape);
  }
  std::vector<Node*> roots;
  for (size_t i = 0; i < fetches.size(); ++i) {
    Node* src;
    int port;
    AF_RETURN_IF_ERROR(ResolveTensor(*g, fetches[i], "Fetch", &src, &port));
    auto f = fed.find({src, port});
    if (f != fed.end()) {  // fetching a fed tensor returns the fed value
      src = f->second;
      port = 0;
    }
    const DataType dtype = BaseType(src->output_type(port));
    Node* ret;
    AF_RETURN_IF_ERROR(AddCallNode(g, "_Retval", "_retval_", src, port, dtype, i, &ret));
    g->AddEdge(src, port, ret, 0);
    roots.push_back(ret);
    info->fetch_types.push_back(dtype);
  }
  for (const auto& t : targets) {
    std::string name = t;
    if (!name.empty() && name[0] == '^') name = name.substr(1);
    Node* n = g->FindNode(name);
    if (!n) return errors::NotFound("Target node '", t, "' not found in graph");
    roots.push_back(n);
  }
  PruneForRoots(g, roots);
  // Number the surviving _Args densely: a step passes values only for them.
  int next = 0;
  for (const auto& name : arg_names) {
    Node* arg = g->FindNode(name);
    info->feed_arg_index.push_back(arg ? next : -1);
    if (arg) (*arg->mutable_def()->mutable_attr())["index"] = AttrInt(next++);
  }
  return Status::OK();
}

}  // namespace actorflow
