// Helpers shared by the libFuzzer targets of tests/fuzz/ (see CMakeLists.txt
// there and `make fuzz`): a scratch file per process for targets whose code
// under test reads files, and a cursor over the fuzzer's bytes for the option
// bytes a target reads before its payload.
//
// Contract: nothing here allocates by a value taken from the input, and
// nothing throws; a target reports a finding by crashing (a sanitizer report,
// or FuzzCheck's abort with a message), never by returning an error.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace actorflow {
namespace fuzz {

/// A directory of this process's own under $TMPDIR (or /tmp), made once:
/// parallel fuzzing jobs (-jobs=N) never share a scratch file.
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/af_fuzz_XXXXXX";
    if (mkdtemp(&templ[0]) == nullptr) {
      std::perror("af_fuzz: mkdtemp");
      std::abort();
    }
    return templ;
  }();
  return dir;
}

/// Writes `size` bytes to ScratchDir()/name (replacing it) and returns the path.
inline std::string WriteScratchFile(const std::string& name, const void* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(("af_fuzz: writing " + path).c_str());
    std::abort();
  }
  return path;
}

/// Aborts with `what` when `cond` is false: an invariant of the code under test broke.
inline void FuzzCheck(bool cond, const std::string& what) {
  if (!cond) {
    std::fprintf(stderr, "af_fuzz: invariant broken: %s\n", what.c_str());
    std::abort();
  }
}

/// Reads option bytes from the front of the input; past its end every value is 0.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  /// A little-endian int64 (8 bytes).
  int64_t Int64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(Byte()) << (8 * i);
    return static_cast<int64_t>(v);
  }
  /// The bytes not read yet.
  const uint8_t* rest() const { return data_ + pos_; }
  size_t rest_size() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace fuzz
}  // namespace actorflow
