#include "actorflow/ops/attrs.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_proto.hpp"

namespace actorflow {

namespace {

Status FindAttr(const proto::NodeDef& node, const std::string& name, const proto::AttrValue** v) {
  auto it = node.attr().find(name);
  if (it == node.attr().end())
    return errors::NotFound("node '", node.name(), "' (op '", node.op(), "') has no attr named '", name, "'");
  *v = &it->second;
  return Status::OK();
}

Status WrongKind(const proto::NodeDef& node, const std::string& name, const char* want) {
  return errors::InvalidArgument("attr '", name, "' of node '", node.name(), "' (op '", node.op(),
                                 "') is not of kind ", want);
}

#define AF_GET_SCALAR_ATTR(CTYPE, CASE, FIELD, KIND)                                        \
  Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, CTYPE* out) {     \
    const proto::AttrValue* v;                                                              \
    AF_RETURN_IF_ERROR(FindAttr(node, name, &v));                                           \
    if (v->value_case() != proto::AttrValue::CASE) return WrongKind(node, name, KIND);      \
    *out = static_cast<CTYPE>(v->FIELD());                                                  \
    return Status::OK();                                                                    \
  }
}  // namespace

AF_GET_SCALAR_ATTR(int64_t, kI, i, "int")
AF_GET_SCALAR_ATTR(float, kF, f, "float")
AF_GET_SCALAR_ATTR(bool, kB, b, "bool")
AF_GET_SCALAR_ATTR(std::string, kS, s, "string")
AF_GET_SCALAR_ATTR(DataType, kType, type, "type")
#undef AF_GET_SCALAR_ATTR

namespace {
// An int attr read as int32: a value outside int32's range is refused, never
// truncated (a count of 2^32 + 1 must not become 1).
Status CheckedInt32(const proto::NodeDef& node, const std::string& name, int64_t v, int32_t* out) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    return errors::InvalidArgument("attr '", name, "' of node '", node.name(), "' (op '", node.op(), "') is ", v,
                                   ", outside the range of int32");
  *out = static_cast<int32_t>(v);
  return Status::OK();
}
}  // namespace

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, int32_t* out) {
  int64_t v;
  AF_RETURN_IF_ERROR(GetNodeAttr(node, name, &v));
  return CheckedInt32(node, name, v, out);
}

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, PartialTensorShape* out) {
  const proto::AttrValue* v;
  AF_RETURN_IF_ERROR(FindAttr(node, name, &v));
  if (v->value_case() != proto::AttrValue::kShape) return WrongKind(node, name, "shape");
  *out = PartialShapeFromProto(v->shape());
  return Status::OK();
}

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, Tensor* out) {
  const proto::AttrValue* v;
  AF_RETURN_IF_ERROR(FindAttr(node, name, &v));
  if (v->value_case() != proto::AttrValue::kTensor) return WrongKind(node, name, "tensor");
  return TensorFromProto(v->tensor(), out).WithContext("attr '" + name + "' of node '" + node.name() + "'");
}

namespace {
Status GetList(const proto::NodeDef& node, const std::string& name, const proto::AttrValue::ListValue** out) {
  const proto::AttrValue* v;
  AF_RETURN_IF_ERROR(FindAttr(node, name, &v));
  if (v->value_case() != proto::AttrValue::kList) return WrongKind(node, name, "list");
  *out = &v->list();
  return Status::OK();
}
}  // namespace

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<int64_t>* out) {
  const proto::AttrValue::ListValue* l;
  AF_RETURN_IF_ERROR(GetList(node, name, &l));
  out->assign(l->i().begin(), l->i().end());
  return Status::OK();
}

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<int32_t>* out) {
  const proto::AttrValue::ListValue* l;
  AF_RETURN_IF_ERROR(GetList(node, name, &l));
  out->clear();
  out->reserve(static_cast<size_t>(l->i_size()));
  for (auto i : l->i()) {
    int32_t v;
    AF_RETURN_IF_ERROR(CheckedInt32(node, name, i, &v));
    out->push_back(v);
  }
  return Status::OK();
}

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<DataType>* out) {
  const proto::AttrValue::ListValue* l;
  AF_RETURN_IF_ERROR(GetList(node, name, &l));
  out->clear();
  for (auto t : l->type()) out->push_back(static_cast<DataType>(t));
  return Status::OK();
}

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<std::string>* out) {
  const proto::AttrValue::ListValue* l;
  AF_RETURN_IF_ERROR(GetList(node, name, &l));
  out->assign(l->s().begin(), l->s().end());
  return Status::OK();
}

Status GetNodeAttr(const proto::NodeDef& node, const std::string& name, std::vector<PartialTensorShape>* out) {
  const proto::AttrValue::ListValue* l;
  AF_RETURN_IF_ERROR(GetList(node, name, &l));
  out->clear();
  for (const auto& s : l->shape()) out->push_back(PartialShapeFromProto(s));
  return Status::OK();
}

bool HasNodeAttr(const proto::NodeDef& node, const std::string& name) { return node.attr().count(name) > 0; }

proto::AttrValue AttrInt(int64_t v) { proto::AttrValue a; a.set_i(v); return a; }
proto::AttrValue AttrFloat(float v) { proto::AttrValue a; a.set_f(v); return a; }
proto::AttrValue AttrBool(bool v) { proto::AttrValue a; a.set_b(v); return a; }
proto::AttrValue AttrString(const std::string& v) { proto::AttrValue a; a.set_s(v); return a; }
proto::AttrValue AttrType(DataType t) { proto::AttrValue a; a.set_type(static_cast<proto::DataType>(t)); return a; }
proto::AttrValue AttrShape(const PartialTensorShape& s) {
  proto::AttrValue a;
  ShapeToProto(s, a.mutable_shape());
  return a;
}
proto::AttrValue AttrTensor(const Tensor& t) {
  proto::AttrValue a;
  TensorToProto(t, a.mutable_tensor());
  return a;
}
proto::AttrValue AttrIntList(const std::vector<int64_t>& v) {
  proto::AttrValue a;
  auto* l = a.mutable_list();
  for (auto x : v) l->add_i(x);
  return a;
}
proto::AttrValue AttrTypeList(const std::vector<DataType>& v) {
  proto::AttrValue a;
  auto* l = a.mutable_list();
  for (auto x : v) l->add_type(static_cast<proto::DataType>(x));
  return a;
}
proto::AttrValue AttrShapeList(const std::vector<PartialTensorShape>& v) {
  proto::AttrValue a;
  auto* l = a.mutable_list();
  for (const auto& x : v) ShapeToProto(x, l->add_shape());
  return a;
}
proto::AttrValue AttrStringList(const std::vector<std::string>& v) {
  proto::AttrValue a;
  auto* l = a.mutable_list();
  for (const auto& x : v) l->add_s(x);
  return a;
}

namespace {
Status CountError(const proto::NodeDef& node, const std::string& attr, int64_t count) {
  if (count < 0)
    return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr '", attr, "' is ", count,
                                   ", a count must be >= 0");
  return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr '", attr, "' is ", count,
                                 ", more than the ", kMaxArgCount, " tensors an arg may stand for");
}

// The raw count an arg stands for (no bound applied), and the attr giving it
// ("" for a single tensor).
Status RawArgCount(const proto::NodeDef& node, const proto::OpDef::ArgDef& arg, int64_t* n, std::string* attr) {
  *n = 1;
  attr->clear();
  if (!arg.number_attr().empty()) {
    *attr = arg.number_attr();
    AF_RETURN_IF_ERROR(GetNodeAttr(node, arg.number_attr(), n));
  } else if (!arg.type_list_attr().empty()) {
    *attr = arg.type_list_attr();
    const proto::AttrValue::ListValue* l;
    AF_RETURN_IF_ERROR(GetList(node, arg.type_list_attr(), &l));
    *n = l->type_size();
  }
  return Status::OK();
}
}  // namespace

Status ArgCount(const proto::NodeDef& node, const proto::OpDef::ArgDef& arg, int* n) {
  int64_t count;
  std::string attr;
  AF_RETURN_IF_ERROR(RawArgCount(node, arg, &count, &attr));
  if (count < 0 || count > kMaxArgCount) return CountError(node, attr, count);
  *n = static_cast<int>(count);
  return Status::OK();
}

int NumDataInputs(const proto::NodeDef& node) {
  int n = 0;
  for (const auto& in : node.input())
    if (in.empty() || in[0] != '^') ++n;
  return n;
}

Status CheckDataInputCounts(const proto::NodeDef& node, const proto::OpDef& op, int64_t num_data_inputs) {
  // Saturating sums: each count may be anything up to INT64_MAX here.
  constexpr int64_t kCap = std::numeric_limits<int64_t>::max() / 4;
  int64_t expected = 0;
  std::string attrs;  // "'N' is 3, 'M' is 2" for the message
  std::set<std::string> named;
  for (const auto& arg : op.input_arg()) {
    int64_t count;
    std::string attr;
    // A missing or ill-kinded attr is ValidateNodeAttrs' to report.
    if (!RawArgCount(node, arg, &count, &attr).ok()) return Status::OK();
    if (count < 0) return CountError(node, attr, count);
    expected = std::min(kCap, expected + std::min(count, kCap));
    if (!attr.empty() && named.insert(attr).second)
      attrs += (attrs.empty() ? "'" : ", '") + attr + "' is " + std::to_string(count);
  }
  if (attrs.empty() || expected == num_data_inputs) return Status::OK();
  return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr ", attrs,
                                 expected >= kCap ? ", so it takes more than " : ", so it takes ",
                                 expected >= kCap ? kCap : expected, " data inputs, but it lists ", num_data_inputs);
}

namespace {
Status AddArgTypes(const proto::NodeDef& node, const google::protobuf::RepeatedPtrField<proto::OpDef::ArgDef>& args,
                   const char* what, DataTypeVector* out) {
  out->clear();
  // Count first, so nothing is sized by a count before all are checked.
  int64_t total = 0;
  std::string counts;  // "'N' is 3, 'M' is 2" for the message
  for (const auto& arg : args) {
    int n;
    AF_RETURN_IF_ERROR(ArgCount(node, arg, &n));
    total += n;  // at most args * kMaxArgCount: no overflow
    const std::string& attr = !arg.number_attr().empty() ? arg.number_attr() : arg.type_list_attr();
    if (!attr.empty()) counts += (counts.empty() ? "'" : ", '") + attr + "' is " + std::to_string(n);
  }
  if (total > kMaxArgCount)
    return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr ", counts, ", so it has ",
                                   total, " ", what, ", more than the ", kMaxArgCount, " a node may have");
  out->reserve(static_cast<size_t>(total));
  for (const auto& arg : args) {
    if (!arg.type_list_attr().empty()) {
      std::vector<DataType> types;
      AF_RETURN_IF_ERROR(GetNodeAttr(node, arg.type_list_attr(), &types));
      for (auto t : types) out->push_back(arg.is_ref() ? MakeRefType(t) : t);
    } else {
      DataType t = static_cast<DataType>(arg.type());
      if (!arg.type_attr().empty()) AF_RETURN_IF_ERROR(GetNodeAttr(node, arg.type_attr(), &t));
      int n;
      AF_RETURN_IF_ERROR(ArgCount(node, arg, &n));
      out->insert(out->end(), static_cast<size_t>(n), arg.is_ref() ? MakeRefType(t) : t);
    }
  }
  return Status::OK();
}
}  // namespace

Status InOutTypesForNode(const proto::NodeDef& node, const proto::OpDef& op, DataTypeVector* inputs,
                         DataTypeVector* outputs) {
  AF_RETURN_IF_ERROR(AddArgTypes(node, op.input_arg(), "inputs", inputs));
  return AddArgTypes(node, op.output_arg(), "outputs", outputs);
}

void AddDefaultsToNodeDef(const proto::OpDef& op, proto::NodeDef* node) {
  for (const auto& a : op.attr()) {
    if (a.has_default_value() && node->attr().count(a.name()) == 0) (*node->mutable_attr())[a.name()] = a.default_value();
  }
}

namespace {
bool KindMatches(const std::string& kind, const proto::AttrValue& v) {
  using V = proto::AttrValue;
  if (kind == "int") return v.value_case() == V::kI;
  if (kind == "float") return v.value_case() == V::kF;
  if (kind == "bool") return v.value_case() == V::kB;
  if (kind == "string") return v.value_case() == V::kS;
  if (kind == "type") return v.value_case() == V::kType;
  if (kind == "shape") return v.value_case() == V::kShape;
  if (kind == "tensor") return v.value_case() == V::kTensor;
  if (kind == "func") return v.value_case() == V::kFunc;
  if (kind.rfind("list(", 0) == 0) {
    if (v.value_case() != V::kList) return false;
    // An empty list carries no element kind; a non-empty one must hold only `kind`'s elements.
    const auto& l = v.list();
    const std::string e = kind.substr(5, kind.size() - 6);
    int others = l.s_size() + l.i_size() + l.f_size() + l.b_size() + l.type_size() + l.shape_size() +
                 l.tensor_size() + l.func_size();
    int mine = e == "string" ? l.s_size() : e == "int" ? l.i_size() : e == "float" ? l.f_size()
             : e == "bool" ? l.b_size() : e == "type" ? l.type_size() : e == "shape" ? l.shape_size()
             : e == "tensor" ? l.tensor_size() : l.func_size();
    return mine == others;
  }
  return false;
}
}  // namespace

namespace {
// The attrs of `op` that count an arg's tensors ("N" of "N * T", type lists).
std::set<std::string> CountAttrs(const proto::OpDef& op) {
  std::set<std::string> out;
  for (const auto* args : {&op.input_arg(), &op.output_arg()}) {
    for (const auto& arg : *args) {
      if (!arg.number_attr().empty()) out.insert(arg.number_attr());
      if (!arg.type_list_attr().empty()) out.insert(arg.type_list_attr());
    }
  }
  return out;
}

Status CheckShapeRank(const proto::NodeDef& node, const std::string& attr, const proto::TensorShapeProto& s) {
  if (s.dim_size() <= kMaxShapeRank) return Status::OK();
  return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr '", attr,
                                 "' is a shape of rank ", s.dim_size(), ", more than the maximum rank ",
                                 kMaxShapeRank);
}
}  // namespace

Status ValidateNodeAttrs(const proto::NodeDef& node, const proto::OpDef& op) {
  std::set<std::string> known;
  const std::set<std::string> counts = CountAttrs(op);
  for (const auto& a : op.attr()) {
    known.insert(a.name());
    auto it = node.attr().find(a.name());
    if (it == node.attr().end())
      return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "') is missing attr '", a.name(),
                                     "' of kind ", a.type());
    const auto& v = it->second;
    if (!KindMatches(a.type(), v))
      return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr '", a.name(),
                                     "' should be of kind ", a.type(), ", got ", AttrValueString(v));
    if (a.has_minimum()) {
      int64_t val = a.type() == "int" ? v.i() : v.list().i_size() + v.list().type_size() + v.list().s_size();
      if (val < a.minimum())
        return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): attr '", a.name(), "' is ",
                                       val, ", must be at least ", a.minimum());
    }
    if (counts.count(a.name())) {
      const int64_t n = a.type() == "int" ? v.i() : v.list().type_size();
      if (n < 0 || n > kMaxArgCount) return CountError(node, a.name(), n);
    }
    if (a.type() == "shape") AF_RETURN_IF_ERROR(CheckShapeRank(node, a.name(), v.shape()));
    if (a.type() == "list(shape)")
      for (const auto& sh : v.list().shape()) AF_RETURN_IF_ERROR(CheckShapeRank(node, a.name(), sh));
    if (a.has_allowed_values() && a.allowed_values().list().type_size() > 0) {
      std::vector<DataType> to_check;
      if (a.type() == "type") to_check.push_back(static_cast<DataType>(v.type()));
      for (auto t : v.list().type()) to_check.push_back(static_cast<DataType>(t));
      for (auto t : to_check) {
        bool ok = false;
        std::vector<DataType> allowed;
        for (auto at : a.allowed_values().list().type()) {
          allowed.push_back(static_cast<DataType>(at));
          ok |= static_cast<DataType>(at) == t;
        }
        if (!ok)
          return errors::InvalidArgument("node '", node.name(), "' (op '", node.op(), "'): value ",
                                         DataTypeString(t), " for attr '", a.name(), "' is not in the list of allowed values: ",
                                         DataTypeSliceString(allowed));
      }
    }
  }
  for (const auto& [name, v] : node.attr()) {
    if (!name.empty() && name[0] == '_') continue;
    if (!known.count(name))
      return errors::InvalidArgument("node '", node.name(), "' mentions attr '", name, "' not in op '", node.op(), "'");
  }
  return Status::OK();
}

std::string AttrValueString(const proto::AttrValue& v) {
  using V = proto::AttrValue;
  switch (v.value_case()) {
    case V::kI: return std::to_string(v.i());
    case V::kF: return std::to_string(v.f());
    case V::kB: return v.b() ? "true" : "false";
    case V::kS: return "\"" + v.s() + "\"";
    case V::kType: return DataTypeString(static_cast<DataType>(v.type()));
    case V::kShape: return PartialShapeFromProto(v.shape()).DebugString();
    case V::kTensor: return "<tensor>";
    case V::kFunc: return "func " + v.func().name();
    case V::kPlaceholder: return "$" + v.placeholder();
    case V::kList: {
      std::string s = "[";
      const auto& l = v.list();
      auto add = [&](const std::string& x) { s += (s.size() > 1 ? ", " : "") + x; };
      for (auto x : l.i()) add(std::to_string(x));
      for (auto x : l.f()) add(std::to_string(x));
      for (auto x : l.b()) add(x ? "true" : "false");
      for (const auto& x : l.s()) add("\"" + x + "\"");
      for (auto x : l.type()) add(DataTypeString(static_cast<DataType>(x)));
      for (const auto& x : l.shape()) add(PartialShapeFromProto(x).DebugString());
      return s + "]";
    }
    default: return "<unset>";
  }
}

std::string SummarizeAttrs(const proto::NodeDef& node) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : node.attr()) sorted[k] = AttrValueString(v);
  std::string s;
  for (const auto& [k, v] : sorted) {
    if (k == "value") continue;  // Const tensors are too long for a message
    s += (s.empty() ? "" : ", ") + k + "=" + v;
  }
  return "{" + s + "}";
}

}  // namespace actorflow
