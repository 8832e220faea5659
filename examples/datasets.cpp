#include "examples/datasets.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>

namespace actorflow {
namespace examples {

namespace {

// The whole content of a gzip (or plain) file.
Status ReadGz(const std::string& path, std::string* out) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return errors::NotFound("cannot open ", path, ": ", std::strerror(errno));
  out->clear();
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return errors::DataLoss("cannot read ", path, ": ", msg);
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return Status::OK();
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

Dataset Take(const Dataset& d, const std::vector<int64_t>& rows) {
  Dataset out;
  Gather(d, rows, 0, static_cast<int64_t>(rows.size()), &out.images, &out.labels);
  return out;
}

}  // namespace

Status LoadDigitsCsv(const std::string& path, Dataset* out) {
  std::string text;
  AF_RETURN_IF_ERROR(ReadGz(path, &text));
  std::vector<float> pixels;
  std::vector<int32_t> labels;
  std::istringstream lines(text);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<int> v;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) {
      char* end = nullptr;
      long x = std::strtol(cell.c_str(), &end, 10);
      if (end == cell.c_str()) return errors::InvalidArgument(path, ":", line_no, ": not an integer: '", cell, "'");
      v.push_back(static_cast<int>(x));
    }
    if (v.size() != 65 || v[64] < 0 || v[64] > 9)
      return errors::InvalidArgument(path, ":", line_no, ": expected 64 pixels and a label 0..9, got ", v.size(),
                                     " fields");
    for (int i = 0; i < 64; ++i) pixels.push_back(static_cast<float>(v[i]) / 16.f);
    labels.push_back(v[64]);
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  out->images = Tensor(DT_FLOAT, TensorShape{n, 64});
  out->labels = Tensor(DT_INT32, TensorShape{n});
  std::copy(pixels.begin(), pixels.end(), out->images.data<float>());
  std::copy(labels.begin(), labels.end(), out->labels.data<int32_t>());
  return Status::OK();
}

Status LoadIdx(const std::string& images_path, const std::string& labels_path, Dataset* out) {
  std::string img, lab;
  AF_RETURN_IF_ERROR(ReadGz(images_path, &img));
  AF_RETURN_IF_ERROR(ReadGz(labels_path, &lab));
  if (img.size() < 16 || BigEndian32(img, 0) != 0x803)
    return errors::DataLoss(images_path, " is not an IDX image file (magic 0x00000803)");
  if (lab.size() < 8 || BigEndian32(lab, 0) != 0x801)
    return errors::DataLoss(labels_path, " is not an IDX label file (magic 0x00000801)");
  const int64_t n = BigEndian32(img, 4), rows = BigEndian32(img, 8), cols = BigEndian32(img, 12);
  if (static_cast<int64_t>(BigEndian32(lab, 4)) != n)
    return errors::InvalidArgument(images_path, " has ", n, " images but ", labels_path, " ", BigEndian32(lab, 4),
                                   " labels");
  if (img.size() != static_cast<size_t>(16 + n * rows * cols) || lab.size() != static_cast<size_t>(8 + n))
    return errors::DataLoss(images_path, " or ", labels_path, " is truncated");
  out->images = Tensor(DT_FLOAT, TensorShape{n, rows * cols});
  out->labels = Tensor(DT_INT32, TensorShape{n});
  float* px = out->images.data<float>();
  const auto* src = reinterpret_cast<const unsigned char*>(img.data() + 16);
  for (int64_t i = 0; i < n * rows * cols; ++i) px[i] = static_cast<float>(src[i]) / 255.f;
  for (int64_t i = 0; i < n; ++i) {
    const int label = static_cast<unsigned char>(lab[8 + i]);
    if (label > 9) return errors::DataLoss(labels_path, ": label ", label, " at index ", i, " is not 0..9");
    out->labels.data<int32_t>()[i] = label;
  }
  return Status::OK();
}

void Split(const Dataset& all, double test_fraction, uint64_t seed, Dataset* train, Dataset* test) {
  std::vector<int64_t> order(static_cast<size_t>(all.size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const auto n_test = static_cast<size_t>(static_cast<double>(order.size()) * test_fraction);
  *test = Take(all, std::vector<int64_t>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_test)));
  *train = Take(all, std::vector<int64_t>(order.begin() + static_cast<std::ptrdiff_t>(n_test), order.end()));
}

void Gather(const Dataset& d, const std::vector<int64_t>& index, int64_t begin, int64_t n, Tensor* images,
            Tensor* labels) {
  const int64_t f = d.features();
  *images = Tensor(DT_FLOAT, TensorShape{n, f});
  *labels = Tensor(DT_INT32, TensorShape{n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = index[static_cast<size_t>(begin + i)];
    std::memcpy(images->data<float>() + i * f, d.images.data<float>() + row * f, sizeof(float) * static_cast<size_t>(f));
    labels->data<int32_t>()[i] = d.labels.data<int32_t>()[row];
  }
}

std::string DataDir() {
  if (const char* env = std::getenv("ACTORFLOW_DATA_DIR")) return env;
  return AF_EXAMPLES_DATA_DIR;
}

Status LoadFashionMnist(Dataset* train, Dataset* test) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  Status s = LoadIdx(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz", train);
  if (s.ok()) s = LoadIdx(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz", test);
  if (!s.ok())
    return Status(s.code(), s.message() + " (install the data with ./setup.sh: Debian's dataset-fashion-mnist)");
  return Status::OK();
}

}  // namespace examples
}  // namespace actorflow
