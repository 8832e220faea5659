#include "actorflow/ops/op_kernel.hpp"

#include <algorithm>

#include "actorflow/core/allocator.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

OpKernel::OpKernel(OpKernelConstruction* c)
    : name_(c->def().name()), type_string_(c->def().op()), input_types_(c->input_types()),
      output_types_(c->output_types()) {}

namespace {
constexpr size_t kInlineMaxInputBytes = 128 * 1024;  // a pool hop costs more than work below this
}  // namespace

size_t TensorPayloadBytes(const Tensor& t) {
  if (t.dtype() != DT_STRING) return t.TotalBytes();
  size_t bytes = 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) bytes += t.data<std::string>()[i].size() + sizeof(std::string);
  return bytes;
}

bool OpKernel::ShouldOffload(const Tensor* inputs, int num_inputs) const {
  if (!expensive_) return false;
  size_t bytes = 0;
  for (int i = 0; i < num_inputs && bytes <= kInlineMaxInputBytes; ++i) bytes += TensorPayloadBytes(inputs[i]);
  return bytes > kInlineMaxInputBytes;
}

void AsyncOpKernel::Compute(OpKernelContext* ctx) {
  ctx->SetStatus(errors::Internal("asynchronous kernel ", name(), " called synchronously"));
}

void AsyncOpKernel::ComputeInline(OpKernelContext* ctx) {
  ctx->SetStatus(errors::Internal("asynchronous kernel ", name(), " has no inline path"));
}

Status OpKernelContext::allocate_output(int i, const TensorShape& shape, Tensor** out) {
  if (i < 0 || i >= p_->num_outputs)
    return errors::Internal("kernel ", p_->op_kernel->name(), " allocates output ", i, " of ", p_->num_outputs);
  const DataType dtype = BaseType(p_->op_kernel->output_type(i));
  AF_RETURN_IF_ERROR(Tensor::Create(AllocatorFor(dtype), dtype, shape, &p_->outputs[i])
                         .WithContext("output " + std::to_string(i)));
  *out = &p_->outputs[i];
  return Status::OK();
}

Status OpKernelContext::forward_input_or_allocate_output(std::initializer_list<int> candidates, int i,
                                                         const TensorShape& shape, Tensor** out) {
  const DataType dtype = BaseType(p_->op_kernel->output_type(i));
  for (int c : candidates) {
    Tensor& in = p_->inputs[c];
    if (in.dtype() == dtype && dtype != DT_STRING && in.NumElements() == shape.num_elements() &&
        in.RefCountIsOne() && in.buffer()->allocator() == p_->device->allocator()) {
      p_->outputs[i].CopyFrom(in, shape);
      *out = &p_->outputs[i];
      return Status::OK();
    }
  }
  return allocate_output(i, shape, out);
}

Status OpKernelContext::allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out) {
  return Tensor::Create(AllocatorFor(dtype), dtype, shape, out);
}

Allocator* OpKernelContext::AllocatorFor(DataType dtype) const {
  Allocator* a = p_->device->allocator();
  // A device whose memory the host cannot read (a GPU) keeps only float32
  // there; other dtypes (shapes, indices, labels) live in host memory, where
  // the kernels that compute them and those that read them run.
  return dtype == DT_FLOAT || a->HostAccessible() ? a : nullptr;
}

std::vector<int64_t> OpKernelContext::iteration_path() const {
  std::vector<int64_t> path;
  if (p_->frame_id == 0) return path;  // the root frame: in no loop
  if (p_->parent_iterations) path = *p_->parent_iterations;
  path.push_back(p_->iteration);
  return path;
}

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* r = new KernelRegistry();
  return r;
}

void KernelRegistry::Register(const KernelDef& def, KernelFactory factory) {
  kernels_.emplace(def.op, Entry{def, std::move(factory)});
}

namespace {
bool Matches(const KernelDef& k, const proto::NodeDef& node) {
  for (const auto& [attr, allowed] : k.type_constraints) {
    auto it = node.attr().find(attr);
    if (it == node.attr().end()) return false;
    std::vector<DataType> types;
    if (it->second.value_case() == proto::AttrValue::kType) {
      types.push_back(static_cast<DataType>(it->second.type()));
    } else if (it->second.value_case() == proto::AttrValue::kList) {
      for (auto t : it->second.list().type()) types.push_back(static_cast<DataType>(t));
    } else {
      return false;
    }
    for (auto t : types)
      if (std::find(allowed.begin(), allowed.end(), t) == allowed.end()) return false;
  }
  return true;
}

std::string DescribeKernel(const KernelDef& k) {
  std::string s = "device='" + k.device_type + "'";
  for (const auto& [attr, allowed] : k.type_constraints) s += "; " + attr + " in [" + DataTypeSliceString(allowed) + "]";
  return s;
}
}  // namespace

void KernelRegistry::RegisterHostKernel(const std::string& op, const std::string& device_type, HostKernel rule) {
  host_kernels_[{op, device_type}] = rule;
}

namespace {
// Whether every dtype the node's type attrs name is an integer or bool: the
// shape and index arithmetic a GPU leaves in host memory.
bool OnlyIntegralTypes(const proto::NodeDef& node) {
  auto integral = [](int t) {
    switch (static_cast<DataType>(t)) {
      case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64:
      case DT_UINT8: case DT_UINT16: case DT_BOOL: return true;
      default: return false;
    }
  };
  for (const auto& [name, value] : node.attr()) {
    if (value.value_case() == proto::AttrValue::kType && !integral(value.type())) return false;
    if (value.value_case() == proto::AttrValue::kList)
      for (auto t : value.list().type())
        if (!integral(t)) return false;
  }
  return true;
}
}  // namespace

Status KernelRegistry::Find(const proto::NodeDef& node, const std::string& device_type, const KernelDef** def,
                            KernelFactory* factory) const {
  auto range = kernels_.equal_range(node.op());
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second.def.device_type == device_type && Matches(it->second.def, node)) {
      *def = &it->second.def;
      *factory = it->second.factory;
      return Status::OK();
    }
  }
  auto host = host_kernels_.find({node.op(), device_type});
  if (host != host_kernels_.end() && device_type != DEVICE_CPU &&
      (host->second == HostKernel::kShapeOnly || OnlyIntegralTypes(node))) {
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second.def.device_type == DEVICE_CPU && Matches(it->second.def, node)) {
        *def = &it->second.def;
        *factory = it->second.factory;
        return Status::OK();
      }
    }
  }
  std::string registered;
  for (auto it = range.first; it != range.second; ++it) registered += "\n  " + DescribeKernel(it->second.def);
  return errors::NotFound("No kernel registered for node '", node.name(), "' (op '", node.op(), "') on device ",
                          device_type, " with attrs ", SummarizeAttrs(node), ". Registered kernels:",
                          registered.empty() ? std::string(" <none>") : registered);
}

std::vector<std::pair<std::string, KernelRegistry::HostKernel>> KernelRegistry::HostKernelsForOp(
    const std::string& op) const {
  std::vector<std::pair<std::string, HostKernel>> out;
  for (auto it = host_kernels_.lower_bound({op, std::string()}); it != host_kernels_.end() && it->first.first == op; ++it)
    out.emplace_back(it->first.second, it->second);
  return out;
}

std::vector<KernelDef> KernelRegistry::KernelsForOp(const std::string& op) const {
  std::vector<KernelDef> out;
  auto range = kernels_.equal_range(op);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second.def);
  return out;
}

bool HasKernel(const proto::NodeDef& node, const std::string& device_type) {
  const KernelDef* def;
  KernelFactory f;
  return KernelRegistry::Global()->Find(node, device_type, &def, &f).ok();
}

Status CreateOpKernel(Device* device, const proto::NodeDef& node, std::unique_ptr<OpKernel>* out) {
  const OpRegistration* reg;
  AF_RETURN_IF_ERROR(OpRegistry::Global()->LookUp(node.op(), &reg));
  const KernelDef* kdef;
  KernelFactory factory;
  AF_RETURN_IF_ERROR(KernelRegistry::Global()->Find(node, device->device_type(), &kdef, &factory));
  DataTypeVector in, outs;
  AF_RETURN_IF_ERROR(InOutTypesForNode(node, reg->op_def, &in, &outs));
  OpKernelConstruction c(device, &node, &reg->op_def, in, outs);
  std::unique_ptr<OpKernel> k(factory(&c));
  if (!c.status().ok())
    return Status(c.status().code(), "node '" + node.name() + "' (op '" + node.op() + "'): " + c.status().message());
  *out = std::move(k);
  return Status::OK();
}

}  // namespace actorflow
