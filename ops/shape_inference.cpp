#include "actorflow/ops/shape_inference.hpp"

#include <limits>
#include <new>
#include <set>
#include <stdexcept>

namespace actorflow {

bool BroadcastShapes(const PartialTensorShape& a, const PartialTensorShape& b, PartialTensorShape* out) {
  if (a.unknown_rank() || b.unknown_rank()) {
    *out = PartialTensorShape();
    return true;
  }
  const int rank = std::max(a.dims(), b.dims());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.dims() - rank + i, ib = b.dims() - rank + i;
    int64_t da = ia >= 0 ? a.dim_size(ia) : 1, db = ib >= 0 ? b.dim_size(ib) : 1;
    if (da == 1) dims[i] = db;
    else if (db == 1) dims[i] = da;
    else if (da < 0) dims[i] = db;
    else if (db < 0) dims[i] = da;
    else if (da == db) dims[i] = da;
    else return false;
  }
  *out = PartialTensorShape(dims);
  return true;
}

bool MergeShapes(const PartialTensorShape& a, const PartialTensorShape& b, PartialTensorShape* out) {
  if (a.unknown_rank()) {
    *out = b;
    return true;
  }
  if (b.unknown_rank()) {
    *out = a;
    return true;
  }
  if (a.dims() != b.dims()) return false;
  std::vector<int64_t> d(a.dims());
  for (int i = 0; i < a.dims(); ++i) {
    const int64_t da = a.dim_size(i), db = b.dim_size(i);
    if (da < 0) d[i] = db;
    else if (db < 0 || da == db) d[i] = da;
    else return false;
  }
  *out = PartialTensorShape(d);
  return true;
}

std::vector<int64_t> TensorToInt64s(const Tensor& t) {
  std::vector<int64_t> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i)
    v[i] = t.dtype() == DT_INT64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
  return v;
}

Status RankFromDim(const InferenceContext* c, int64_t dim, const char* what, int* rank) {
  if (dim < 0) {
    *rank = -1;
    return Status::OK();
  }
  if (dim > kMaxShapeRank)
    return c->Error(what, " of ", dim, " entries describes a shape of rank ", dim, ", more than the maximum rank ",
                    kMaxShapeRank);
  *rank = static_cast<int>(dim);
  return Status::OK();
}

PartialTensorShape UnknownShapeOfRank(int rank) {
  return rank < 0 ? PartialTensorShape() : PartialTensorShape(std::vector<int64_t>(rank, -1));
}

bool AddDims(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0 || a > std::numeric_limits<int64_t>::max() - b) return false;
  *out = a + b;
  return true;
}

bool MulDims(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0 || (b != 0 && a > std::numeric_limits<int64_t>::max() / b)) return false;
  *out = a * b;
  return true;
}

bool ConstValueForShapeFn(const proto::NodeDef& const_node, Tensor* out) {
  auto it = const_node.attr().find("value");
  if (it == const_node.attr().end() || it->second.value_case() != proto::AttrValue::kTensor) return false;
  const auto& shape = it->second.tensor().tensor_shape();
  if (shape.unknown_rank() || shape.dim_size() > kMaxShapeRank) return false;
  int64_t n = 1;
  for (const auto& d : shape.dim())
    if (!MulDims(n, d.size(), &n) || n > kMaxShapeFnConstElements) return false;
  return GetNodeAttr(const_node, "value", out).ok();
}

Status RunShapeFn(const std::function<Status(InferenceContext*)>& fn, InferenceContext* c) {
  try {
    return fn(c);
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("node '", c->node().name(), "' (op '", c->node().op(),
                                     "'): out of memory in its shape function");
  } catch (const std::exception& e) {
    return c->Error("its shape function failed: ", e.what());
  } catch (...) {
    return c->Error("its shape function failed with an unknown exception");
  }
}

namespace shape_fns {

Status Unknown(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape());
  return Status::OK();
}

Status Scalar(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape::Scalar());
  return Status::OK();
}

Status Unchanged(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return Status::OK();
}

Status ShapeAttr(InferenceContext* c) {
  PartialTensorShape shape;
  AF_RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  c->set_output(0, shape);
  return Status::OK();
}

Status Broadcasting(InferenceContext* c) {
  PartialTensorShape out;
  if (!BroadcastShapes(c->input(0), c->input(1), &out))
    return c->Error("Incompatible shapes: ", c->input(0).DebugString(), " vs. ", c->input(1).DebugString());
  c->set_output(0, out);
  return Status::OK();
}

Status Reduction(InferenceContext* c) {
  bool keep_dims = false;
  AF_RETURN_IF_ERROR(c->GetAttr("keep_dims", &keep_dims));
  const auto& in = c->input(0);
  const Tensor* axes = c->input_tensor(1);
  if (in.unknown_rank() || axes == nullptr) {
    c->set_output(0, keep_dims && !in.unknown_rank() ? PartialTensorShape(std::vector<int64_t>(in.dims(), -1))
                                                     : PartialTensorShape());
    return Status::OK();
  }
  std::set<int> reduced;
  for (auto a : TensorToInt64s(*axes)) {
    if (a < -in.dims() || a >= in.dims())
      return c->Error("Invalid reduction dimension ", a, " for input with ", in.dims(), " dimensions");
    reduced.insert(static_cast<int>(a < 0 ? a + in.dims() : a));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.dims(); ++i) {
    if (reduced.count(i)) {
      if (keep_dims) dims.push_back(1);
    } else {
      dims.push_back(in.dim_size(i));
    }
  }
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

Status MatMul(InferenceContext* c) {
  bool ta = false, tb = false;
  AF_RETURN_IF_ERROR(c->GetAttr("transpose_a", &ta));
  AF_RETURN_IF_ERROR(c->GetAttr("transpose_b", &tb));
  const auto& a = c->input(0);
  const auto& b = c->input(1);
  if (!a.unknown_rank() && a.dims() != 2) return c->Error("Shape must be rank 2 but is rank ", a.dims(), " for input a");
  if (!b.unknown_rank() && b.dims() != 2) return c->Error("Shape must be rank 2 but is rank ", b.dims(), " for input b");
  int64_t m = a.unknown_rank() ? -1 : a.dim_size(ta ? 1 : 0);
  int64_t ka = a.unknown_rank() ? -1 : a.dim_size(ta ? 0 : 1);
  int64_t kb = b.unknown_rank() ? -1 : b.dim_size(tb ? 1 : 0);
  int64_t n = b.unknown_rank() ? -1 : b.dim_size(tb ? 0 : 1);
  if (ka >= 0 && kb >= 0 && ka != kb)
    return c->Error("Dimensions must be equal, but are ", ka, " and ", kb, " for MatMul with input shapes ",
                    a.DebugString(), ", ", b.DebugString());
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{m, n}));
  return Status::OK();
}

Status Vector(InferenceContext* c) {
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1}));
  return Status::OK();
}

}  // namespace shape_fns
}  // namespace actorflow
