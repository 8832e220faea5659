// What the checkpoint fuzz targets (fuzz_checkpoint, fuzz_tf_checkpoint)
// check of any bundle that opens: every tensor the index lists reads back
// with the dtype and shape the index gives, or fails with a Status; a name
// never stored is not found; LookupManyInto reads whatever Lookup read.
#pragma once

#include <string>
#include <vector>

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/core/tensor.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace actorflow {
namespace fuzz {

inline void ReadEveryTensor(const BundleReader& reader) {
  std::vector<std::string> names;
  std::vector<Tensor> dsts;
  for (const std::string& name : reader.TensorNames()) {
    FuzzCheck(reader.Contains(name), "TensorNames lists a tensor Contains denies");
    DataType dtype;
    TensorShape shape;
    if (!reader.LookupDtypeAndShape(name, &dtype, &shape).ok()) continue;
    Tensor t;
    if (reader.Lookup(name, &t).ok()) {
      FuzzCheck(t.dtype() == dtype && t.shape() == shape, "Lookup's tensor differs from the index");
      names.push_back(name);
      dsts.emplace_back(dtype, shape);  // sized as a tensor just read: no larger than the file allows
    }
  }
  Tensor missing;
  const std::string absent = "\xff no such tensor";
  FuzzCheck(reader.Contains(absent) || !reader.Lookup(absent, &missing).ok(), "Lookup found a tensor never stored");
  std::vector<Tensor*> ptrs;
  for (Tensor& t : dsts) ptrs.push_back(&t);
  FuzzCheck(reader.LookupManyInto(names, ptrs).ok(), "LookupManyInto failed where Lookup succeeded");
}

}  // namespace fuzz
}  // namespace actorflow
