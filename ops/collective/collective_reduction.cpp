// CollectiveReduce's merge and final ops, computed by the arithmetic kernels'
// own functors (ops/collective/collective_reduction.hpp).
#include "actorflow/ops/collective/collective_reduction.hpp"

#include "actorflow/ops/math/cwise_arithmetic.hpp"

namespace actorflow {
namespace {

// Merge with the functor of merge_op's kernel; Div with the Div kernel's
// (DivF on floats, the truncating IntDivF on integers: the divisor, the group
// size, is positive, so neither the zero check nor lowest() / -1 applies).
template <class MergeF>
class CwiseReduction final : public CollectiveReduction {
 public:
  CwiseReduction(std::string merge_name, bool divide) : merge_name_(std::move(merge_name)), divide_(divide) {}

  bool Accepts(DataType dtype) const override {
    return dtype == DT_FLOAT || dtype == DT_DOUBLE || dtype == DT_INT32 || dtype == DT_INT64;
  }

  void Merge(const Tensor& a, const Tensor& b, Tensor* out) const override {
    const int64_t n = a.NumElements();
    switch (a.dtype()) {
      case DT_FLOAT: return ApplyBinary<MergeF>(a.data<float>(), b.data<float>(), out->data<float>(), n);
      case DT_DOUBLE: return ApplyBinary<MergeF>(a.data<double>(), b.data<double>(), out->data<double>(), n);
      case DT_INT32: return ApplyBinary<MergeF>(a.data<int32_t>(), b.data<int32_t>(), out->data<int32_t>(), n);
      case DT_INT64: return ApplyBinary<MergeF>(a.data<int64_t>(), b.data<int64_t>(), out->data<int64_t>(), n);
      default: return;
    }
  }

  void Finalize(Tensor* t, int64_t group_size) const override {
    if (!divide_) return;
    const int64_t n = t->NumElements();
    switch (t->dtype()) {
      case DT_FLOAT: return Divide<cwise::DivF>(t->data<float>(), n, group_size);
      case DT_DOUBLE: return Divide<cwise::DivF>(t->data<double>(), n, group_size);
      case DT_INT32: return Divide<cwise::IntDivF>(t->data<int32_t>(), n, group_size);
      case DT_INT64: return Divide<cwise::IntDivF>(t->data<int64_t>(), n, group_size);
      default: return;
    }
  }

  std::string DebugString() const override { return merge_name_ + (divide_ ? "/Div" : "/Id"); }

 private:
  template <class DivF, class T>
  static void Divide(T* x, int64_t n, int64_t by) {
    ApplyBinaryScalar<DivF>(x, static_cast<T>(by), x, n);
  }

  std::string merge_name_;
  bool divide_;
};

}  // namespace

Status NewCollectiveReduction(const std::string& node, const std::string& merge_op, const std::string& final_op,
                              std::shared_ptr<const CollectiveReduction>* out) {
  if (final_op != "Id" && final_op != "Div")
    return errors::InvalidArgument(node, ": final_op must be Id or Div, got '", final_op, "'");
  const bool divide = final_op == "Div";
  if (merge_op == "Add") {
    *out = std::make_shared<CwiseReduction<cwise::AddF>>(merge_op, divide);
  } else if (merge_op == "Mul") {
    *out = std::make_shared<CwiseReduction<cwise::MulF>>(merge_op, divide);
  } else if (merge_op == "Min") {
    *out = std::make_shared<CwiseReduction<cwise::MinF>>(merge_op, divide);
  } else if (merge_op == "Max") {
    *out = std::make_shared<CwiseReduction<cwise::MaxF>>(merge_op, divide);
  } else {
    return errors::InvalidArgument(node, ": merge_op must be Add, Mul, Min or Max, got '", merge_op, "'");
  }
  return Status::OK();
}

uint64_t CollectivePlanHash(const std::string& plan) {
  if (plan.empty()) return 0;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : plan) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}


}  // namespace actorflow
