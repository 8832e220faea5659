#include "actorflow/graph/function_inlining.hpp"

#include <map>
#include <set>
#include <unordered_map>

#include "actorflow/ops/attrs.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {
namespace {

bool IsCallOp(const std::string& op) { return op == "PartitionedCall" || op == "StatefulPartitionedCall"; }
bool IsIfOp(const std::string& op) { return op == "If" || op == "StatelessIf"; }
bool IsWhileOp(const std::string& op) { return op == "While" || op == "StatelessWhile"; }

class Inliner {
 public:
  explicit Inliner(proto::GraphDef* def) : def_(def) {
    for (const auto& f : def->library().function()) functions_[f.signature().name()] = &f;
  }

  bool IsCall(const proto::NodeDef& n) const {
    return IsCallOp(n.op()) || IsIfOp(n.op()) || IsWhileOp(n.op()) || functions_.count(n.op()) != 0;
  }

  Status Run() {
    for (int depth = 0;; ++depth) {
      bool any = false;
      for (const auto& n : def_->node()) any = any || IsCall(n);
      if (!any) return Status::OK();
      if (depth >= kMaxInlineDepth)
        return errors::Unimplemented("function calls nested deeper than ", kMaxInlineDepth,
                                     " levels (a recursive function?)");
      proto::GraphDef out;
      for (const auto& n : def_->node()) {
        if (!IsCall(n)) {
          *out.add_node() = n;
          continue;
        }
        Status s = IsIfOp(n.op()) ? LowerIf(n, &out) : IsWhileOp(n.op()) ? LowerWhile(n, &out) : InlineCall(n, &out);
        if (!s.ok()) return s.WithContext("inlining node '" + n.name() + "' (op '" + n.op() + "')");
        // A function calling another twice, nested, doubles the graph at each level.
        if (out.node_size() > kMaxInlinedNodes)
          return errors::InvalidArgument("inlining node '", n.name(), "' (op '", n.op(), "') makes the graph more than ",
                                         kMaxInlinedNodes, " nodes");
      }
      def_->mutable_node()->Swap(out.mutable_node());
    }
  }

 private:
  Status FindFunction(const std::string& name, const proto::FunctionDef** f) const {
    auto it = functions_.find(name);
    if (it == functions_.end()) return errors::NotFound("function '", name, "' is not in the graph's library");
    *f = it->second;
    return Status::OK();
  }

  // How many tensors output arg `arg` of node `n` (of op def `op`) holds.
  static Status ArgLength(const proto::NodeDef& n, const proto::OpDef::ArgDef& arg, int64_t* len) {
    *len = 1;
    if (!arg.number_attr().empty()) {
      auto it = n.attr().find(arg.number_attr());
      if (it == n.attr().end()) return errors::InvalidArgument("node '", n.name(), "' lacks attr ", arg.number_attr());
      *len = it->second.i();
    } else if (!arg.type_list_attr().empty()) {
      auto it = n.attr().find(arg.type_list_attr());
      if (it == n.attr().end())
        return errors::InvalidArgument("node '", n.name(), "' lacks attr ", arg.type_list_attr());
      *len = it->second.list().type_size();
    }
    return Status::OK();
  }

  // The flat output index of "out_arg:i" of body node `n`.
  Status OutputIndex(const proto::NodeDef& n, const std::string& out_arg, int64_t i, int64_t* index) const {
    const proto::OpDef* op = nullptr;
    auto f = functions_.find(n.op());
    if (f != functions_.end()) {
      op = &f->second->signature();
    } else {
      const OpRegistration* reg = OpRegistry::Global()->Find(n.op());
      if (reg == nullptr) return errors::NotFound("op '", n.op(), "' of body node '", n.name(), "' is not registered");
      op = &reg->op_def;
    }
    int64_t base = 0;
    for (const auto& arg : op->output_arg()) {
      int64_t len = 1;
      if (f == functions_.end()) AF_RETURN_IF_ERROR(ArgLength(n, arg, &len));
      if (arg.name() == out_arg) {
        if (i < 0 || i >= len)
          return errors::InvalidArgument("output '", out_arg, ":", i, "' of body node '", n.name(), "' out of range");
        *index = base + i;
        return Status::OK();
      }
      base += len;
    }
    return errors::InvalidArgument("body node '", n.name(), "' (op '", n.op(), "') has no output '", out_arg, "'");
  }

  // Appends the body of `f` to `out`, its nodes named prefix + name, its
  // arguments bound to `args` (graph-form tensor names), every node behind
  // `control` (a node name, or ""). `results` gets the graph-form names of
  // its results in signature order; `effects` the nodes whose running is the
  // call's side effect.
  Status InlineBody(const proto::FunctionDef& f, const std::string& prefix, const std::vector<std::string>& args,
                    const std::string& control, proto::GraphDef* out, std::vector<std::string>* results,
                    std::vector<std::string>* effects) const {
    const auto& sig = f.signature();
    if (static_cast<int>(args.size()) != sig.input_arg_size())
      return errors::InvalidArgument("function '", sig.name(), "' takes ", sig.input_arg_size(), " arguments, the call gives ",
                                     args.size());
    std::unordered_map<std::string, std::string> arg_of;
    for (int i = 0; i < sig.input_arg_size(); ++i) {
      const auto& a = sig.input_arg(i);
      if (!a.number_attr().empty() || !a.type_list_attr().empty())
        return errors::Unimplemented("function '", sig.name(), "' has the list argument '", a.name(), "'");
      arg_of[a.name()] = args[i];
    }
    std::unordered_map<std::string, const proto::NodeDef*> body;
    for (const auto& n : f.node_def()) body[n.name()] = &n;
    // A tensor in the function's form, in the graph's.
    auto rewrite = [&](const std::string& in, std::string* graph_form) -> Status {
      if (!in.empty() && in[0] == '^') {
        if (!body.count(in.substr(1))) return errors::InvalidArgument("control input '", in, "' names no body node");
        *graph_form = "^" + prefix + in.substr(1);
        return Status::OK();
      }
      const size_t c1 = in.find(':');
      const std::string head = in.substr(0, c1);
      if (c1 == std::string::npos || in.find(':', c1 + 1) == std::string::npos) {
        auto a = arg_of.find(head);
        if (a != arg_of.end() && (c1 == std::string::npos || in.substr(c1 + 1) == "0")) {
          *graph_form = a->second;
          return Status::OK();
        }
      }
      auto b = body.find(head);
      const size_t c2 = c1 == std::string::npos ? std::string::npos : in.find(':', c1 + 1);
      if (b == body.end() || c2 == std::string::npos)
        return errors::InvalidArgument("input '", in, "' names neither an argument nor a node output of function '",
                                       sig.name(), "'");
      int64_t i = 0;
      try {
        i = std::stoll(in.substr(c2 + 1));
      } catch (const std::exception&) {
        return errors::InvalidArgument("malformed input '", in, "' in function '", sig.name(), "'");
      }
      int64_t index = 0;
      AF_RETURN_IF_ERROR(OutputIndex(*b->second, in.substr(c1 + 1, c2 - c1 - 1), i, &index));
      *graph_form = prefix + head + ":" + std::to_string(index);
      return Status::OK();
    };
    for (const auto& n : f.node_def()) {
      proto::NodeDef* m = out->add_node();
      *m = n;
      m->set_name(prefix + n.name());
      m->clear_input();
      std::vector<std::string> controls;
      for (const auto& in : n.input()) {
        std::string g;
        AF_RETURN_IF_ERROR(rewrite(in, &g));
        if (g[0] == '^') controls.push_back(g);
        else m->add_input(g);
      }
      if (!control.empty()) controls.push_back("^" + control);
      for (auto& c : controls) m->add_input(c);
      for (const auto& [name, value] : n.attr())
        if (value.value_case() == proto::AttrValue::kPlaceholder)
          return errors::Unimplemented("function '", sig.name(), "' leaves attr '", name, "' of node '", n.name(),
                                       "' to its caller ($", value.placeholder(), ")");
      const OpRegistration* reg = OpRegistry::Global()->Find(n.op());
      if ((reg != nullptr && reg->op_def.is_stateful()) || functions_.count(n.op()) || IsCallOp(n.op()))
        effects->push_back(m->name());
    }
    for (const auto& [name, node] : f.control_ret()) {
      if (!body.count(node)) return errors::InvalidArgument("control_ret '", name, "' names no body node");
      effects->push_back(prefix + node);
    }
    for (const auto& a : sig.output_arg()) {
      auto r = f.ret().find(a.name());
      if (r == f.ret().end()) return errors::InvalidArgument("function '", sig.name(), "' returns no '", a.name(), "'");
      std::string g;
      AF_RETURN_IF_ERROR(rewrite(r->second, &g));
      results->push_back(g);
    }
    return Status::OK();
  }

  static void SplitInputs(const proto::NodeDef& n, std::vector<std::string>* data, std::vector<std::string>* control) {
    for (const auto& in : n.input()) (!in.empty() && in[0] == '^' ? control : data)->push_back(in);
  }

  // The node standing for the call: IdentityN of `results` (NoOp without),
  // behind `effects`, with the output types the signature declares.
  static Status AddResultNode(const proto::NodeDef& call, const proto::OpDef& sig,
                              const std::vector<std::string>& results, const std::vector<std::string>& effects,
                              proto::GraphDef* out) {
    proto::NodeDef* r = out->add_node();
    r->set_name(call.name());
    r->set_device(call.device());
    r->set_op(results.empty() ? "NoOp" : "IdentityN");
    for (const auto& t : results) r->add_input(t);
    std::set<std::string> seen;
    for (const auto& e : effects)
      if (seen.insert(e).second) r->add_input("^" + e);
    if (results.empty()) return Status::OK();
    proto::AttrValue types;
    auto tout = call.attr().find("Tout");
    for (int i = 0; i < sig.output_arg_size(); ++i) {
      const auto& a = sig.output_arg(i);
      if (a.type() != proto::DT_INVALID) {
        types.mutable_list()->add_type(a.type());
      } else if (tout != call.attr().end() && i < tout->second.list().type_size()) {
        types.mutable_list()->add_type(tout->second.list().type(i));
      } else {
        return errors::Unimplemented("the type of result '", a.name(), "' of function '", sig.name(),
                                     "' is left to its caller");
      }
    }
    (*r->mutable_attr())["T"] = types;
    return Status::OK();
  }

  // A NoOp behind the call's control inputs, which every body node waits for; "" when it has none.
  static std::string InputControl(const proto::NodeDef& call, const std::vector<std::string>& control,
                                  proto::GraphDef* out) {
    if (control.empty()) return "";
    proto::NodeDef* c = out->add_node();
    c->set_name(call.name() + "/_input_control");
    c->set_op("NoOp");
    c->set_device(call.device());
    for (const auto& in : control) c->add_input(in);
    return c->name();
  }

  Status InlineCall(const proto::NodeDef& call, proto::GraphDef* out) const {
    std::string fname = call.op();
    if (IsCallOp(call.op())) {
      auto f = call.attr().find("f");
      if (f == call.attr().end() || !f->second.has_func())
        return errors::InvalidArgument("it has no function attr 'f'");
      fname = f->second.func().name();
    }
    const proto::FunctionDef* f = nullptr;
    AF_RETURN_IF_ERROR(FindFunction(fname, &f));
    std::vector<std::string> data, control;
    SplitInputs(call, &data, &control);
    const std::string gate = InputControl(call, control, out);
    std::vector<std::string> results, effects;
    AF_RETURN_IF_ERROR(InlineBody(*f, call.name() + "/", data, gate, out, &results, &effects));
    return AddResultNode(call, f->signature(), results, effects, out);
  }

  static proto::NodeDef* AddNode(proto::GraphDef* out, const std::string& name, const std::string& op,
                                 const std::string& device, std::vector<std::string> inputs) {
    proto::NodeDef* n = out->add_node();
    n->set_name(name);
    n->set_op(op);
    n->set_device(device);
    for (auto& in : inputs) n->add_input(in);
    return n;
  }

  Status LowerIf(const proto::NodeDef& node, proto::GraphDef* out) const {
    auto attr = [&](const char* name) -> const proto::AttrValue* {
      auto it = node.attr().find(name);
      return it == node.attr().end() ? nullptr : &it->second;
    };
    const proto::AttrValue* tcond = attr("Tcond");
    if (tcond != nullptr && tcond->type() != proto::DT_BOOL)
      return errors::Unimplemented("If on a ", DataTypeString(static_cast<DataType>(tcond->type())),
                                   " condition (only bool is lowered)");
    const proto::AttrValue* then_attr = attr("then_branch");
    const proto::AttrValue* else_attr = attr("else_branch");
    const proto::AttrValue* tin = attr("Tin");
    if (!then_attr || !else_attr || !then_attr->has_func() || !else_attr->has_func())
      return errors::InvalidArgument("it lacks then_branch or else_branch");
    const proto::FunctionDef *then_f = nullptr, *else_f = nullptr;
    AF_RETURN_IF_ERROR(FindFunction(then_attr->func().name(), &then_f));
    AF_RETURN_IF_ERROR(FindFunction(else_attr->func().name(), &else_f));
    std::vector<std::string> data, control;
    SplitInputs(node, &data, &control);
    if (data.empty()) return errors::InvalidArgument("it has no condition input");
    const std::string& p = node.name();
    const std::string& dev = node.device();
    const std::string cond = data[0];
    std::vector<std::string> cond_inputs = {cond, cond};
    for (const auto& c : control) cond_inputs.push_back(c);
    proto::NodeDef* sw = AddNode(out, p + "/switch_pred", "Switch", dev, cond_inputs);
    (*sw->mutable_attr())["T"].set_type(proto::DT_BOOL);
    proto::NodeDef* pt = AddNode(out, p + "/pivot_t", "Identity", dev, {p + "/switch_pred:1"});
    (*pt->mutable_attr())["T"].set_type(proto::DT_BOOL);
    proto::NodeDef* pf = AddNode(out, p + "/pivot_f", "Identity", dev, {p + "/switch_pred:0"});
    (*pf->mutable_attr())["T"].set_type(proto::DT_BOOL);
    std::vector<std::string> then_args, else_args;
    for (size_t i = 1; i < data.size(); ++i) {
      const std::string name = p + "/input_" + std::to_string(i - 1);
      proto::NodeDef* s = AddNode(out, name, "Switch", dev, {data[i], cond});
      if (tin == nullptr || static_cast<int>(i - 1) >= tin->list().type_size())
        return errors::InvalidArgument("its Tin does not give the type of input ", i);
      (*s->mutable_attr())["T"].set_type(tin->list().type(static_cast<int>(i - 1)));
      then_args.push_back(name + ":1");
      else_args.push_back(name + ":0");
    }
    std::vector<std::string> then_results, else_results, then_effects, else_effects;
    AF_RETURN_IF_ERROR(InlineBody(*then_f, p + "/then/", then_args, p + "/pivot_t", out, &then_results, &then_effects));
    AF_RETURN_IF_ERROR(InlineBody(*else_f, p + "/else/", else_args, p + "/pivot_f", out, &else_results, &else_effects));
    if (then_results.size() != else_results.size())
      return errors::InvalidArgument("its branches return ", then_results.size(), " and ", else_results.size(),
                                     " results");
    std::vector<std::string> merged;
    for (size_t j = 0; j < then_results.size(); ++j) {
      const std::string name = p + "/output_" + std::to_string(j);
      proto::NodeDef* m = AddNode(out, name, "Merge", dev, {then_results[j], else_results[j]});
      (*m->mutable_attr())["N"].set_i(2);
      const auto& a = then_f->signature().output_arg(static_cast<int>(j));
      const proto::AttrValue* tout = attr("Tout");
      proto::DataType t = a.type();
      if (t == proto::DT_INVALID && tout && static_cast<int>(j) < tout->list().type_size())
        t = tout->list().type(static_cast<int>(j));
      (*m->mutable_attr())["T"].set_type(t);
      merged.push_back(name + ":0");
    }
    // The side effects of whichever branch is taken: a ControlTrigger runs
    // whether its inputs are live or dead, so the result waits for them.
    std::vector<std::string> effects;
    if (!then_effects.empty() || !else_effects.empty()) {
      proto::NodeDef* trig = AddNode(out, p + "/effects", "ControlTrigger", dev, {});
      std::set<std::string> seen;
      for (const auto* list : {&then_effects, &else_effects})
        for (const auto& e : *list)
          if (seen.insert(e).second) trig->add_input("^" + e);
      effects.push_back(trig->name());
    }
    proto::OpDef sig = then_f->signature();
    for (int j = 0; j < sig.output_arg_size(); ++j)
      if (sig.output_arg(j).type() == proto::DT_INVALID) {
        const proto::AttrValue* tout = attr("Tout");
        if (tout && j < tout->list().type_size()) sig.mutable_output_arg(j)->set_type(tout->list().type(j));
      }
    return AddResultNode(node, sig, merged, effects, out);
  }

  // While and StatelessWhile, lowered as TensorFlow lowers them: each loop
  // variable Enters the frame "<node>", Merges with its NextIteration, the
  // cond function (inlined on the Merges) gives LoopCond, each variable
  // Switches on it: to an Exit (the results) or, through an Identity, into
  // the body function, whose results go to NextIteration. The body's side
  // effects gate every NextIteration, so each iteration's run before the next.
  Status LowerWhile(const proto::NodeDef& node, proto::GraphDef* out) const {
    auto attr = [&](const char* name) -> const proto::AttrValue* {
      auto it = node.attr().find(name);
      return it == node.attr().end() ? nullptr : &it->second;
    };
    const proto::AttrValue* cond_attr = attr("cond");
    const proto::AttrValue* body_attr = attr("body");
    const proto::AttrValue* types = attr("T");
    if (!cond_attr || !body_attr || !cond_attr->has_func() || !body_attr->has_func() || !types)
      return errors::InvalidArgument("it lacks cond, body or T");
    const proto::FunctionDef *cond_f = nullptr, *body_f = nullptr;
    AF_RETURN_IF_ERROR(FindFunction(cond_attr->func().name(), &cond_f));
    AF_RETURN_IF_ERROR(FindFunction(body_attr->func().name(), &body_f));
    std::vector<std::string> data, control;
    SplitInputs(node, &data, &control);
    const int n = static_cast<int>(data.size());
    if (n == 0) return errors::Unimplemented("a While with no loop variables");
    if (types->list().type_size() != n)
      return errors::InvalidArgument("T lists ", types->list().type_size(), " types for ", n, " loop variables");
    int64_t parallel = 10;
    if (const proto::AttrValue* p = attr("parallel_iterations")) parallel = p->i();
    const std::string& p = node.name();
    const std::string& dev = node.device();
    const std::string gate = InputControl(node, control, out);
    std::vector<std::string> merges, bodies, exits;
    for (int i = 0; i < n; ++i) {
      const proto::DataType t = types->list().type(i);
      const std::string idx = std::to_string(i);
      std::vector<std::string> enter_in = {data[i]};
      if (!gate.empty()) enter_in.push_back("^" + gate);
      proto::NodeDef* enter = AddNode(out, p + "/enter_" + idx, "Enter", dev, enter_in);
      (*enter->mutable_attr())["T"].set_type(t);
      (*enter->mutable_attr())["frame_name"].set_s(p);
      (*enter->mutable_attr())["is_constant"].set_b(false);
      (*enter->mutable_attr())["parallel_iterations"].set_i(parallel);
      proto::NodeDef* merge = AddNode(out, p + "/merge_" + idx, "Merge", dev, {enter->name(), p + "/next_" + idx});
      (*merge->mutable_attr())["T"].set_type(t);
      (*merge->mutable_attr())["N"].set_i(2);
      merges.push_back(merge->name() + ":0");
    }
    // The cond function, in the frame: its nodes wait for the first Merge.
    std::vector<std::string> cond_results, cond_effects;
    AF_RETURN_IF_ERROR(InlineBody(*cond_f, p + "/cond/", merges, p + "/merge_0", out, &cond_results, &cond_effects));
    if (cond_results.size() != 1) return errors::InvalidArgument("its cond returns ", cond_results.size(), " values");
    AddNode(out, p + "/loop_cond", "LoopCond", dev, {cond_results[0]});
    for (int i = 0; i < n; ++i) {
      const proto::DataType t = types->list().type(i);
      const std::string idx = std::to_string(i);
      proto::NodeDef* sw = AddNode(out, p + "/switch_" + idx, "Switch", dev, {merges[i], p + "/loop_cond"});
      (*sw->mutable_attr())["T"].set_type(t);
      proto::NodeDef* ex = AddNode(out, p + "/exit_" + idx, "Exit", dev, {sw->name() + ":0"});
      (*ex->mutable_attr())["T"].set_type(t);
      proto::NodeDef* id = AddNode(out, p + "/body_input_" + idx, "Identity", dev, {sw->name() + ":1"});
      (*id->mutable_attr())["T"].set_type(t);
      bodies.push_back(id->name());
      exits.push_back(ex->name());
    }
    std::vector<std::string> body_results, body_effects;
    AF_RETURN_IF_ERROR(InlineBody(*body_f, p + "/body/", bodies, bodies[0], out, &body_results, &body_effects));
    if (static_cast<int>(body_results.size()) != n)
      return errors::InvalidArgument("its body returns ", body_results.size(), " values for ", n, " loop variables");
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> next_in = {body_results[i]};
      std::set<std::string> seen;
      for (const auto& e : body_effects)
        if (seen.insert(e).second) next_in.push_back("^" + e);
      proto::NodeDef* next = AddNode(out, p + "/next_" + std::to_string(i), "NextIteration", dev, next_in);
      (*next->mutable_attr())["T"].set_type(types->list().type(i));
    }
    proto::OpDef sig;
    sig.set_name(body_f->signature().name());
    for (int i = 0; i < n; ++i) sig.add_output_arg()->set_type(types->list().type(i));
    std::vector<std::string> results;
    for (const auto& e : exits) results.push_back(e + ":0");
    return AddResultNode(node, sig, results, {}, out);
  }

  proto::GraphDef* def_;
  std::unordered_map<std::string, const proto::FunctionDef*> functions_;
};

}  // namespace

bool HasFunctionCalls(const proto::GraphDef& def) {
  std::set<std::string> functions;
  for (const auto& f : def.library().function()) functions.insert(f.signature().name());
  for (const auto& n : def.node())
    if (IsCallOp(n.op()) || IsIfOp(n.op()) || IsWhileOp(n.op()) || functions.count(n.op())) return true;
  return false;
}

Status InlineFunctionCalls(proto::GraphDef* def) { return Inliner(def).Run(); }

}  // namespace actorflow
