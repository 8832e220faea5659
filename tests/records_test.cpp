// Record files (core/io): the fixed-width codec, CRC32C, the TFRecord writer and reader (TensorFlow's
// bytes, plain / GZIP / ZLIB round trips, every kind of damage reported as
// DataLoss with file and offset), the text line and fixed-length record
// readers, and the streams under them.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "actorflow/core/io/buffered_input_stream.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_length_record_reader.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/record_reader.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "actorflow/core/io/text_line_reader.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::io;
using Catch::Matchers::Contains;
using test::Frame;
using test::ReadBytes;
using test::WriteBytes;
namespace fs = std::filesystem;

namespace {

/// `data` deflated as one gzip (or zlib) stream by zlib itself.
std::string Deflate(const std::string& data, bool gzip) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, gzip ? MAX_WBITS + 16 : MAX_WBITS, 8,
                       Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// The gzip or zlib stream in `data` inflated by zlib itself.
std::string Inflate(const std::string& data, bool gzip) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, gzip ? MAX_WBITS + 16 : MAX_WBITS) == Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[1 << 14];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

void WriteRecords(const std::string& path, const std::vector<std::string>& records, Compression c,
                  size_t buffer_bytes = 256 << 10) {
  RecordWriterOptions options;
  options.compression = c;
  options.buffer_bytes = buffer_bytes;
  std::unique_ptr<RecordWriter> writer;
  REQUIRE(RecordWriter::Create(path, options, &writer).ok());
  for (const auto& r : records) REQUIRE(writer->WriteRecord(r).ok());
  const Status s = writer->Close();
  INFO(s.ToString());
  REQUIRE(s.ok());
}

/// Every record of a TFRecord file; the status that ended the reading in *end.
std::vector<std::string> ReadAll(const std::string& path, Compression c, Status* end, size_t buffer_bytes = 256 << 10) {
  std::unique_ptr<RecordReader> reader;
  std::vector<std::string> out;
  *end = RecordReader::Open(path, c, &reader, buffer_bytes);
  if (!end->ok()) return out;
  std::string record;
  while ((*end = reader->ReadRecord(&record)).ok()) out.push_back(record);
  return out;
}

/// Every (key, value) a FileRecordReader reads from `path`; the final status in *end.
std::vector<std::pair<std::string, std::string>> ReadPairs(FileRecordReader* reader, const std::string& path,
                                                           Status* end) {
  std::vector<std::pair<std::string, std::string>> out;
  *end = reader->Open(path);
  if (!end->ok()) return out;
  std::string key, value;
  for (int guard = 0; guard < 100000 && (*end = reader->ReadRecord(&key, &value)).ok(); ++guard)
    out.emplace_back(key, value);
  return out;
}

std::vector<std::string> SomeRecords() {
  std::mt19937 rng(5);
  std::vector<std::string> records = {"", "a", "12345", std::string(1000, 'x'), std::string(300 << 10, '\0')};
  for (char& c : records.back()) c = static_cast<char>(rng());
  for (int i = 0; i < 200; ++i) {
    std::string r(rng() % 300, '\0');
    for (char& c : r) c = static_cast<char>(rng() % 4);  // compressible
    records.push_back(r);
  }
  return records;
}

}  // namespace

// ---------------------------------------------------------------------------
// CRC32C

namespace {

using ExtendFn = uint32_t (*)(uint32_t crc, const void* p, size_t n);

// Checks `extend` (ExtendPortable, Extend, or one of the CPU's paths) on the
// known vectors, a length long enough to be folded, and lengths around the
// 3-stream block sizes at every alignment, whole and in pieces, against the
// portable path.
void CheckCrcPath(ExtendFn extend) {
  struct Vector {
    std::string data;
    uint32_t crc;
  };
  std::string ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  // "123456789" is the CRC catalogue's check value; the others are RFC 3720's (iSCSI).
  const std::vector<Vector> vectors = {{"", 0},
                                       {"123456789", 0xE3069283u},
                                       {std::string(32, '\0'), 0x8A9136AAu},
                                       {std::string(32, '\xff'), 0x62A8AB43u},
                                       {ascending, 0x46DD794Eu},
                                       {descending, 0x113FDB5Cu}};
  for (const auto& v : vectors) CHECK(extend(0, v.data.data(), v.data.size()) == v.crc);
  // Long enough to be folded: 1024 bytes of 0..255 repeated (value from a bitwise reference).
  std::string cycle(1024, '\0');
  for (size_t i = 0; i < cycle.size(); ++i) cycle[i] = static_cast<char>(i);
  CHECK(extend(0, cycle.data(), cycle.size()) == 0x2CDF6E8Fu);

  // Lengths around the 3-stream block sizes, at every alignment, whole and in pieces.
  // The longest length (49252) at the largest alignment (7) reads buf[7, 49259):
  // the buffer holds that many bytes, so no read runs past its end.
  std::mt19937 rng(7);
  std::string buf(3 * 8192 * 2 + 100 + 7, '\0');
  for (auto& c : buf) c = static_cast<char>(rng());
  for (size_t n : {1ul, 7ul, 8ul, 9ul, 255ul, 256ul, 511ul, 512ul, 513ul, 767ul, 768ul, 769ul, 1000ul, 4096ul,
                   24575ul, 24576ul, 24577ul, 49252ul}) {
    for (size_t align = 0; align < 8; ++align) {
      const char* p = buf.data() + align;
      const uint32_t want = crc32c::ExtendPortable(0, p, n);
      const size_t cut = n / 3;
      CHECK(extend(0, p, n) == want);
      CHECK(extend(extend(0, p, cut), p + cut, n - cut) == want);
    }
  }
}

// Value for a first piece, Extend after it: the calls a reader makes.
uint32_t ValueThenExtend(uint32_t crc, const void* p, size_t n) {
  return crc == 0 ? crc32c::Value(p, n) : crc32c::Extend(crc, p, n);
}

}  // namespace

// ---------------------------------------------------------------------------
// Fixed-width integers (core/io/fixed_width.hpp)

TEST_CASE("fixed width: little-endian bytes, signed values as two's complement, round trips") {
  std::string s;
  fixed::Put<uint32_t>(&s, 0x01020304u);
  fixed::Put<uint64_t>(&s, 0x0102030405060708ull);
  fixed::Put<uint16_t>(&s, 0xA1B2);
  fixed::Put<int32_t>(&s, -2);
  fixed::Put<int64_t>(&s, INT64_MIN);
  fixed::Put<uint8_t>(&s, 0xFF);
  CHECK(s == std::string("\x04\x03\x02\x01"
                         "\x08\x07\x06\x05\x04\x03\x02\x01"
                         "\xB2\xA1"
                         "\xFE\xFF\xFF\xFF"
                         "\x00\x00\x00\x00\x00\x00\x00\x80"
                         "\xFF",
                         4 + 8 + 2 + 4 + 8 + 1));
  const char* p = s.data();
  CHECK(fixed::DecodeFixed32(p) == 0x01020304u);
  CHECK(fixed::DecodeFixed64(p + 4) == 0x0102030405060708ull);
  CHECK(fixed::Get<uint16_t>(p + 12) == 0xA1B2);
  CHECK(fixed::Get<int32_t>(p + 14) == -2);
  CHECK(fixed::Get<uint32_t>(p + 14) == 0xFFFFFFFEu);
  CHECK(fixed::Get<int64_t>(p + 18) == INT64_MIN);
  CHECK(fixed::Get<uint8_t>(p + 26) == 0xFF);

  char b[8];
  fixed::EncodeFixed32(b, 0xDEADBEEFu);
  CHECK(std::string(b, 4) == "\xEF\xBE\xAD\xDE");
  fixed::EncodeFixed64(b, 5);
  CHECK(std::string(b, 8) == std::string("\x05\0\0\0\0\0\0\0", 8));

  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t u = rng();
    const int64_t v = static_cast<int64_t>(u);
    fixed::Encode<int64_t>(b, v);
    CHECK(fixed::Get<int64_t>(b) == v);
    fixed::Encode<int32_t>(b, static_cast<int32_t>(v));
    CHECK(fixed::Get<int32_t>(b) == static_cast<int32_t>(v));
    fixed::EncodeFixed64(b, u);
    CHECK(fixed::DecodeFixed64(b) == u);
    CHECK(fixed::DecodeFixed32(b) == static_cast<uint32_t>(u));  // the low half comes first
  }
}

// ---------------------------------------------------------------------------
// CRC32C

// The CPU's own paths (the crc32 instruction, carry-less folding) are checked
// by the [crc32c_sse42] and [crc32c_avx512] cases below, each skipping on a CPU without it.
TEST_CASE("crc32c: known vectors, Boost.CRC and the dispatching Extend agree, Extend joins pieces") {
  {
    INFO("ExtendPortable");
    CheckCrcPath(crc32c::ExtendPortable);
  }
  {
    INFO("Value and Extend (the fastest path of this CPU)");
    CheckCrcPath(ValueThenExtend);
  }
}

TEST_CASE("crc32c: the crc32 instruction (SSE4.2) gives Boost.CRC's values", "[may_skip][crc32c_sse42]") {
  if (!crc32c::HardwareAvailable()) AF_SKIP("no SSE4.2 on this CPU: the crc32 instruction path is not tested");
  CheckCrcPath(crc32c::ExtendHardware);
}

TEST_CASE("crc32c: carry-less folding (AVX-512 VPCLMULQDQ) gives Boost.CRC's values", "[may_skip][crc32c_avx512]") {
  if (!crc32c::FoldingAvailable()) AF_SKIP("no AVX-512 VPCLMULQDQ on this CPU: the folding path is not tested");
  CheckCrcPath(crc32c::ExtendFolding);
}

TEST_CASE("crc32c: Combine joins the CRCs of separate pieces") {
  std::mt19937 rng(11);
  std::string buf(100000, '\0');
  for (auto& c : buf) c = static_cast<char>(rng());
  for (size_t cut : {0ul, 1ul, 5ul, 4096ul, 33333ul, 99999ul, 100000ul}) {
    INFO("cut " << cut);
    const uint32_t a = crc32c::Value(buf.data(), cut), b = crc32c::Value(buf.data() + cut, buf.size() - cut);
    CHECK(crc32c::Combine(a, b, buf.size() - cut) == crc32c::Value(buf.data(), buf.size()));
  }
  CHECK(crc32c::Combine(crc32c::Value("1234", 4), crc32c::Value("56789", 5), 5) == 0xE3069283u);
  CHECK(crc32c::Combine(0xE3069283u, 0, 0) == 0xE3069283u);
  // Lengths far beyond memory: joining is associative, whatever the grouping.
  const uint32_t a = 0x12345678u, b = 0x9abcdef0u, c = 0x0f1e2d3cu;
  const uint64_t lb = (uint64_t{1} << 33) + 5, lc = (uint64_t{1} << 61) + 12345;
  CHECK(crc32c::Combine(crc32c::Combine(a, b, lb), c, lc) == crc32c::Combine(a, crc32c::Combine(b, c, lc), lb + lc));
}

TEST_CASE("crc32c: TFRecord masking") {
  CHECK(crc32c::Mask(0xE3069283u) == 0xC78AB0E5u);
  // The masked CRCs of TensorFlow's golden record below: of the 8 length
  // bytes of 5, of "12345", and of nothing (an empty record's data).
  const char five[8] = {5, 0, 0, 0, 0, 0, 0, 0};
  CHECK(crc32c::Mask(crc32c::Value(five, 8)) == 0x3E04B2EAu);
  CHECK(crc32c::Mask(crc32c::Value("12345", 5)) == 0xE8ED1C7Au);
  CHECK(crc32c::Mask(crc32c::Value("", 0)) == 0xA282EAD8u);
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    CHECK(crc32c::Unmask(crc32c::Mask(crc)) == crc);
    CHECK(crc32c::Mask(crc) != crc);
  }
}

// ---------------------------------------------------------------------------
// TFRecord writer and reader

// tf.io.TFRecordWriter's file for the one record b"12345", as printed by
// PyImageSearch's single_tf_record.py (a TensorFlow tutorial) and derived again
// here by the format with a bitwise CRC-32C: 5 as uint64 LE, masked CRC of
// those 8 bytes, the data, masked CRC of the data.
const std::string kTensorFlowGolden("\x05\x00\x00\x00\x00\x00\x00\x00\xea\xb2\x04>12345z\x1c\xed\xe8", 21);

TEST_CASE("records: the writer writes TensorFlow's bytes, the reader reads them back") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("golden.tfrecord");
  WriteRecords(path, {"12345"}, Compression::kNone);
  CHECK(ReadBytes(path) == kTensorFlowGolden);
  CHECK(Frame("12345") == kTensorFlowGolden);

  // An empty record: length 0, its CRC, no data, the masked CRC of nothing.
  WriteRecords(path, {""}, Compression::kNone);
  CHECK(ReadBytes(path) == std::string("\0\0\0\0\0\0\0\0\x29\x03\x98\x07\xd8\xea\x82\xa2", 16));

  WriteBytes(path, kTensorFlowGolden + Frame("") + Frame("second"));
  Status end;
  CHECK(ReadAll(path, Compression::kNone, &end) == std::vector<std::string>{"12345", "", "second"});
  CHECK(errors::IsOutOfRange(end));
}

TEST_CASE("records: round trips, plain, GZIP and ZLIB, at any buffer size") {
  test::TempDir dir("af_records_test");
  const std::vector<std::string> records = SomeRecords();
  std::string plain_bytes;
  for (const auto& r : records) plain_bytes += Frame(r);
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    for (size_t buffer : {size_t{7}, size_t{4096}, size_t{256 << 10}}) {
      INFO("compression '" << CompressionName(c) << "', buffer " << buffer);
      const std::string path = dir.File("round_trip.tfrecord");
      WriteRecords(path, records, c, buffer);
      const std::string bytes = ReadBytes(path);
      // What is inside is the plain file, as zlib itself inflates it.
      if (c == Compression::kNone) CHECK(bytes == plain_bytes);
      if (c == Compression::kGzip) {
        CHECK(bytes.substr(0, 2) == "\x1f\x8b");
        CHECK(Inflate(bytes, true) == plain_bytes);
        CHECK(bytes.size() < plain_bytes.size());
      }
      if (c == Compression::kZlib) CHECK(Inflate(bytes, false) == plain_bytes);
      Status end;
      const std::vector<std::string> back = ReadAll(path, c, &end, buffer);
      INFO(end.ToString());
      CHECK(errors::IsOutOfRange(end));
      CHECK(back == records);
    }
  }
}

TEST_CASE("records: files compressed by zlib itself read back, concatenated gzip streams as one") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("zlib.tfrecord");
  const std::string a = Frame("first") + Frame(std::string(70000, 'q')), b = Frame("last");
  Status end;
  WriteBytes(path, Deflate(a + b, true));
  CHECK(ReadAll(path, Compression::kGzip, &end).size() == 3);
  CHECK(errors::IsOutOfRange(end));
  WriteBytes(path, Deflate(a + b, false));
  CHECK(ReadAll(path, Compression::kZlib, &end).size() == 3);
  CHECK(errors::IsOutOfRange(end));
  WriteBytes(path, Deflate(a, true) + Deflate(b, true));  // `cat a.gz b.gz`
  CHECK(ReadAll(path, Compression::kGzip, &end) == std::vector<std::string>{"first", std::string(70000, 'q'), "last"});
  CHECK(errors::IsOutOfRange(end));
}

TEST_CASE("records: Flush hands the records written so far to the file") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("flushed.tfrecord");
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    INFO("compression '" << CompressionName(c) << "'");
    RecordWriterOptions options;
    options.compression = c;
    std::unique_ptr<RecordWriter> writer;
    REQUIRE(RecordWriter::Create(path, options, &writer).ok());
    REQUIRE(writer->WriteRecord("one").ok());
    REQUIRE(writer->WriteRecord("two").ok());
    REQUIRE(writer->Flush().ok());
    std::unique_ptr<RecordReader> reader;
    REQUIRE(RecordReader::Open(path, c, &reader).ok());
    std::string record;
    REQUIRE(reader->ReadRecord(&record).ok());
    CHECK(record == "one");
    REQUIRE(reader->ReadRecord(&record).ok());
    CHECK(record == "two");
    REQUIRE(writer->Close().ok());
    CHECK(writer->Close().ok());  // closing twice is closing once
    CHECK(writer->WriteRecord("three").code() == Code::kFailedPrecondition);
  }
}

TEST_CASE("records: an empty file has no records; a missing one is NotFound naming it") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("empty.tfrecord");
  WriteBytes(path, "");
  Status end;
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    CHECK(ReadAll(path, c, &end).empty());
    CHECK(errors::IsOutOfRange(end));
  }
  WriteRecords(path, {}, Compression::kGzip);  // a gzip stream of nothing
  CHECK(ReadAll(path, Compression::kGzip, &end).empty());
  CHECK(errors::IsOutOfRange(end));
  std::unique_ptr<RecordReader> reader;
  const Status s = RecordReader::Open(dir.File("missing.tfrecord"), Compression::kNone, &reader);
  CHECK(s.code() == Code::kNotFound);
  CHECK_THAT(s.message(), Contains("missing.tfrecord"));
  std::unique_ptr<RecordWriter> writer;
  const Status w = RecordWriter::Create(dir.File("no/such/dir.tfrecord"), {}, &writer);
  CHECK(w.code() == Code::kNotFound);
  CHECK_THAT(w.message(), Contains("no/such/dir.tfrecord"));
}

TEST_CASE("records: damage is DataLoss naming the file and the record's offset, and stays") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("damaged.tfrecord");
  const std::string first = Frame("first"), second = Frame("the second record");
  const std::string good = first + second;
  const std::string offset = "offset " + std::to_string(first.size());
  struct Case {
    const char* name;
    std::string bytes;
    const char* what;
  };
  std::string bad_length = good, bad_length_crc = good, bad_data = good, bad_data_crc = good;
  bad_length[first.size()] ^= 1;                  // the length no longer matches its CRC
  bad_length_crc[first.size() + 9] ^= 0x40;       // nor does the CRC
  bad_data[first.size() + 12 + 3] ^= 0x10;        // a data byte
  bad_data_crc[good.size() - 1] ^= 0x80;          // the data CRC
  const std::vector<Case> cases = {
      {"corrupt length", bad_length, "length CRC mismatch"},
      {"corrupt length crc", bad_length_crc, "length CRC mismatch"},
      {"corrupt data", bad_data, "data CRC mismatch"},
      {"corrupt data crc", bad_data_crc, "data CRC mismatch"},
      {"truncated length", good.substr(0, first.size() + 5), "truncated record"},
      {"truncated length crc", good.substr(0, first.size() + 10), "truncated record"},
      {"truncated data", good.substr(0, first.size() + 12 + 4), "truncated record"},
      {"truncated data crc", good.substr(0, good.size() - 1), "truncated record"},
  };
  for (const auto& c : cases) {
    for (Compression comp : {Compression::kNone, Compression::kGzip}) {
      INFO(c.name << ", compression '" << CompressionName(comp) << "'");
      WriteBytes(path, comp == Compression::kNone ? c.bytes : Deflate(c.bytes, true));
      std::unique_ptr<RecordReader> reader;
      REQUIRE(RecordReader::Open(path, comp, &reader).ok());
      std::string record;
      REQUIRE(reader->ReadRecord(&record).ok());
      CHECK(record == "first");
      const Status s = reader->ReadRecord(&record);
      INFO(s.ToString());
      CHECK(s.code() == Code::kDataLoss);
      CHECK_THAT(s.message(), Contains(path) && Contains(offset) && Contains(c.what));
      CHECK(record.empty());
      CHECK(reader->ReadRecord(&record) == s);  // sticky
    }
  }
  // A partial length at the very start is damage too, not an empty file.
  WriteBytes(path, good.substr(0, 3));
  Status end;
  ReadAll(path, Compression::kNone, &end);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains("offset 0") && Contains(path));
  // A length with a valid CRC: over max_record_bytes it is refused before
  // anything is read (bounded_input_test.cpp); under it, past the end of the
  // file, it allocates no more than the file holds and is a truncated record.
  auto header = [](uint64_t length) {
    std::string h;
    for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>(length >> (8 * i)));
    const uint32_t crc = crc32c::Mask(crc32c::Value(h.data(), 8));
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(crc >> (8 * i)));
    return h;
  };
  WriteBytes(path, header(0x0fffffffffffffffull) + "some data");
  ReadAll(path, Compression::kNone, &end);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains("max_record_bytes") && Contains("offset 0") && Contains(path));
  WriteBytes(path, header(uint64_t{200} << 20) + "some data");
  ReadAll(path, Compression::kNone, &end);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains("truncated record") && Contains("offset 0"));
}

TEST_CASE("records: a damaged compressed stream is DataLoss naming the file") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("damaged.tfrecord.gz");
  const std::string gz = Deflate(Frame("one") + Frame(std::string(5000, 'z')), true);
  Status end;
  WriteBytes(path, gz.substr(0, gz.size() - 6));  // the trailer cut short
  ReadAll(path, Compression::kGzip, &end);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains(path) && Contains("truncated"));
  std::string bad = gz;
  bad[bad.size() - 3] ^= 0x55;  // the length in the trailer
  WriteBytes(path, bad);
  ReadAll(path, Compression::kGzip, &end);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains(path) && Contains("GZIP"));
  WriteBytes(path, Frame("plain, not gzip"));
  ReadAll(path, Compression::kGzip, &end);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains(path) && Contains("compressed offset"));
}

TEST_CASE("records: compression types are TensorFlow's names") {
  Compression c;
  CHECK((ParseCompression("", &c).ok() && c == Compression::kNone));
  CHECK((ParseCompression("GZIP", &c).ok() && c == Compression::kGzip));
  CHECK((ParseCompression("ZLIB", &c).ok() && c == Compression::kZlib));
  const Status s = ParseCompression("gzip", &c);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("'gzip'"));
  RecordWriterOptions options;
  CHECK(RecordWriterOptions::FromCompressionType("SNAPPY", &options).code() == Code::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// FileRecordReader: TFRecord, text lines, fixed-length records

TEST_CASE("records: the TFRecord file reader keys records by file and byte offset, as TensorFlow") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("keys.tfrecord");
  for (Compression c : {Compression::kNone, Compression::kZlib}) {
    WriteRecords(path, {"a", "bcd", ""}, c);
    std::unique_ptr<FileRecordReader> reader;
    REQUIRE(TFRecordFileReader::Create({c}, &reader).ok());
    std::string key, value;
    CHECK(reader->ReadRecord(&key, &value).code() == Code::kFailedPrecondition);  // no file open
    Status end;
    const auto pairs = ReadPairs(reader.get(), path, &end);
    CHECK(errors::IsOutOfRange(end));
    REQUIRE(pairs.size() == 3);
    CHECK(pairs[0] == std::make_pair(path + ":0", std::string("a")));
    CHECK(pairs[1] == std::make_pair(path + ":17", std::string("bcd")));
    CHECK(pairs[2] == std::make_pair(path + ":36", std::string("")));
    CHECK(reader->ReadRecord(&key, &value).code() == Code::kOutOfRange);  // and stays at the end
    CHECK(reader->filename() == path);
    // Opening again starts over.
    CHECK(ReadPairs(reader.get(), path, &end).size() == 3);
  }
}

TEST_CASE("records: text lines, with header lines skipped, CRLF and a last line without newline") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("lines.csv");
  WriteBytes(path, "name,value\r\nalpha,1\r\n\nbeta,2\r\r\ngamma\rdelta,3");
  std::unique_ptr<FileRecordReader> reader;
  REQUIRE(TextLineReader::Create({1, Compression::kNone}, &reader).ok());
  Status end;
  auto pairs = ReadPairs(reader.get(), path, &end);
  CHECK(errors::IsOutOfRange(end));
  const std::vector<std::pair<std::string, std::string>> want = {{path + ":2", "alpha,1"},
                                                                 {path + ":3", ""},
                                                                 {path + ":4", "beta,2\r"},
                                                                 {path + ":5", "gamma\rdelta,3"}};
  CHECK(pairs == want);
  // The same through gzip and zlib, in small buffers.
  for (bool gzip : {true, false}) {
    const std::string gz = dir.File("lines.csv.z");
    WriteBytes(gz, Deflate(ReadBytes(path), gzip));
    REQUIRE(TextLineReader::Create({1, gzip ? Compression::kGzip : Compression::kZlib}, &reader).ok());
    pairs = ReadPairs(reader.get(), gz, &end);
    CHECK(errors::IsOutOfRange(end));
    REQUIRE(pairs.size() == 4);
    CHECK(pairs[3] == std::make_pair(gz + ":5", std::string("gamma\rdelta,3")));
  }
  // A trailing newline makes no empty last line; a lone "\r" at the end is no line.
  WriteBytes(path, "x\ny\n");
  REQUIRE(TextLineReader::Create({}, &reader).ok());
  CHECK(ReadPairs(reader.get(), path, &end).size() == 2);
  WriteBytes(path, "x\n\r");
  CHECK(ReadPairs(reader.get(), path, &end).size() == 1);
  // Fewer lines than the header: no records, no error.
  REQUIRE(TextLineReader::Create({5, Compression::kNone}, &reader).ok());
  WriteBytes(path, "h1\nh2\n");
  CHECK(ReadPairs(reader.get(), path, &end).empty());
  CHECK(errors::IsOutOfRange(end));
  CHECK(TextLineReader::Create({-1, Compression::kNone}, &reader).code() == Code::kInvalidArgument);
  WriteBytes(path, "");
  REQUIRE(TextLineReader::Create({}, &reader).ok());
  CHECK(ReadPairs(reader.get(), path, &end).empty());
  CHECK(errors::IsOutOfRange(end));
}

TEST_CASE("records: long lines cross buffer boundaries") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("long.txt");
  const std::string long_line(700000, 'L');
  WriteBytes(path, "short\n" + long_line + "\r\nend");
  std::unique_ptr<BufferedInputStream> in;
  REQUIRE(BufferedInputStream::Open(path, Compression::kNone, &in, 1000).ok());
  std::string line;
  REQUIRE(in->ReadLine(&line).ok());
  CHECK(line == "short");
  REQUIRE(in->ReadLine(&line).ok());
  CHECK(line == long_line);
  REQUIRE(in->ReadLine(&line).ok());
  CHECK(line == "end");
  CHECK(in->Tell() == 6 + long_line.size() + 2 + 3);
  CHECK(errors::IsOutOfRange(in->ReadLine(&line)));
}

/// `n` bytes 0, 1, 2, ... (mod 256) as text-free data.
std::string Counting(size_t n, int from = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((from + i) % 256);
  return s;
}

TEST_CASE("records: fixed-length records between a header and a footer, keyed by index") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("fixed.bin");
  const std::string header = "HDR", footer = "FOOT";
  const std::string body = Counting(5 * 4);
  WriteBytes(path, header + body + footer);
  std::unique_ptr<FileRecordReader> reader;
  REQUIRE(FixedLengthRecordReader::Create({3, 4, 4, 0, Compression::kNone}, &reader).ok());
  Status end;
  auto pairs = ReadPairs(reader.get(), path, &end);
  INFO(end.ToString());
  CHECK(errors::IsOutOfRange(end));
  REQUIRE(pairs.size() == 5);
  for (size_t k = 0; k < 5; ++k) {
    CHECK(pairs[k].first == path + ":" + std::to_string(k));
    CHECK(pairs[k].second == body.substr(4 * k, 4));
  }
  // The same file gzip- and zlib-compressed (the encoding attr).
  for (bool gzip : {true, false}) {
    const std::string gz = dir.File("fixed.bin.z");
    WriteBytes(gz, Deflate(header + body + footer, gzip));
    REQUIRE(FixedLengthRecordReader::Create({3, 4, 4, 0, gzip ? Compression::kGzip : Compression::kZlib}, &reader)
                .ok());
    const auto zpairs = ReadPairs(reader.get(), gz, &end);
    CHECK(errors::IsOutOfRange(end));
    REQUIRE(zpairs.size() == 5);
    CHECK(zpairs[4].second == body.substr(16, 4));
  }
  // A header and footer and nothing between: no records.
  WriteBytes(path, header + footer);
  REQUIRE(FixedLengthRecordReader::Create({3, 4, 4, 0, Compression::kNone}, &reader).ok());
  CHECK(ReadPairs(reader.get(), path, &end).empty());
  CHECK(errors::IsOutOfRange(end));
}

TEST_CASE("records: fixed-length hops: overlapping windows and gaps, as TensorFlow's hop_bytes") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("hops.bin");
  std::unique_ptr<FileRecordReader> reader;
  Status end;
  // Windows of 4 every 2 bytes over 10 bytes: at 0, 2, 4, 6.
  WriteBytes(path, "H" + Counting(10) + "F");
  REQUIRE(FixedLengthRecordReader::Create({1, 4, 1, 2, Compression::kNone}, &reader).ok());
  auto pairs = ReadPairs(reader.get(), path, &end);
  INFO(end.ToString());
  CHECK(errors::IsOutOfRange(end));
  REQUIRE(pairs.size() == 4);
  for (size_t k = 0; k < 4; ++k) CHECK(pairs[k].second == Counting(4, static_cast<int>(2 * k)));
  // Records of 2 every 5 bytes (3-byte gaps skipped); the file may end in a gap.
  WriteBytes(path, Counting(13));
  REQUIRE(FixedLengthRecordReader::Create({0, 2, 0, 5, Compression::kNone}, &reader).ok());
  pairs = ReadPairs(reader.get(), path, &end);
  CHECK(errors::IsOutOfRange(end));
  REQUIRE(pairs.size() == 3);
  CHECK(pairs[1].second == Counting(2, 5));
  CHECK(pairs[2].second == Counting(2, 10));
  CHECK(FixedLengthRecordReader::Create({0, 0, 0, 0, Compression::kNone}, &reader).code() ==
        Code::kInvalidArgument);
  CHECK(FixedLengthRecordReader::Create({0, 4, -1, 0, Compression::kNone}, &reader).code() ==
        Code::kInvalidArgument);
  CHECK(FixedLengthRecordReader::Create({0, 4, 0, -2, Compression::kNone}, &reader).code() ==
        Code::kInvalidArgument);
}

TEST_CASE("records: a truncated last fixed-length record is DataLoss naming file and offset") {
  test::TempDir dir("af_records_test");
  const std::string path = dir.File("truncated.bin");
  std::unique_ptr<FileRecordReader> reader;
  Status end;
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    INFO("compression '" << CompressionName(c) << "'");
    const std::string bytes = "HDR" + Counting(4 * 3 + 3) + "FT";  // 3 records, 3 bytes of a 4th, footer
    WriteBytes(path, c == Compression::kNone ? bytes : Deflate(bytes, true));
    REQUIRE(FixedLengthRecordReader::Create({3, 4, 2, 0, c}, &reader).ok());
    const auto pairs = ReadPairs(reader.get(), path, &end);
    CHECK(pairs.size() == 3);
    CHECK(end.code() == Code::kDataLoss);
    CHECK_THAT(end.message(), Contains(path) && Contains("offset 15") && Contains("3 bytes"));
    std::string key, value;
    CHECK(reader->ReadRecord(&key, &value) == end);  // sticky
  }
  // Overlapping windows that do not end on a hop.
  WriteBytes(path, Counting(11));
  REQUIRE(FixedLengthRecordReader::Create({0, 4, 0, 2, Compression::kNone}, &reader).ok());
  CHECK(ReadPairs(reader.get(), path, &end).size() == 4);
  CHECK(end.code() == Code::kDataLoss);
  CHECK_THAT(end.message(), Contains("offset 10"));
  // Shorter than the header.
  WriteBytes(path, "HD");
  REQUIRE(FixedLengthRecordReader::Create({3, 4, 0, 0, Compression::kNone}, &reader).ok());
  CHECK(reader->Open(path).code() == Code::kDataLoss);
}
