// Bounded input (core/io/record_limits.hpp): a length read from a file, or a
// line, longer than the reader's max_record_bytes is DataLoss naming the file
// and the offset, found before the record is read or allocated: TFRecord
// files (plain, gzip and zlib) announcing a 5 GiB record, records and lines
// just over and at a small bound, text lines with no end; FixedLengthRecord
// sizes that overflow or exceed the bound refused when the reader is made;
// buffer sizes checked; checkpoint index lengths bounded. Streams here count
// the bytes they hand out, to show a refused record was not read.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>

#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/core/io/buffered_input_stream.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/file_input_stream.hpp"
#include "actorflow/core/io/file_output_stream.hpp"
#include "actorflow/core/io/fixed_length_record_reader.hpp"
#include "actorflow/core/io/record_limits.hpp"
#include "actorflow/core/io/record_reader.hpp"
#include "actorflow/core/io/text_line_reader.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "actorflow/core/io/zlib_input_stream.hpp"
#include "actorflow/core/io/zlib_output_stream.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::io;
using Catch::Matchers::Contains;
using test::Frame;

namespace {

constexpr uint64_t k5GiB = uint64_t{5} << 30;

/// Writes `bytes` to `path` through `c`.
void WriteFile(const std::string& path, const std::string& bytes, Compression c) {
  std::unique_ptr<FileOutputStream> file;
  REQUIRE(FileOutputStream::Create(path, &file).ok());
  std::unique_ptr<OutputStream> out = std::move(file);
  if (c != Compression::kNone) out = std::make_unique<ZlibOutputStream>(std::move(out), c);
  REQUIRE(out->Append(bytes.data(), bytes.size()).ok());
  REQUIRE(out->Close().ok());
}

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

/// A TFRecord header announcing `length` bytes, its CRC right.
std::string Header(uint64_t length) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(length >> (8 * i)));
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out.data(), 8)));
  return out;
}

/// An InputStream that counts the bytes it hands out.
class CountingStream : public InputStream {
 public:
  CountingStream(std::unique_ptr<InputStream> source, uint64_t* count) : source_(std::move(source)), count_(count) {}
  Status Read(void* dst, size_t n, size_t* got) override {
    const Status s = source_->Read(dst, n, got);
    *count_ += *got;
    return s;
  }
  uint64_t Tell() const override { return source_->Tell(); }
  const std::string& filename() const override { return source_->filename(); }

 private:
  std::unique_ptr<InputStream> source_;
  uint64_t* count_;
};

/// `path` through `c`, with a `buffer_bytes` buffer, counting into *count the
/// (decompressed) bytes read from it.
std::unique_ptr<BufferedInputStream> CountedStream(const std::string& path, Compression c, size_t buffer_bytes,
                                                   uint64_t* count) {
  std::unique_ptr<FileInputStream> file;
  REQUIRE(FileInputStream::Open(path, &file).ok());
  std::unique_ptr<InputStream> source = std::move(file);
  if (c != Compression::kNone) source = std::make_unique<ZlibInputStream>(std::move(source), c);
  source = std::make_unique<CountingStream>(std::move(source), count);
  return std::make_unique<BufferedInputStream>(std::move(source), buffer_bytes);
}

const char* Name(Compression c) { return c == Compression::kNone ? "plain" : CompressionName(c); }

}  // namespace

// ---------------------------------------------------------------------------
// TFRecord files

TEST_CASE("bounded input: a TFRecord announcing 5 GiB is DataLoss naming file and offset, before reading it") {
  test::TempDir dir("af_bounded_test");
  // A record, then a header announcing 5 GiB over 1 MiB of zeros: gzip makes
  // a file of about 1 KB of it.
  const std::string bytes = Frame("hello") + Header(k5GiB) + std::string(1 << 20, '\0');
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    INFO(Name(c));
    const std::string path = dir / (std::string("huge_") + Name(c) + ".tfrecord");
    WriteFile(path, bytes, c);

    // The default bound, through the public API.
    std::unique_ptr<RecordReader> reader;
    REQUIRE(RecordReader::Open(path, c, &reader).ok());
    std::string record;
    REQUIRE(reader->ReadRecord(&record).ok());
    CHECK(record == "hello");
    Status s = reader->ReadRecord(&record);
    INFO(s.ToString());
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(path) && Contains("offset 21") && Contains(std::to_string(k5GiB)) &&
                                Contains("max_record_bytes"));
    CHECK(record.empty());
    CHECK(reader->ReadRecord(&record) == s);  // sticky

    // Nothing past the header was read: the stream handed out one buffer.
    uint64_t count = 0;
    RecordReader counted(CountedStream(path, c, 4096, &count));
    REQUIRE(counted.ReadRecord(&record).ok());
    CHECK(errors::IsDataLoss(counted.ReadRecord(&record)));
    CHECK(count <= 4096);
  }
}

TEST_CASE("bounded input: a TFRecord at max_record_bytes is read, one byte over is refused") {
  test::TempDir dir("af_bounded_test");
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    INFO(Name(c));
    const std::string path = dir / (std::string("bound_") + Name(c) + ".tfrecord");
    const std::string at(100, 'a'), over(101, 'b');
    WriteFile(path, Frame(at) + Frame(over) + Frame("c"), c);
    RecordReaderOptions o;
    o.compression = c;
    o.max_record_bytes = 100;
    std::unique_ptr<RecordReader> reader;
    REQUIRE(RecordReader::Open(path, o, &reader).ok());
    std::string record;
    REQUIRE(reader->ReadRecord(&record).ok());
    CHECK(record == at);
    const Status s = reader->ReadRecord(&record);
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(path) && Contains("offset 116") && Contains("101 bytes") && Contains("100"));

    // The same through the FileRecordReader the reader op uses.
    std::unique_ptr<FileRecordReader> file_reader;
    REQUIRE(TFRecordFileReader::Create({c, 100}, &file_reader).ok());
    REQUIRE(file_reader->Open(path).ok());
    std::string key, value;
    REQUIRE(file_reader->ReadRecord(&key, &value).ok());
    CHECK(key == path + ":0");
    const Status fs = file_reader->ReadRecord(&key, &value);
    CHECK(errors::IsDataLoss(fs));
    CHECK_THAT(fs.message(), Contains(path) && Contains("offset 116"));
  }
}

TEST_CASE("bounded input: record reader options out of range are InvalidArgument naming the option") {
  test::TempDir dir("af_bounded_test");
  const std::string path = dir / "a.tfrecord";
  WriteFile(path, Frame("x"), Compression::kNone);
  std::unique_ptr<RecordReader> reader;
  RecordReaderOptions o;
  o.max_record_bytes = 0;
  Status s = RecordReader::Open(path, o, &reader);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("max_record_bytes"));
  o = RecordReaderOptions();
  o.buffer_bytes = 0;
  s = RecordReader::Open(path, o, &reader);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("buffer_bytes"));
  // A buffer larger than memory is refused, not allocated.
  std::unique_ptr<BufferedInputStream> in;
  s = BufferedInputStream::Open(path, Compression::kGzip, &in, size_t{1} << 40);
  CHECK(errors::IsInvalidArgument(s));
  CHECK_THAT(s.message(), Contains("buffer_bytes") && Contains(path));
  std::unique_ptr<FileRecordReader> r;
  CHECK(errors::IsInvalidArgument(TFRecordFileReader::Create({Compression::kNone, 0}, &r)));
  TextLineReader::Options t;
  t.max_record_bytes = 0;
  CHECK(errors::IsInvalidArgument(TextLineReader::Create(t, &r)));
  t = TextLineReader::Options();
  t.skip_header_lines = -1;
  CHECK(errors::IsInvalidArgument(TextLineReader::Create(t, &r)));
}

// ---------------------------------------------------------------------------
// Text lines

TEST_CASE("bounded input: a line at the bound is read, one byte longer is DataLoss naming file and offset") {
  test::TempDir dir("af_bounded_test");
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    INFO(Name(c));
    const std::string path = dir / (std::string("lines_") + Name(c) + ".txt");
    // Ten bytes; ten and a CR (dropped); eleven.
    WriteFile(path, "0123456789\nabcdefghij\r\n0123456789X\nnext\n", c);
    std::unique_ptr<BufferedInputStream> in;
    REQUIRE(BufferedInputStream::Open(path, c, &in, 4).ok());  // lines span buffers
    std::string line;
    REQUIRE(in->ReadLine(&line, 10).ok());
    CHECK(line == "0123456789");
    REQUIRE(in->ReadLine(&line, 10).ok());
    CHECK(line == "abcdefghij");
    Status s = in->ReadLine(&line, 10);
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(path) && Contains("offset 23") && Contains("10 bytes"));
    CHECK(line.empty());

    // A last line without '\n', over the bound.
    const std::string last = dir / (std::string("last_") + Name(c) + ".txt");
    WriteFile(last, "ok\n0123456789X", c);
    REQUIRE(BufferedInputStream::Open(last, c, &in).ok());
    REQUIRE(in->ReadLine(&line, 10).ok());
    s = in->ReadLine(&line, 10);
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(last) && Contains("offset 3"));
  }
}

TEST_CASE("bounded input: a line with no end is refused after the bound, not read whole") {
  test::TempDir dir("af_bounded_test");
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    INFO(Name(c));
    const std::string path = dir / (std::string("endless_") + Name(c) + ".txt");
    WriteFile(path, "header\n" + std::string(8 << 20, 'x'), c);
    uint64_t count = 0;
    auto in = CountedStream(path, c, 4096, &count);
    std::string line;
    REQUIRE(in->ReadLine(&line, 64 << 10).ok());
    const Status s = in->ReadLine(&line, 64 << 10);
    CHECK(errors::IsDataLoss(s));
    CHECK_THAT(s.message(), Contains(path) && Contains("offset 7"));
    CHECK(count <= (64 << 10) + 2 * 4096);  // the bound and a buffer, not 8 MiB
  }
}

TEST_CASE("bounded input: TextLineReader's max_record_bytes bounds lines and header lines; the error stays") {
  test::TempDir dir("af_bounded_test");
  const std::string path = dir / "a.csv.gz";
  WriteFile(path, "h\nshort\nthis line is too long\nlast\n", Compression::kGzip);
  TextLineReader::Options o;
  o.compression = Compression::kGzip;
  o.skip_header_lines = 1;
  o.max_record_bytes = 8;
  std::unique_ptr<FileRecordReader> r;
  REQUIRE(TextLineReader::Create(o, &r).ok());
  REQUIRE(r->Open(path).ok());
  std::string key, value;
  REQUIRE(r->ReadRecord(&key, &value).ok());
  CHECK(value == "short");
  Status s = r->ReadRecord(&key, &value);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(path) && Contains("offset 8"));
  CHECK(r->ReadRecord(&key, &value) == s);  // not "t long" from the middle of the line

  // A header line over the bound fails Open.
  o.max_record_bytes = 1;
  o.skip_header_lines = 2;
  REQUIRE(TextLineReader::Create(o, &r).ok());
  s = r->Open(path);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(path) && Contains("offset 2"));
}

// ---------------------------------------------------------------------------
// Fixed-length records

TEST_CASE("bounded input: FixedLengthRecordReader sizes that overflow or exceed the bound are refused") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto create = [](int64_t header, int64_t record, int64_t footer, int64_t hop, uint64_t max) {
    FixedLengthRecordReader::Options o;
    o.header_bytes = header;
    o.record_bytes = record;
    o.footer_bytes = footer;
    o.hop_bytes = hop;
    o.max_record_bytes = max;
    std::unique_ptr<FileRecordReader> r;
    return FixedLengthRecordReader::Create(o, &r);
  };
  const uint64_t def = kDefaultMaxRecordBytes;
  struct Case {
    int64_t header, record, footer, hop;
    const char* attr;
  };
  for (const Case& c : {Case{0, kMax, 1, 0, "record_bytes"},      // the sum overflows int64
                        Case{0, 1, kMax, 0, "footer_bytes"},      // the same, the other way round
                        Case{0, kMax, 0, 0, "record_bytes"},      // over the bound alone
                        Case{0, 200 << 20, 100 << 20, 0, "record_bytes + footer_bytes"},  // the sum over it
                        Case{kMax, 4, 0, 0, "header_bytes"},
                        Case{0, 4, 0, kMax, "hop_bytes"},
                        Case{-1, 4, 0, 0, "header_bytes"},
                        Case{0, -4, 0, 0, "record_bytes"},
                        Case{0, 4, -1, 0, "footer_bytes"},
                        Case{0, 4, 0, -1, "hop_bytes"},
                        Case{0, std::numeric_limits<int64_t>::min(), 0, 0, "record_bytes"}}) {
    const Status s = create(c.header, c.record, c.footer, c.hop, def);
    INFO(c.attr << ": " << s.ToString());
    CHECK(errors::IsInvalidArgument(s));
    CHECK_THAT(s.message(), Contains(c.attr));
  }
  CHECK(errors::IsInvalidArgument(create(0, 4, 0, 0, 0)));
  // record_bytes + footer_bytes at the bound is fine; one more is not.
  CHECK(create(0, 6, 2, 0, 8).ok());
  CHECK(errors::IsInvalidArgument(create(0, 7, 2, 0, 8)));
  CHECK(create(8, 8, 0, 8, 8).ok());
  CHECK(errors::IsInvalidArgument(create(9, 8, 0, 0, 8)));
  CHECK(errors::IsInvalidArgument(create(0, 8, 0, 9, 8)));
}

TEST_CASE("bounded input: a FixedLengthRecordReader at its bound reads its records") {
  test::TempDir dir("af_bounded_test");
  const std::string path = dir / "a.bin";
  WriteFile(path, "HHabcdefghiF", Compression::kNone);
  FixedLengthRecordReader::Options o;
  o.header_bytes = 2;
  o.record_bytes = 3;
  o.footer_bytes = 1;
  o.max_record_bytes = 4;
  std::unique_ptr<FileRecordReader> r;
  REQUIRE(FixedLengthRecordReader::Create(o, &r).ok());
  REQUIRE(r->Open(path).ok());
  std::string key, value, all;
  Status s;
  while ((s = r->ReadRecord(&key, &value)).ok()) all += value;
  CHECK(errors::IsOutOfRange(s));
  CHECK(all == "abcdefghi");
}

// ---------------------------------------------------------------------------
// Checkpoints

namespace {

/// A bundle header (its meta CRC over `index`) and `index`, then the file
/// extended to `file_size` bytes (sparse: nothing is written there).
void WriteBundle(const std::string& path, uint64_t index_offset, uint64_t index_length, const std::string& index,
                 uint64_t file_size) {
  bundle::Header h;
  h.index_offset = index_offset;
  h.index_length = index_length;
  h.num_entries = 0;
  std::string header = bundle::EncodeHeaderPrefix(h);
  const uint32_t crc = crc32c::Extend(crc32c::Value(header.data(), header.size()), index.data(), index.size());
  fixed::Put<uint32_t>(&header, crc32c::Mask(crc));
  header.resize(bundle::kDataStart, '\0');
  WriteFile(path, header + index, Compression::kNone);
  std::filesystem::resize_file(path, file_size);
}

}  // namespace

TEST_CASE("bounded input: a checkpoint index over the bound is DataLoss naming the file, before allocating it") {
  test::TempDir dir("af_bounded_test");
  const std::string prefix = dir / "sparse";
  const std::string path = bundle::BundleFileName(prefix);
  // A sparse file of 300 MiB whose header puts a 300 MiB index in it: its
  // size agrees, so only the bound stops the index being read whole.
  const uint64_t size = uint64_t{300} << 20;
  WriteBundle(path, bundle::kDataStart, size - bundle::kDataStart, "", size);
  std::unique_ptr<BundleReader> r;
  Status s = BundleReader::Open(prefix, &r);
  INFO(s.ToString());
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(path) && Contains(std::to_string(size - bundle::kDataStart)) &&
                              Contains("max_index_bytes"));

  // A configured bound: a valid bundle with a larger index is refused, read under the default.
  std::unique_ptr<BundleWriter> w;
  const std::string small = dir / "small";
  REQUIRE(BundleWriter::Create(small, &w).ok());
  REQUIRE(w->Add("a_tensor_with_a_long_name", Tensor::Scalar<float>(1.f)).ok());
  REQUIRE(w->Finish().ok());
  REQUIRE(BundleReader::Open(small, &r).ok());
  BundleReader::Options o;
  o.max_index_bytes = 16;
  s = BundleReader::Open(small, o, &r);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(small + ".index") && Contains("max_index_bytes"));
  o.max_index_bytes = 0;
  CHECK(errors::IsInvalidArgument(BundleReader::Open(small, o, &r)));
}

TEST_CASE("bounded input: a checkpoint length field past the file's end is DataLoss naming the file") {
  test::TempDir dir("af_bounded_test");
  const std::string prefix = dir / "lying";
  const std::string path = bundle::BundleFileName(prefix);
  std::unique_ptr<BundleReader> r;
  // The index said to run 5 GiB past a 100-byte file; then to start past its end.
  WriteBundle(path, bundle::kDataStart, k5GiB, "", 100);
  Status s = BundleReader::Open(prefix, &r);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(path) && Contains(std::to_string(k5GiB)));
  WriteBundle(path, k5GiB, 36, "", 100);
  s = BundleReader::Open(prefix, &r);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(path));
  // Truncated inside the header.
  WriteBundle(path, bundle::kDataStart, 0, "", 20);
  s = BundleReader::Open(prefix, &r);
  CHECK(errors::IsDataLoss(s));
  CHECK_THAT(s.message(), Contains(path) && Contains("truncated"));
}
