#include "actorflow/ops/math/bcast.hpp"

namespace actorflow {

BCast::BCast(const TensorShape& a, const TensorShape& b) {
  if (a == b) {
    same_shape_ = true;
    output_ = a;
    dims_ = {a.num_elements()};
    a_strides_ = {1};
    b_strides_ = {1};
    return;
  }
  const int rank = std::max(a.dims(), b.dims());
  std::vector<int64_t> ad(rank, 1), bd(rank, 1), od(rank);
  for (int i = 0; i < a.dims(); ++i) ad[rank - a.dims() + i] = a.dim_size(i);
  for (int i = 0; i < b.dims(); ++i) bd[rank - b.dims() + i] = b.dim_size(i);
  for (int i = 0; i < rank; ++i) {
    if (ad[i] == bd[i] || bd[i] == 1) od[i] = ad[i];
    else if (ad[i] == 1) od[i] = bd[i];
    else {
      valid_ = false;
      return;
    }
  }
  output_ = TensorShape(od);
  // Collapse: merge dim i into the previous group when both inputs broadcast
  // (or not) the same way in both; size-1 output dims vanish.
  std::vector<int64_t> cd, ca, cb;  // collapsed dims and "a/b is real along it" flags
  for (int i = 0; i < rank; ++i) {
    if (od[i] == 1) continue;
    const bool a_real = ad[i] != 1, b_real = bd[i] != 1;
    if (!cd.empty() && ca.back() == a_real && cb.back() == b_real) {
      cd.back() *= od[i];
    } else {
      cd.push_back(od[i]);
      ca.push_back(a_real);
      cb.push_back(b_real);
    }
  }
  if (cd.empty()) {
    cd = {1};
    ca = {1};
    cb = {1};
  }
  dims_ = cd;
  const int n = static_cast<int>(cd.size());
  a_strides_.assign(n, 0);
  b_strides_.assign(n, 0);
  int64_t sa = 1, sb = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (ca[i]) {
      a_strides_[i] = sa;
      sa *= cd[i];
    }
    if (cb[i]) {
      b_strides_[i] = sb;
      sb *= cd[i];
    }
  }
}

}  // namespace actorflow
