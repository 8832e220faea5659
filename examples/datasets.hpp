// Loading the examples' data sets into tensors: the bundled digits CSV and
// Fashion-MNIST's IDX files (both gzip-compressed), a fixed shuffled split,
// and gathering mini-batches.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace examples {

struct Dataset {
  Tensor images;  // float [n, features], scaled to [0, 1]
  Tensor labels;  // int32 [n]
  int64_t size() const { return labels.NumElements(); }
  int64_t features() const { return images.dims() == 2 ? images.dim_size(1) : 0; }
};

/// Rows of 65 integers: 64 pixels 0..16, then the label.
Status LoadDigitsCsv(const std::string& path, Dataset* out);
/// An IDX image file (magic 0x803, uint8 pixels) and its label file (0x801).
Status LoadIdx(const std::string& images_path, const std::string& labels_path, Dataset* out);

/// A shuffled split with a fixed seed: `test_fraction` of the rows to `test`.
void Split(const Dataset& all, double test_fraction, uint64_t seed, Dataset* train, Dataset* test);

/// Rows `index[begin, begin + n)` of `d` as one batch.
void Gather(const Dataset& d, const std::vector<int64_t>& index, int64_t begin, int64_t n, Tensor* images,
            Tensor* labels);

/// Fashion-MNIST's training and test sets as Debian's dataset-fashion-mnist
/// installs them (setup.sh does); the error says how to get them.
Status LoadFashionMnist(Dataset* train, Dataset* test);

/// Where the examples' data lives: $ACTORFLOW_DATA_DIR, else the source tree's examples/data.
std::string DataDir();

}  // namespace examples
}  // namespace actorflow
