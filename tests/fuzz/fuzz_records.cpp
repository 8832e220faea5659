// Fuzz target: the record file readers of core/io over a file of fuzzed bytes:
// TFRecord (RecordReader through TFRecordFileReader, or directly with a small
// buffer), text lines and fixed-length records, each plain, GZIP or ZLIB.
//
// Input layout (tests/fuzz/make_seeds.cpp writes seeds in it):
//   byte 0   reader (bits 0-1: 0/3 TFRecord file reader, 1 text lines,
//            2 fixed length), compression (bits 2-3: 0 none, 1 GZIP, 2 ZLIB),
//            bit 4: the target compresses the payload itself (so the reader
//            sees a valid stream of fuzzed content) instead of handing the
//            fuzzed bytes to the decompressor; bit 5: TFRecords through
//            RecordReader with the buffer size of byte 1 (1 to 256 bytes);
//            bit 6: the target recomputes the TFRecord CRCs of the payload
//            (before compressing it), so that mutated lengths get past the
//            length CRC to the code that uses them
//   byte 1   buffer size (bit 5 above), or skip_header_lines (text, 0-3)
//   4 x int64, little-endian: header, record, footer and hop bytes (fixed length)
//   the rest: the file's bytes
// Every record is read to the end (OutOfRange) or the first error. Findings:
// crashes, sanitizer reports, hangs (libFuzzer's -timeout) and allocations
// over -rss_limit_mb / -malloc_limit_mb (a length from the file trusted).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_length_record_reader.hpp"
#include "actorflow/core/io/record_reader.hpp"
#include "actorflow/core/io/text_line_reader.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace actorflow;

namespace {

constexpr int kMaxRecords = 1 << 16;

// `in` compressed as a gzip (windowBits 31) or zlib (15) stream.
std::string Compress(const uint8_t* in, size_t n, int window_bits) {
  z_stream z{};
  fuzz::FuzzCheck(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                  "deflateInit2");
  std::string out(deflateBound(&z, n), '\0');
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  fuzz::FuzzCheck(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Walks the payload as TFRecords (u64 length, masked CRC of the length, data,
// masked CRC of the data) and rewrites both CRCs of each, as far as it can.
void FixTfRecordCrcs(std::string* bytes) {
  char* p = &(*bytes)[0];
  const uint64_t size = bytes->size();
  auto put32 = [](char* at, uint32_t v) {
    for (int b = 0; b < 4; ++b) at[b] = static_cast<char>(v >> (8 * b));
  };
  for (uint64_t at = 0; size - at >= 12;) {
    uint64_t length = 0;
    for (int b = 0; b < 8; ++b) length |= static_cast<uint64_t>(static_cast<uint8_t>(p[at + b])) << (8 * b);
    put32(p + at + 8, crc32c::Mask(crc32c::Value(p + at, 8)));
    at += 12;
    if (length > size - at || size - at - length < 4) break;
    put32(p + at + length, crc32c::Mask(crc32c::Value(p + at, length)));
    at += length + 4;
  }
}

void ReadAll(io::FileRecordReader* reader, const std::string& path) {
  if (!reader->Open(path).ok()) return;
  std::string key, value;
  for (int i = 0; i < kMaxRecords && reader->ReadRecord(&key, &value).ok(); ++i) {
  }
  Status again = reader->ReadRecord(&key, &value);  // after the end or an error: refused again, no crash
  fuzz::FuzzCheck(!again.ok() || key.size() > 0, "a record without a key");
  reader->Close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Cursor in(data, size);
  const uint8_t mode = in.Byte();
  const uint8_t param = in.Byte();
  io::FixedLengthRecordReader::Options fixed;
  fixed.header_bytes = in.Int64();
  fixed.record_bytes = in.Int64();
  fixed.footer_bytes = in.Int64();
  fixed.hop_bytes = in.Int64();

  const int which = mode & 3;
  const io::Compression compression = ((mode >> 2) & 3) == 1   ? io::Compression::kGzip
                                      : ((mode >> 2) & 3) == 2 ? io::Compression::kZlib
                                                               : io::Compression::kNone;
  std::string payload(reinterpret_cast<const char*>(in.rest()), in.rest_size());
  if (mode & 0x40) FixTfRecordCrcs(&payload);
  if ((mode & 0x10) && compression != io::Compression::kNone) {
    payload = Compress(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
                       compression == io::Compression::kGzip ? 31 : 15);
  }
  const std::string path = fuzz::WriteScratchFile("records", payload.data(), payload.size());

  std::unique_ptr<io::FileRecordReader> reader;
  if (which == 1) {
    io::TextLineReader::Options o;
    o.skip_header_lines = param & 3;
    o.compression = compression;
    if (io::TextLineReader::Create(o, &reader).ok()) ReadAll(reader.get(), path);
  } else if (which == 2) {
    fixed.compression = compression;
    if (io::FixedLengthRecordReader::Create(fixed, &reader).ok()) ReadAll(reader.get(), path);
  } else if (mode & 0x20) {
    std::unique_ptr<io::RecordReader> r;
    if (!io::RecordReader::Open(path, compression, &r, /*buffer_bytes=*/1 + param).ok()) return 0;
    std::string record;
    for (int i = 0; i < kMaxRecords && r->ReadRecord(&record).ok(); ++i) {
    }
  } else {
    io::TFRecordFileReader::Options o;
    o.compression = compression;
    if (io::TFRecordFileReader::Create(o, &reader).ok()) ReadAll(reader.get(), path);
  }
  return 0;
}
