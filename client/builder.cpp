#include "actorflow/client/builder.hpp"

#include <limits>

#include <unordered_map>

#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {

Output Operation::output(int i) const { return Output(node_, i); }

Output Operation::input(int i) const {
  const Edge* e = node_ ? node_->input_edge(i) : nullptr;
  return e ? Output(e->src, e->src_output) : Output();
}

Input::Initializer::Initializer(std::initializer_list<Initializer> list) {
  if (list.size() == 0) {
    tensor = Tensor(DT_FLOAT, TensorShape{0});
    return;
  }
  const Initializer& first = *list.begin();
  TensorShape shape = first.tensor.shape();
  shape.InsertDim(0, static_cast<int64_t>(list.size()));
  const DataType dtype = first.tensor.dtype();
  for (const auto& e : list) {
    if (!e.status.ok()) {
      status = e.status;
      return;
    }
    if (e.tensor.dtype() != dtype || e.tensor.shape() != first.tensor.shape()) {
      status = errors::InvalidArgument("Initializer list elements differ in dtype or shape: ", e.tensor.DebugString(),
                                       " vs. ", first.tensor.DebugString());
      return;
    }
  }
  tensor = Tensor(dtype, shape);
  const int64_t per = first.tensor.NumElements();
  int64_t i = 0;
  for (const auto& e : list) {
    AF_SWITCH_ALL(dtype, (void)0, for (int64_t k = 0; k < per; ++k) tensor.data<T>()[i * per + k] = e.tensor.data<T>()[k]);
    ++i;
  }
}

struct Scope::Shared {
  Graph graph;
  Status status;
  std::unordered_map<std::string, int> name_counts;
  // By node id: ids are never reused, so the entries of a removed node are inert.
  std::unordered_map<int, std::vector<PartialTensorShape>> shapes;
  std::unordered_map<int, Tensor> const_values;
  std::map<std::string, std::vector<Output>> collections;
  std::vector<QueueRunnerDef> queue_runners;
  bool has_graph_seed = false;
  int64_t graph_seed = 0;

  /// Runs the shape function of `node` (inputs connected) on the shapes and
  /// constant values recorded for its inputs, and records its output shapes.
  /// Safe on imported graphs: an exception from a shape function is a Status,
  /// and only small Const values are kept (ConstValueForShapeFn).
  Status InferShapes(const Node* node, const OpRegistration& reg);
};

Status Scope::Shared::InferShapes(const Node* node, const OpRegistration& reg) {
  std::vector<PartialTensorShape> in_shapes(node->num_inputs());
  std::vector<const Tensor*> in_values(node->num_inputs(), nullptr);
  for (const Edge* e : node->in_edges()) {
    if (e->IsControlEdge()) continue;
    auto sh = shapes.find(e->src->id());
    if (sh != shapes.end()) in_shapes[e->dst_input] = sh->second[e->src_output];
    auto cv = const_values.find(e->src->id());
    if (cv != const_values.end()) in_values[e->dst_input] = &cv->second;
  }
  InferenceContext ctx(&node->def(), std::move(in_shapes), std::move(in_values), node->num_outputs());
  AF_RETURN_IF_ERROR(reg.shape_fn ? RunShapeFn(reg.shape_fn, &ctx) : shape_fns::Unknown(&ctx));
  shapes[node->id()] = ctx.outputs();
  if (node->type_string() == "Const") {
    // Only small values: an imported Const may declare any shape (a [1e9]
    // tensor with one value), and shape functions need only index tensors.
    Tensor value;
    if (ConstValueForShapeFn(node->def(), &value)) const_values[node->id()] = std::move(value);
  }
  return Status::OK();
}

Scope Scope::NewRootScope() {
  Scope s;
  s.shared_ = std::make_shared<Shared>();
  return s;
}

Scope Scope::WithOpName(const std::string& name) const {
  Scope s = *this;
  s.op_name_ = name;
  return s;
}

Scope Scope::NewSubScope(const std::string& name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (!name.empty()) s.prefix_ = prefix_.empty() ? name : prefix_ + "/" + name;
  return s;
}

Scope Scope::WithDevice(const std::string& device) const {
  Scope s = *this;
  s.device_ = device;
  return s;
}

Scope Scope::WithDeviceFunction(DeviceFunction fn) const {
  Scope s = *this;
  s.device_fn_ = fn ? std::make_shared<const DeviceFunction>(std::move(fn)) : nullptr;
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& deps) const {
  Scope s = *this;
  s.control_deps_.insert(s.control_deps_.end(), deps.begin(), deps.end());
  return s;
}

Scope Scope::GraphRoot() const {
  Scope s;
  s.shared_ = shared_;
  return s;
}

bool Scope::ok() const { return shared_->status.ok(); }
Status Scope::status() const { return shared_->status; }
void Scope::UpdateStatus(const Status& s) const { shared_->status.Update(s); }
Status Scope::TakeStatus() const {
  Status s = std::move(shared_->status);
  shared_->status = Status::OK();
  return s;
}
Graph* Scope::graph() const { return &shared_->graph; }

Status Scope::ToGraphDef(proto::GraphDef* out) const {
  AF_RETURN_IF_ERROR(shared_->status);
  shared_->graph.ToGraphDef(out);
  return Status::OK();
}

std::string Scope::GetUniqueNameForOp(const std::string& default_name) const {
  const std::string base = op_name_.empty() ? default_name : op_name_;
  const std::string full = prefix_.empty() ? base : prefix_ + "/" + base;
  int& count = shared_->name_counts[full];
  std::string name = count == 0 ? full : full + "_" + std::to_string(count);
  ++count;
  while (shared_->graph.FindNode(name)) name = full + "_" + std::to_string(count++);
  return name;
}

Status Scope::SetShape(const Output& o, const PartialTensorShape& shape) const {
  if (!o.valid()) return errors::InvalidArgument("SetShape: not a valid Output");
  const PartialTensorShape known = InferredShape(o);
  PartialTensorShape merged = shape;
  if (!known.unknown_rank()) {
    if (!shape.unknown_rank() && shape.dims() != known.dims())
      return errors::InvalidArgument("Shapes ", known.DebugString(), " and ", shape.DebugString(), " of '", o.name(),
                                     "' are not compatible");
    std::vector<int64_t> dims = known.dim_sizes();
    for (int i = 0; !shape.unknown_rank() && i < known.dims(); ++i) {
      const int64_t a = dims[i], b = shape.dim_size(i);
      if (a >= 0 && b >= 0 && a != b)
        return errors::InvalidArgument("Shapes ", known.DebugString(), " and ", shape.DebugString(), " of '",
                                       o.name(), "' are not compatible");
      if (a < 0) dims[i] = b;
    }
    merged = PartialTensorShape(dims);
  }
  auto& shapes = shared_->shapes[o.node()->id()];
  if (shapes.size() < static_cast<size_t>(o.node()->num_outputs())) shapes.resize(o.node()->num_outputs());
  shapes[o.index()] = merged;
  return Status::OK();
}

PartialTensorShape Scope::InferredShape(const Output& o) const {
  if (!o.valid()) return PartialTensorShape();
  auto it = shared_->shapes.find(o.node()->id());
  if (it == shared_->shapes.end() || o.index() < 0 || o.index() >= static_cast<int>(it->second.size()))
    return PartialTensorShape();
  return it->second[o.index()];
}

Output Scope::AsOutput(const Input& in) const {
  if (!in.is_const()) return in.output();
  const auto& init = in.initializer();
  if (!init.status.ok()) {
    UpdateStatus(init.status);
    return Output();
  }
  AttrMap attrs;
  attrs["value"] = AttrTensor(init.tensor);
  attrs["dtype"] = AttrType(init.tensor.dtype());
  Scope s = *this;
  s.op_name_.clear();
  Operation op = s.AddOp("Const", {}, attrs);
  return op.node() ? Output(op.node(), 0) : Output();
}

Operation Scope::AddOp(const std::string& op_type, const std::vector<OutputList>& args, const AttrMap& attrs) const {
  if (!ok()) return Operation();
  const OpRegistration* reg = OpRegistry::Global()->Find(op_type);
  if (!reg) {
    UpdateStatus(errors::NotFound("op type not registered '", op_type, "'"));
    return Operation();
  }
  const auto& op_def = reg->op_def;
  proto::NodeDef def;
  def.set_name(GetUniqueNameForOp(op_type));
  def.set_op(op_type);
  def.set_device(device_);
  for (const auto& [k, v] : attrs) (*def.mutable_attr())[k] = v;
  if (static_cast<int>(args.size()) != op_def.input_arg_size()) {
    UpdateStatus(errors::InvalidArgument("op '", op_type, "' takes ", op_def.input_arg_size(), " input args, got ",
                                         args.size(), " (node '", def.name(), "')"));
    return Operation();
  }
  // Infer type, list-type and number attrs from the inputs given.
  for (int a = 0; a < op_def.input_arg_size(); ++a) {
    const auto& arg = op_def.input_arg(a);
    for (const Output& o : args[a]) {
      if (!o.valid()) {
        UpdateStatus(errors::InvalidArgument("node '", def.name(), "': input '", arg.name(), "' is not a valid Output"));
        return Operation();
      }
    }
    auto& amap = *def.mutable_attr();
    if (!arg.number_attr().empty() && !amap.count(arg.number_attr()))
      amap[arg.number_attr()] = AttrInt(static_cast<int64_t>(args[a].size()));
    if (!arg.type_attr().empty() && !amap.count(arg.type_attr()) && !args[a].empty())
      amap[arg.type_attr()] = AttrType(args[a][0].type());
    if (!arg.type_list_attr().empty() && !amap.count(arg.type_list_attr())) {
      std::vector<DataType> types;
      for (const Output& o : args[a]) types.push_back(o.type());
      amap[arg.type_list_attr()] = AttrTypeList(types);
    }
  }
  if (device_fn_) def.set_device((*device_fn_)(def, op_def, args));
  Node* node;
  Status s = shared_->graph.AddNode(def, &node);
  if (!s.ok()) {
    UpdateStatus(s);
    return Operation();
  }
  int index = 0;
  for (const auto& list : args) {
    for (const Output& o : list) shared_->graph.AddEdge(o.node(), o.index(), node, index++);
  }
  for (const Operation& dep : control_deps_)
    if (dep.node()) shared_->graph.AddControlEdge(dep.node(), node);
  if (index != node->num_inputs()) {
    s = errors::InvalidArgument("node '", node->name(), "' (op '", op_type, "') got ", index, " inputs, expects ",
                                node->num_inputs());
  }
  for (int i = 0; s.ok() && i < node->num_inputs(); ++i) {
    const Edge* e = node->input_edge(i);
    DataType want = BaseType(node->input_type(i)), got = BaseType(e->src->output_type(e->src_output));
    if (want != got)
      s = errors::InvalidArgument("Input ", i, " of node '", node->name(), "' (op '", op_type, "') was passed ",
                                  DataTypeString(got), " from '", TensorInputName(e->src->name(), e->src_output),
                                  "' incompatible with expected ", DataTypeString(want));
  }
  if (s.ok()) s = shared_->InferShapes(node, *reg);
  if (!s.ok()) {
    shared_->graph.RemoveNode(node);
    UpdateStatus(s);
    return Operation();
  }
  return Operation(node);
}

void Scope::AddToCollection(const std::string& key, const Output& value) const {
  shared_->collections[key].push_back(value);
}

std::vector<Output> Scope::GetCollection(const std::string& key) const {
  auto it = shared_->collections.find(key);
  return it == shared_->collections.end() ? std::vector<Output>() : it->second;
}

void Scope::AddQueueRunner(const QueueRunnerDef& def) const { shared_->queue_runners.push_back(def); }
std::vector<QueueRunnerDef> Scope::GetQueueRunners() const { return shared_->queue_runners; }

void Scope::SetGraphSeed(int64_t seed) const {
  shared_->has_graph_seed = true;
  shared_->graph_seed = seed;
}

// TensorFlow's random_seed.get_seed: a graph seed alone gives each op a
// distinct, deterministic op seed (the number of nodes so far); an op seed
// alone pairs with a fixed default graph seed; neither means random.
void Scope::GetSeeds(int64_t op_seed, int64_t* seed, int64_t* seed2) const {
  constexpr int64_t kDefaultGraphSeed = 87654321;
  if (shared_->has_graph_seed) {
    *seed = shared_->graph_seed;
    *seed2 = op_seed >= 0 ? op_seed : shared_->graph.num_node_ids();
  } else if (op_seed >= 0) {
    *seed = kDefaultGraphSeed;
    *seed2 = op_seed;
  } else {
    *seed = 0;
    *seed2 = 0;
  }
  if (*seed == 0 && *seed2 == 0 && (shared_->has_graph_seed || op_seed >= 0)) *seed2 = std::numeric_limits<int32_t>::max();
}

Status Scope::ImportGraphDef(const proto::GraphDef& def) const {
  AF_RETURN_IF_ERROR(shared_->status);
  Graph& g = shared_->graph;
  if (g.num_nodes() != 0)
    return errors::FailedPrecondition("ImportGraphDef needs an empty graph, this scope's has ", g.num_nodes(),
                                      " nodes");
  Status s = actorflow::ImportGraphDef(def, &g);
  std::vector<Node*> order;
  if (s.ok()) s = TopologicalOrder(g, &order);
  for (size_t i = 0; s.ok() && i < order.size(); ++i)
    s = shared_->InferShapes(order[i], *OpRegistry::Global()->Find(order[i]->type_string()));
  if (!s.ok()) {  // leave the graph as it was: empty
    g.RemoveNodes(g.nodes());  // one batch: RemoveNode scans every edge
    g.set_versions(DefaultVersions());
    g.set_library(proto::FunctionDefLibrary());
  }
  return s;
}

}  // namespace actorflow
