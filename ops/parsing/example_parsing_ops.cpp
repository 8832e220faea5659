// ParseExample, ParseExampleV2 and ParseSingleExample: serialized
// tf.train.Example records (core/proto/example.proto) into tensors, with
// TensorFlow's definitions and rules (example_parsing_ops.cc):
//  - a dense feature gives [batch] + dense_shape values; a missing one takes
//    its default (an error naming the key when the default is empty); a
//    dense_shape whose first dimension is unknown (-1) is a variable-length
//    feature, padded with its default to the longest in the batch;
//  - a sparse feature gives indices [N, 2] (example, position), values [N]
//    and dense_shape [batch, longest];
//  - a ragged one (V2) gives values and row_splits [batch + 1].
// A feature of another kind than declared, a dense feature of the wrong
// length, or bytes that are not an Example is InvalidArgument naming the
// example (by `names` when given, else its index) and the key.
#include <algorithm>
#include <string>
#include <vector>

#include "actorflow/core/proto/example.pb.h"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("ParseExample")
    .Input("serialized: string")
    .Input("names: string")
    .Input("sparse_keys: Nsparse * string")
    .Input("dense_keys: Ndense * string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: Nsparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: Nsparse * int64")
    .Output("dense_values: Tdense")
    .Attr("Nsparse: int >= 0")
    .Attr("Ndense: int >= 0")
    .Attr("sparse_types: list({float, int64, string}) >= 0")
    .Attr("Tdense: list({float, int64, string}) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Parses a vector of serialized Examples into sparse and dense tensors.");

AF_REGISTER_OP("ParseExampleV2")
    .Input("serialized: string")
    .Input("names: string")
    .Input("sparse_keys: string")
    .Input("dense_keys: string")
    .Input("ragged_keys: string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: num_sparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: num_sparse * int64")
    .Output("dense_values: Tdense")
    .Output("ragged_values: ragged_value_types")
    .Output("ragged_row_splits: ragged_split_types")
    .Attr("Tdense: list({float, int64, string}) >= 0")
    .Attr("num_sparse: int >= 0")
    .Attr("sparse_types: list({float, int64, string}) >= 0")
    .Attr("ragged_value_types: list({float, int64, string}) >= 0")
    .Attr("ragged_split_types: list({int32, int64}) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Parses serialized Examples into sparse, dense and ragged tensors; the keys are inputs.");

AF_REGISTER_OP("ParseSingleExample")
    .Input("serialized: string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: num_sparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: num_sparse * int64")
    .Output("dense_values: Tdense")
    .Attr("num_sparse: int >= 0")
    .Attr("sparse_keys: list(string) >= 0")
    .Attr("dense_keys: list(string) >= 0")
    .Attr("sparse_types: list({float, int64, string}) >= 0")
    .Attr("Tdense: list({float, int64, string}) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Parses one serialized Example (a scalar) into sparse and dense tensors without the batch dimension.");

AF_REGISTER_NO_GRADIENT("ParseExample");
AF_REGISTER_NO_GRADIENT("ParseExampleV2");
AF_REGISTER_NO_GRADIENT("ParseSingleExample");

// The values of one feature, whatever its kind.
struct Values {
  DataType dtype = DT_INVALID;
  const proto::Feature* feature = nullptr;
  int64_t size() const {
    if (!feature) return 0;
    switch (dtype) {
      case DT_FLOAT: return feature->float_list().value_size();
      case DT_INT64: return feature->int64_list().value_size();
      default: return feature->bytes_list().value_size();
    }
  }
  // Copies element i to out[o] of a tensor of dtype.
  void CopyTo(int64_t i, Tensor* out, int64_t o) const {
    switch (dtype) {
      case DT_FLOAT: out->data<float>()[o] = feature->float_list().value(static_cast<int>(i)); break;
      case DT_INT64: out->data<int64_t>()[o] = feature->int64_list().value(static_cast<int>(i)); break;
      default: out->data<std::string>()[o] = feature->bytes_list().value(static_cast<int>(i)); break;
    }
  }
};

DataType KindType(const proto::Feature& f) {
  switch (f.kind_case()) {
    case proto::Feature::kFloatList: return DT_FLOAT;
    case proto::Feature::kInt64List: return DT_INT64;
    case proto::Feature::kBytesList: return DT_STRING;
    default: return DT_INVALID;  // no kind: an empty feature, any type
  }
}

// Copies element i of `src` (a tensor of dtype) to out[o].
void CopyElement(const Tensor& src, int64_t i, Tensor* out, int64_t o) {
  switch (src.dtype()) {
    case DT_FLOAT: out->data<float>()[o] = src.data<float>()[i]; break;
    case DT_INT64: out->data<int64_t>()[o] = src.data<int64_t>()[i]; break;
    default: out->data<std::string>()[o] = src.data<std::string>()[i]; break;
  }
}

// What a kernel parses: the keys, their types and dense shapes and defaults.
struct Config {
  std::vector<std::string> sparse_keys, dense_keys, ragged_keys;
  std::vector<DataType> sparse_types, dense_types, ragged_types, ragged_split_types;
  std::vector<PartialTensorShape> dense_shapes;
  std::vector<Tensor> dense_defaults;
};

class ExampleParser {
 public:
  ExampleParser(const Config& c, const std::vector<proto::Example>& examples, const std::vector<std::string>& names)
      : c_(c), examples_(examples), names_(names) {}

  // The feature `key` of example b as `dtype`: found false when missing.
  Status Find(int64_t b, const std::string& key, DataType dtype, Values* v) const {
    const auto& features = examples_[b].features().feature();
    auto it = features.find(key);
    v->dtype = dtype;
    v->feature = nullptr;
    if (it == features.end()) return Status::OK();
    const DataType actual = KindType(it->second);
    if (actual != DT_INVALID && actual != dtype)
      return errors::InvalidArgument(Where(b, key), "Data types don't match. Expected type: ", DataTypeString(dtype),
                                     ", Actual type: ", DataTypeString(actual));
    if (actual != DT_INVALID) v->feature = &it->second;
    return Status::OK();
  }

  std::string Where(int64_t b, const std::string& key) const {
    const std::string name = b < static_cast<int64_t>(names_.size()) && !names_[b].empty() ? names_[b] : "<unknown>";
    return "Name: " + name + ", Key: " + key + ", Index: " + std::to_string(b) + ".  ";
  }

  Status Dense(OpKernelContext* ctx, int i, int out_index, bool batched) const {
    const int64_t batch = static_cast<int64_t>(examples_.size());
    const PartialTensorShape& shape = c_.dense_shapes[i];
    const Tensor& def = c_.dense_defaults[i];
    const DataType dtype = c_.dense_types[i];
    if (def.NumElements() > 0 && def.dtype() != dtype)
      return errors::InvalidArgument("dense_defaults[", i, "] is ", DataTypeString(def.dtype()), ", Tdense says ",
                                     DataTypeString(dtype));
    const bool variable = shape.dims() > 0 && shape.dim_size(0) < 0;
    int64_t row = 1;  // elements per step of the first dimension (variable) or per example
    for (int d = variable ? 1 : 0; d < shape.dims(); ++d) {
      if (shape.dim_size(d) < 0)
        return errors::InvalidArgument("dense_shapes[", i, "] ", shape.DebugString(),
                                       ": only the first dimension may be unknown");
      row *= shape.dim_size(d);
    }
    std::vector<Values> values(static_cast<size_t>(batch));
    int64_t longest = 0;
    for (int64_t b = 0; b < batch; ++b) {
      AF_RETURN_IF_ERROR(Find(b, c_.dense_keys[i], dtype, &values[b]));
      const int64_t n = values[b].size();
      if (variable) {
        if (row == 0 ? n != 0 : n % row != 0)
          return errors::InvalidArgument(Where(b, c_.dense_keys[i]), "Number of float values is not a multiple of ",
                                         row, " (shape ", shape.DebugString(), "): ", n);
        longest = std::max(longest, row == 0 ? 0 : n / row);
      } else if (values[b].feature == nullptr) {
        if (def.NumElements() == 0)
          return errors::InvalidArgument(Where(b, c_.dense_keys[i]), "Feature: ", c_.dense_keys[i],
                                         " (data type: ", DataTypeString(dtype), ") is required but could not be found.");
        if (def.NumElements() != row && def.NumElements() != 1)
          return errors::InvalidArgument("dense_defaults[", i, "] has ", def.NumElements(), " values for shape ",
                                         shape.DebugString());
      } else if (n != row) {
        return errors::InvalidArgument(Where(b, c_.dense_keys[i]), "Number of values != expected.  Values size: ", n,
                                       " but output shape: ", shape.DebugString());
      }
    }
    std::vector<int64_t> dims;
    if (batched) dims.push_back(batch);
    if (variable) dims.push_back(longest);
    for (int d = variable ? 1 : 0; d < shape.dims(); ++d) dims.push_back(shape.dim_size(d));
    TensorShape out_shape;
    AF_RETURN_IF_ERROR(TensorShape::FromDims(dims, &out_shape));
    Tensor* out = nullptr;
    AF_RETURN_IF_ERROR(ctx->allocate_output(out_index, out_shape, &out));
    const int64_t per_example = variable ? longest * row : row;
    if (variable && def.NumElements() > 1)
      return errors::InvalidArgument("dense_defaults[", i, "] of a variable-length feature must be a scalar");
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t base = b * per_example;
      const int64_t n = values[b].feature ? values[b].size() : 0;
      for (int64_t k = 0; k < n; ++k) values[b].CopyTo(k, out, base + k);
      for (int64_t k = n; k < per_example; ++k) {
        if (def.NumElements() > 0) CopyElement(def, def.NumElements() == 1 ? 0 : k, out, base + k);
        else if (dtype == DT_FLOAT) out->data<float>()[base + k] = 0.f;  // variable-length, no default: zeros
        else if (dtype == DT_INT64) out->data<int64_t>()[base + k] = 0;
        else out->data<std::string>()[base + k].clear();
      }
    }
    return Status::OK();
  }

  // Sparse: indices, values and shape at outputs base, base + num_sparse, base + 2 * num_sparse.
  Status Sparse(OpKernelContext* ctx, int i, int num_sparse, bool batched) const {
    const int64_t batch = static_cast<int64_t>(examples_.size());
    std::vector<Values> values(static_cast<size_t>(batch));
    int64_t total = 0, longest = 0;
    for (int64_t b = 0; b < batch; ++b) {
      AF_RETURN_IF_ERROR(Find(b, c_.sparse_keys[i], c_.sparse_types[i], &values[b]));
      total += values[b].size();
      longest = std::max(longest, values[b].size());
    }
    const int rank = batched ? 2 : 1;
    Tensor *indices = nullptr, *vals = nullptr, *shape = nullptr;
    AF_RETURN_IF_ERROR(ctx->allocate_output(i, TensorShape{total, rank}, &indices));
    AF_RETURN_IF_ERROR(ctx->allocate_output(num_sparse + i, TensorShape{total}, &vals));
    AF_RETURN_IF_ERROR(ctx->allocate_output(2 * num_sparse + i, TensorShape{rank}, &shape));
    int64_t o = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t k = 0; k < values[b].size(); ++k, ++o) {
        if (batched) {
          indices->data<int64_t>()[2 * o] = b;
          indices->data<int64_t>()[2 * o + 1] = k;
        } else {
          indices->data<int64_t>()[o] = k;
        }
        values[b].CopyTo(k, vals, o);
      }
    if (batched) {
      shape->data<int64_t>()[0] = batch;
      shape->data<int64_t>()[1] = longest;
    } else {
      shape->data<int64_t>()[0] = longest;
    }
    return Status::OK();
  }

  Status Ragged(OpKernelContext* ctx, int i, int values_index, int splits_index) const {
    const int64_t batch = static_cast<int64_t>(examples_.size());
    std::vector<Values> values(static_cast<size_t>(batch));
    int64_t total = 0;
    for (int64_t b = 0; b < batch; ++b) {
      AF_RETURN_IF_ERROR(Find(b, c_.ragged_keys[i], c_.ragged_types[i], &values[b]));
      total += values[b].size();
    }
    Tensor *vals = nullptr, *splits = nullptr;
    AF_RETURN_IF_ERROR(ctx->allocate_output(values_index, TensorShape{total}, &vals));
    AF_RETURN_IF_ERROR(ctx->allocate_output(splits_index, TensorShape{batch + 1}, &splits));
    const bool wide = c_.ragged_split_types[i] == DT_INT64;
    int64_t o = 0;
    for (int64_t b = 0; b <= batch; ++b) {
      if (wide) splits->data<int64_t>()[b] = o;
      else splits->data<int32_t>()[b] = static_cast<int32_t>(o);
      if (b == batch) break;
      for (int64_t k = 0; k < values[b].size(); ++k, ++o) values[b].CopyTo(k, vals, o);
    }
    return Status::OK();
  }

 private:
  const Config& c_;
  const std::vector<proto::Example>& examples_;
  const std::vector<std::string>& names_;
};

Status ParseAll(const Tensor& serialized, const std::vector<std::string>& names, std::vector<proto::Example>* out) {
  const std::string* s = serialized.data<std::string>();
  out->resize(static_cast<size_t>(serialized.NumElements()));
  for (int64_t b = 0; b < serialized.NumElements(); ++b)
    if (!(*out)[b].ParseFromString(s[b])) {
      const std::string name = b < static_cast<int64_t>(names.size()) && !names[b].empty() ? names[b] : "<unknown>";
      return errors::InvalidArgument("Could not parse example input, value: '", s[b].substr(0, 64),
                                     s[b].size() > 64 ? "...'" : "'", " (example ", b, ", name ", name, ")");
    }
  return Status::OK();
}

std::vector<std::string> Strings(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.NumElements());
}

// ParseExample (V1) and ParseExampleV2: the keys are inputs.
class ParseExampleOp : public OpKernel {
 public:
  explicit ParseExampleOp(OpKernelConstruction* c) : OpKernel(c), v2_(type_string() == "ParseExampleV2") {
    expensive_ = true;
    c->SetStatus(c->GetAttr("Tdense", &config_.dense_types));
    c->SetStatus(c->GetAttr("sparse_types", &config_.sparse_types));
    c->SetStatus(c->GetAttr("dense_shapes", &config_.dense_shapes));
    if (v2_) {
      c->SetStatus(c->GetAttr("ragged_value_types", &config_.ragged_types));
      c->SetStatus(c->GetAttr("ragged_split_types", &config_.ragged_split_types));
    }
    if (config_.dense_shapes.size() != config_.dense_types.size())
      c->SetStatus(errors::InvalidArgument("dense_shapes has ", config_.dense_shapes.size(), " shapes for ",
                                           config_.dense_types.size(), " dense features"));
  }

  void Compute(OpKernelContext* ctx) override {
    Config c = config_;
    const int num_sparse = static_cast<int>(c.sparse_types.size());
    const int num_dense = static_cast<int>(c.dense_types.size());
    int next = 2;  // after serialized, names
    if (v2_) {
      c.sparse_keys = Strings(ctx->input(next++));
      c.dense_keys = Strings(ctx->input(next++));
      c.ragged_keys = Strings(ctx->input(next++));
    } else {
      for (int i = 0; i < num_sparse; ++i) c.sparse_keys.push_back(ctx->input(next++).data<std::string>()[0]);
      for (int i = 0; i < num_dense; ++i) c.dense_keys.push_back(ctx->input(next++).data<std::string>()[0]);
    }
    AF_REQUIRES(ctx,
                static_cast<int>(c.sparse_keys.size()) == num_sparse && static_cast<int>(c.dense_keys.size()) == num_dense &&
                    c.ragged_keys.size() == c.ragged_types.size(),
                errors::InvalidArgument("the numbers of sparse, dense and ragged keys do not match their types"));
    for (int i = 0; i < num_dense; ++i) c.dense_defaults.push_back(ctx->input(next++));
    const Tensor& serialized = ctx->input(0);
    AF_REQUIRES(ctx, serialized.dims() <= 1,
                errors::InvalidArgument("serialized must be a scalar or a vector, got ", serialized.shape().DebugString()));
    const std::vector<std::string> names = Strings(ctx->input(1));
    std::vector<proto::Example> examples;
    AF_REQUIRES_OK(ctx, ParseAll(serialized, names, &examples));
    const bool batched = serialized.dims() == 1;
    ExampleParser p(c, examples, names);
    for (int i = 0; i < num_sparse; ++i) AF_REQUIRES_OK(ctx, p.Sparse(ctx, i, num_sparse, batched));
    for (int i = 0; i < num_dense; ++i) AF_REQUIRES_OK(ctx, p.Dense(ctx, i, 3 * num_sparse + i, batched));
    const int num_ragged = static_cast<int>(c.ragged_keys.size());
    for (int i = 0; i < num_ragged; ++i)
      AF_REQUIRES_OK(ctx, p.Ragged(ctx, i, 3 * num_sparse + num_dense + i, 3 * num_sparse + num_dense + num_ragged + i));
  }

 private:
  bool v2_;
  Config config_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("ParseExample").Device(DEVICE_CPU), ParseExampleOp);
AF_REGISTER_KERNEL(KernelDefBuilder("ParseExampleV2").Device(DEVICE_CPU), ParseExampleOp);

// ParseSingleExample: the keys are attrs; no batch dimension.
class ParseSingleExampleOp : public OpKernel {
 public:
  explicit ParseSingleExampleOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("Tdense", &config_.dense_types));
    c->SetStatus(c->GetAttr("sparse_types", &config_.sparse_types));
    c->SetStatus(c->GetAttr("dense_shapes", &config_.dense_shapes));
    c->SetStatus(c->GetAttr("sparse_keys", &config_.sparse_keys));
    c->SetStatus(c->GetAttr("dense_keys", &config_.dense_keys));
    if (config_.dense_shapes.size() != config_.dense_types.size() ||
        config_.dense_keys.size() != config_.dense_types.size() ||
        config_.sparse_keys.size() != config_.sparse_types.size())
      c->SetStatus(errors::InvalidArgument("the numbers of keys, types and shapes do not match"));
  }

  void Compute(OpKernelContext* ctx) override {
    Config c = config_;
    for (size_t i = 0; i < c.dense_types.size(); ++i) c.dense_defaults.push_back(ctx->input(1 + static_cast<int>(i)));
    const Tensor& serialized = ctx->input(0);
    AF_REQUIRES(ctx, serialized.NumElements() == 1 && serialized.dims() == 0,
                errors::InvalidArgument("serialized must be a scalar, got ", serialized.shape().DebugString()));
    std::vector<proto::Example> examples;
    const std::vector<std::string> no_names;
    AF_REQUIRES_OK(ctx, ParseAll(serialized, no_names, &examples));
    ExampleParser p(c, examples, no_names);
    const int num_sparse = static_cast<int>(c.sparse_types.size());
    for (int i = 0; i < num_sparse; ++i) AF_REQUIRES_OK(ctx, p.Sparse(ctx, i, num_sparse, false));
    for (int i = 0; i < static_cast<int>(c.dense_types.size()); ++i)
      AF_REQUIRES_OK(ctx, p.Dense(ctx, i, 3 * num_sparse + i, false));
  }

 private:
  Config config_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("ParseSingleExample").Device(DEVICE_CPU), ParseSingleExampleOp);

}  // namespace
}  // namespace actorflow
