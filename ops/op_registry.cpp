#include "actorflow/ops/op_registry.hpp"

#include <google/protobuf/text_format.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// "name: rest" -> name, rest.
Status SplitNameColon(const std::string& spec, std::string* name, std::string* rest) {
  auto colon = spec.find(':');
  if (colon == std::string::npos) return errors::InvalidArgument("spec '", spec, "' lacks ':'");
  *name = Trim(spec.substr(0, colon));
  *rest = Trim(spec.substr(colon + 1));
  if (name->empty()) return errors::InvalidArgument("spec '", spec, "' has no name");
  return Status::OK();
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      if (!Trim(cur).empty()) out.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!Trim(cur).empty()) out.push_back(Trim(cur));
  return out;
}

Status ParseArg(const std::string& spec, const std::map<std::string, std::string>& attr_kinds,
                proto::OpDef::ArgDef* arg) {
  std::string name, type;
  AF_RETURN_IF_ERROR(SplitNameColon(spec, &name, &type));
  arg->set_name(name);
  if (type.rfind("Ref(", 0) == 0 && type.back() == ')') {
    arg->set_is_ref(true);
    type = Trim(type.substr(4, type.size() - 5));
  }
  auto star = type.find('*');
  if (star != std::string::npos) {
    arg->set_number_attr(Trim(type.substr(0, star)));
    type = Trim(type.substr(star + 1));
  }
  DataType dt;
  if (DataTypeFromString(type, &dt)) {
    arg->set_type(static_cast<proto::DataType>(dt));
    return Status::OK();
  }
  auto it = attr_kinds.find(type);
  if (it == attr_kinds.end()) return errors::InvalidArgument("arg '", spec, "' names unknown type or attr '", type, "'");
  if (it->second == "type") arg->set_type_attr(type);
  else if (it->second == "list(type)") arg->set_type_list_attr(type);
  else return errors::InvalidArgument("arg '", spec, "' names attr '", type, "' of kind ", it->second);
  return Status::OK();
}

Status ParseScalarDefault(const std::string& kind, const std::string& text, proto::AttrValue* v) {
  if (kind == "int") {
    char* end = nullptr;
    long long x = std::strtoll(text.c_str(), &end, 10);
    if (*end) return errors::InvalidArgument("bad int default '", text, "'");
    v->set_i(x);
  } else if (kind == "float") {
    char* end = nullptr;
    double x = std::strtod(text.c_str(), &end);
    if (*end) return errors::InvalidArgument("bad float default '", text, "'");
    v->set_f(static_cast<float>(x));
  } else if (kind == "bool") {
    if (text != "true" && text != "false") return errors::InvalidArgument("bad bool default '", text, "'");
    v->set_b(text == "true");
  } else if (kind == "string") {
    if (text.size() < 2 || (text.front() != '\'' && text.front() != '"'))
      return errors::InvalidArgument("bad string default '", text, "'");
    v->set_s(text.substr(1, text.size() - 2));
  } else if (kind == "type") {
    DataType dt;
    if (!DataTypeFromString(text, &dt)) return errors::InvalidArgument("bad type default '", text, "'");
    v->set_type(static_cast<proto::DataType>(dt));
  } else if (kind == "shape") {
    if (!google::protobuf::TextFormat::ParseFromString(text.substr(1, text.size() - 2), v->mutable_shape()))
      return errors::InvalidArgument("bad shape default '", text, "'");
  } else {
    return errors::InvalidArgument("no default syntax for attr kind ", kind);
  }
  return Status::OK();
}

Status ParseAttr(const std::string& spec, proto::OpDef::AttrDef* attr) {
  std::string name, rest;
  AF_RETURN_IF_ERROR(SplitNameColon(spec, &name, &rest));
  attr->set_name(name);
  // The default follows the first '=' that is not part of ">=".
  std::string kind = rest, deflt;
  size_t eq = rest.find('=');
  while (eq != std::string::npos && eq > 0 && rest[eq - 1] == '>') eq = rest.find('=', eq + 1);
  if (eq != std::string::npos) {
    kind = Trim(rest.substr(0, eq));
    deflt = Trim(rest.substr(eq + 1));
  }
  auto ge = kind.find(">=");
  if (ge != std::string::npos) {
    attr->set_has_minimum(true);
    attr->set_minimum(std::atoll(kind.substr(ge + 2).c_str()));
    kind = Trim(kind.substr(0, ge));
  }
  if (!kind.empty() && kind.front() == '{') {
    for (const auto& t : SplitList(kind.substr(1, kind.size() - 2))) {
      DataType dt;
      if (!DataTypeFromString(t, &dt)) return errors::InvalidArgument("attr '", spec, "': unknown type ", t);
      attr->mutable_allowed_values()->mutable_list()->add_type(static_cast<proto::DataType>(dt));
    }
    kind = "type";
  } else if (kind.rfind("list(", 0) == 0 && kind.find('{') != std::string::npos) {
    auto inner = kind.substr(kind.find('{') + 1);
    inner = inner.substr(0, inner.find('}'));
    for (const auto& t : SplitList(inner)) {
      DataType dt;
      if (!DataTypeFromString(t, &dt)) return errors::InvalidArgument("attr '", spec, "': unknown type ", t);
      attr->mutable_allowed_values()->mutable_list()->add_type(static_cast<proto::DataType>(dt));
    }
    kind = "list(type)";
  }
  static const char* kKinds[] = {"type", "int", "float", "bool", "string", "shape", "tensor", "func",
                                 "list(type)", "list(int)", "list(float)", "list(bool)", "list(string)",
                                 "list(shape)", "list(tensor)"};
  bool known = false;
  for (auto* k : kKinds) known |= kind == k;
  if (!known) return errors::InvalidArgument("attr '", spec, "' has unknown kind '", kind, "'");
  attr->set_type(kind);
  if (!deflt.empty()) {
    auto* v = attr->mutable_default_value();
    if (kind.rfind("list(", 0) == 0) {
      std::string elem = kind.substr(5, kind.size() - 6);
      auto* list = v->mutable_list();
      if (deflt.front() != '[' || deflt.back() != ']') return errors::InvalidArgument("bad list default ", deflt);
      for (const auto& item : SplitList(deflt.substr(1, deflt.size() - 2))) {
        proto::AttrValue one;
        AF_RETURN_IF_ERROR(ParseScalarDefault(elem, item, &one));
        if (elem == "int") list->add_i(one.i());
        else if (elem == "float") list->add_f(one.f());
        else if (elem == "bool") list->add_b(one.b());
        else if (elem == "string") list->add_s(one.s());
        else if (elem == "type") list->add_type(one.type());
      }
    } else {
      AF_RETURN_IF_ERROR(ParseScalarDefault(kind, deflt, v));
    }
  }
  return Status::OK();
}

}  // namespace

OpDefBuilder::OpDefBuilder(std::string name) { reg_.op_def.set_name(std::move(name)); }
OpDefBuilder& OpDefBuilder::Input(const std::string& spec) { inputs_.push_back(spec); return *this; }
OpDefBuilder& OpDefBuilder::Output(const std::string& spec) { outputs_.push_back(spec); return *this; }
OpDefBuilder& OpDefBuilder::Attr(const std::string& spec) { attrs_.push_back(spec); return *this; }
OpDefBuilder& OpDefBuilder::SetIsStateful() { reg_.op_def.set_is_stateful(true); return *this; }
OpDefBuilder& OpDefBuilder::SetIsCommutative() { reg_.op_def.set_is_commutative(true); return *this; }
OpDefBuilder& OpDefBuilder::SetAllowsUninitializedInput() {
  reg_.op_def.set_allows_uninitialized_input(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) { reg_.shape_fn = std::move(fn); return *this; }
OpDefBuilder& OpDefBuilder::Doc(const std::string& summary) { reg_.op_def.set_summary(summary); return *this; }

Status OpDefBuilder::Finalize(OpRegistration* out) const {
  *out = reg_;
  auto& op = out->op_def;
  std::map<std::string, std::string> kinds;
  for (const auto& spec : attrs_) {
    auto* a = op.add_attr();
    AF_RETURN_IF_ERROR(ParseAttr(spec, a).WithContext("op " + op.name()));
    kinds[a->name()] = a->type();
  }
  for (const auto& spec : inputs_)
    AF_RETURN_IF_ERROR(ParseArg(spec, kinds, op.add_input_arg()).WithContext("op " + op.name()));
  for (const auto& spec : outputs_)
    AF_RETURN_IF_ERROR(ParseArg(spec, kinds, op.add_output_arg()).WithContext("op " + op.name()));
  return Status::OK();
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* r = new OpRegistry();
  return r;
}

void OpRegistry::Register(const OpDefBuilder& b) {
  auto reg = std::make_unique<OpRegistration>();
  Status s = b.Finalize(reg.get());
  if (!s.ok()) {
    std::fprintf(stderr, "actorflow: bad op registration: %s\n", s.ToString().c_str());
    std::abort();
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = reg->op_def.name();
  if (!ops_.emplace(name, std::move(reg)).second) {
    std::fprintf(stderr, "actorflow: op %s registered twice\n", name.c_str());
    std::abort();
  }
}

const OpRegistration* OpRegistry::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

Status OpRegistry::LookUp(const std::string& name, const OpRegistration** out) const {
  *out = Find(name);
  if (!*out) return errors::NotFound("Op type not registered '", name, "'");
  return Status::OK();
}

std::vector<std::string> OpRegistry::ListOpNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, reg] : ops_) out.push_back(name);
  return out;
}

void OpRegistry::MarkNotDifferentiable(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  not_differentiable_.insert(name);
}

bool OpRegistry::IsNotDifferentiable(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return not_differentiable_.count(name) > 0;
}

std::vector<std::string> OpRegistry::ListNotDifferentiable() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<std::string>(not_differentiable_.begin(), not_differentiable_.end());
}

}  // namespace actorflow
