// DecodeCSV: each string of `records` is one CSV line; output i holds field i
// of every line (of dtype OUT_TYPE[i], the shape of `records`), or
// record_defaults[i] where the field is empty or equals na_value. TensorFlow's
// definition and parsing (decode_csv_op.cc):
//  - fields are split at field_delim (one character);
//  - with use_quote_delim, a field starting with '"' runs to a '"' followed by
//    the delimiter or the end, "" inside it being one '"'; an unquoted field
//    may then hold no '"';
//  - '\n' and '\r' are skipped between fields and refused inside unquoted ones;
//  - a line ending with the delimiter has an empty last field;
//  - select_cols (strictly increasing, >= 0) keeps only those columns;
//  - every line must have exactly as many (selected) fields as OUT_TYPE;
//  - a default is a scalar or a vector of at most one value; an empty default
//    makes the field required.
// Errors are InvalidArgument naming the record (its index in `records`) and
// the field.
#include <string>
#include <string_view>
#include <vector>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/parsing/number_parsing.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status DecodeCSVShape(InferenceContext* c) {
  for (int i = 1; i < c->num_inputs(); ++i) {
    const PartialTensorShape& d = c->input(i);
    if (d.unknown_rank()) continue;
    if (d.dims() > 1)
      return c->Error("record_defaults[", i - 1, "] must be a scalar or a vector, got ", d.DebugString());
    if (d.dims() == 1 && d.dim_size(0) > 1)
      return c->Error("Shape of a default must be a length-0 or length-1 vector, or a scalar; record_defaults[", i - 1,
                      "] is ", d.DebugString());
  }
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(0));
  return Status::OK();
}

AF_REGISTER_OP("DecodeCSV")
    .Input("records: string")
    .Input("record_defaults: OUT_TYPE")
    .Output("output: OUT_TYPE")
    .Attr("OUT_TYPE: list({float, double, int32, int64, string})")
    .Attr("field_delim: string = ','")
    .Attr("use_quote_delim: bool = true")
    .Attr("na_value: string = ''")
    .Attr("select_cols: list(int) = []")
    .SetShapeFn(DecodeCSVShape)
    .Doc("Converts CSV records to tensors, one per column.");
AF_REGISTER_NO_GRADIENT("DecodeCSV");

class DecodeCSVOp : public OpKernel {
 public:
  explicit DecodeCSVOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    std::string delim;
    c->SetStatus(c->GetAttr("OUT_TYPE", &out_types_));
    c->SetStatus(c->GetAttr("field_delim", &delim));
    c->SetStatus(c->GetAttr("use_quote_delim", &use_quote_delim_));
    c->SetStatus(c->GetAttr("na_value", &na_value_));
    c->SetStatus(c->GetAttr("select_cols", &select_cols_));
    c->SetStatus(CheckAttrs(delim));
    if (delim.size() == 1) delim_ = delim[0];
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& records = ctx->input(0);
    const int num_fields = static_cast<int>(out_types_.size());
    for (int f = 0; f < num_fields; ++f) {
      const Tensor& d = ctx->input(1 + f);
      AF_REQUIRES(ctx, d.dims() <= 1,
                  errors::InvalidArgument("Each record default should be at most rank 1, but field ", f, " has shape ",
                                          d.shape().DebugString()));
      AF_REQUIRES(ctx, d.NumElements() < 2,
                  errors::InvalidArgument("There should only be 1 default per field but field ", f, " has ",
                                          d.NumElements()));
    }
    std::vector<Tensor*> outputs(num_fields);
    for (int f = 0; f < num_fields; ++f) AF_REQUIRES_OK(ctx, ctx->allocate_output(f, records.shape(), &outputs[f]));
    const std::string* lines = records.data<std::string>();
    std::vector<std::string> fields;
    for (int64_t r = 0; r < records.NumElements(); ++r) {
      AF_REQUIRES_OK(ctx, ExtractFields(lines[r], r, &fields));
      AF_REQUIRES(ctx, static_cast<int>(fields.size()) == num_fields,
                  errors::InvalidArgument("Expect ", num_fields, " fields but have ", fields.size(), " in record ", r));
      for (int f = 0; f < num_fields; ++f) AF_REQUIRES_OK(ctx, Convert(ctx->input(1 + f), fields[f], r, f, outputs[f]));
    }
  }

 private:
  Status CheckAttrs(const std::string& delim) const {
    if (delim.size() != 1) return errors::InvalidArgument("field_delim should be only 1 char, got '", delim, "'");
    if (!select_cols_.empty() && select_cols_.size() != out_types_.size())
      return errors::InvalidArgument("select_cols should match output size: ", select_cols_.size(), " columns for ",
                                     out_types_.size(), " outputs");
    for (size_t i = 1; i < select_cols_.size(); ++i)
      if (select_cols_[i - 1] >= select_cols_[i])
        return errors::InvalidArgument("select_cols should be strictly increasing indices");
    if (!select_cols_.empty() && select_cols_.front() < 0)
      return errors::InvalidArgument("select_cols should be non-negative indices");
    return Status::OK();
  }

  /// Stores field `f` of record `r` (or its default) as element r of `out`.
  Status Convert(const Tensor& dflt, std::string& field, int64_t r, int f, Tensor* out) const {
    const DataType dtype = out_types_[f];
    if (field.empty() || field == na_value_) {
      if (dflt.NumElements() != 1)
        return errors::InvalidArgument("Field ", f, " is required but missing in record ", r, "!");
      switch (dtype) {
        case DT_INT32: out->data<int32_t>()[r] = dflt.data<int32_t>()[0]; break;
        case DT_INT64: out->data<int64_t>()[r] = dflt.data<int64_t>()[0]; break;
        case DT_FLOAT: out->data<float>()[r] = dflt.data<float>()[0]; break;
        case DT_DOUBLE: out->data<double>()[r] = dflt.data<double>()[0]; break;
        case DT_STRING: out->data<std::string>()[r] = dflt.data<std::string>()[0]; break;
        default:
          return errors::InvalidArgument("csv: data type ", DataTypeString(dtype), " not supported in field ", f);
      }
      return Status::OK();
    }
    bool ok = true;
    switch (dtype) {
      case DT_INT32: ok = parsing::ParseInt32(field, &out->data<int32_t>()[r]); break;
      case DT_INT64: ok = parsing::ParseInt64(field, &out->data<int64_t>()[r]); break;
      case DT_FLOAT: ok = parsing::ParseFloat(field, &out->data<float>()[r]); break;
      case DT_DOUBLE: ok = parsing::ParseDouble(field, &out->data<double>()[r]); break;
      case DT_STRING: out->data<std::string>()[r] = std::move(field); break;
      default: return errors::InvalidArgument("csv: data type ", DataTypeString(dtype), " not supported in field ", f);
    }
    if (!ok)
      return errors::InvalidArgument("Field ", f, " in record ", r, " is not a valid ", DataTypeString(dtype), ": '",
                                     field, "'");
    return Status::OK();
  }

  /// Splits record `r` into its (selected) fields, as TensorFlow's ExtractFields.
  Status ExtractFields(std::string_view in, int64_t r, std::vector<std::string>* result) const {
    result->clear();
    if (in.empty()) return Status::OK();
    const bool select_all = select_cols_.empty();
    size_t i = 0, selector = 0;
    int64_t parsed = 0;  // fields parsed so far, selected or not
    while (i < in.size()) {
      if (in[i] == '\n' || in[i] == '\r') {
        ++i;
        continue;
      }
      const bool include = select_all || select_cols_[selector] == parsed;
      std::string field;
      if (use_quote_delim_ && in[i] == '"') {
        ++i;
        // Up to a '"' followed by the delimiter or the end; "" is one '"'.
        while (i + 1 < in.size() && !(in[i] == '"' && in[i + 1] == delim_)) {
          if (in[i] != '"') {
            if (include) field += in[i];
            ++i;
            continue;
          }
          if (in[i + 1] != '"')
            return errors::InvalidArgument("Quote inside a string has to be escaped by another quote, in field ",
                                           parsed, " of record ", r);
          if (include) field += '"';
          i += 2;
        }
        if (!(i < in.size() && in[i] == '"' && (i + 1 == in.size() || in[i + 1] == delim_)))
          return errors::InvalidArgument("Quoted field has to end with quote followed by delim or end, in field ",
                                         parsed, " of record ", r);
        i += 2;
      } else {
        for (; i < in.size() && in[i] != delim_; ++i) {
          if ((use_quote_delim_ && in[i] == '"') || in[i] == '\n' || in[i] == '\r')
            return errors::InvalidArgument("Unquoted fields cannot have quotes/CRLFs inside, in field ", parsed,
                                           " of record ", r);
          if (include) field += in[i];
        }
        ++i;  // past the delimiter (or the end)
      }
      ++parsed;
      if (include) {
        result->push_back(std::move(field));
        if (++selector == select_cols_.size()) return Status::OK();
      }
    }
    // A line ending with the delimiter has an empty last field.
    if ((select_all || select_cols_[selector] == parsed) && in.back() == delim_) result->emplace_back();
    return Status::OK();
  }

  DataTypeVector out_types_;
  char delim_ = ',';
  bool use_quote_delim_ = true;
  std::string na_value_;
  std::vector<int64_t> select_cols_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("DecodeCSV").Device(DEVICE_CPU), DecodeCSVOp);

}  // namespace
}  // namespace actorflow
