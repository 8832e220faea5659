// The parsing ops (ops/parsing/): DecodeCSV, DecodeRaw and StringToNumber run
// in a Session, with TensorFlow's definitions, defaults and errors.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "actorflow/client/ops/parsing_ops.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "actorflow/core/io/text_line_reader.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "test_util.hpp"

using namespace actorflow;
using actorflow::test::MakeTensor;
using actorflow::test::RunOk;
using actorflow::test::RunStatus;
using actorflow::test::Strings;
using actorflow::test::Values;
using Catch::Matchers::Contains;

namespace {

/// An empty vector default: the field is required.
template <class T>
Tensor Required() {
  return Tensor(DataTypeToEnum<T>::value, TensorShape{0});
}

/// The status of running DecodeCSV over `records` with `defaults` and `options`.
Status DecodeCSVStatus(const std::vector<std::string>& records, const std::vector<Input>& defaults,
                       const ops::DecodeCSVOptions& options = {}) {
  Scope root = Scope::NewRootScope();
  auto out = ops::DecodeCSV(root, Strings(records), defaults, options);
  return RunStatus(root, out);
}

}  // namespace

TEST_CASE("parsing ops: TensorFlow's definitions and defaults") {
  const OpRegistration* csv = OpRegistry::Global()->Find("DecodeCSV");
  REQUIRE(csv != nullptr);
  std::map<std::string, std::string> defaults;
  for (const auto& a : csv->op_def.attr())
    if (a.has_default_value()) defaults[a.name()] = AttrValueString(a.default_value());
  CHECK(defaults.size() == 4);
  CHECK(csv->op_def.attr(0).name() == "OUT_TYPE");
  CHECK(csv->op_def.input_arg(1).type_list_attr() == "OUT_TYPE");
  const OpRegistration* raw = OpRegistry::Global()->Find("DecodeRaw");
  REQUIRE(raw != nullptr);
  CHECK(raw->op_def.attr(0).allowed_values().list().type_size() == 13);
  CHECK(raw->op_def.attr(1).default_value().b());
  const OpRegistration* s2n = OpRegistry::Global()->Find("StringToNumber");
  REQUIRE(s2n != nullptr);
  CHECK(s2n->op_def.attr(0).default_value().type() == static_cast<proto::DataType>(DT_FLOAT));
}

TEST_CASE("DecodeCSV: columns by type, defaults for empty fields, quotes") {
  Scope root = Scope::NewRootScope();
  auto cols = ops::DecodeCSV(root, Strings({"1,2.5,a,10", ",,,", "3,-1e3,\"c,\"\"d\"\"\",", "4,0.25,,-9000000000"}),
                             {7, 0.5f, std::string("?"), int64_t{-1}});
  REQUIRE(cols.size() == 4);
  const auto out = RunOk(root, cols);
  CHECK(Values<int32_t>(out[0]) == std::vector<int32_t>{1, 7, 3, 4});
  CHECK(Values<float>(out[1]) == std::vector<float>{2.5f, 0.5f, -1000.f, 0.25f});
  CHECK(Values<std::string>(out[2]) == std::vector<std::string>{"a", "?", "c,\"d\"", "?"});
  CHECK(Values<int64_t>(out[3]) == std::vector<int64_t>{10, -1, -1, -9000000000});
}

TEST_CASE("DecodeCSV: the shape of records, doubles, na_value, delimiters, select_cols") {
  {
    Scope root = Scope::NewRootScope();
    auto records = MakeTensor<std::string>({"1.5;NA", "NA;x", "2;\"q\""}, TensorShape{3, 1});
    ops::DecodeCSVOptions options;
    options.field_delim = ";";
    options.na_value = "NA";
    options.use_quote_delim = false;  // quotes are data
    auto cols = ops::DecodeCSV(root, records, {0.0, std::string("none")}, options);
    const auto out = RunOk(root, cols);
    CHECK(out[0].shape() == TensorShape{3, 1});
    CHECK(Values<double>(out[0]) == std::vector<double>{1.5, 0.0, 2.0});
    CHECK(Values<std::string>(out[1]) == std::vector<std::string>{"none", "x", "\"q\""});
  }
  {
    Scope root = Scope::NewRootScope();
    ops::DecodeCSVOptions options;
    options.select_cols = {0, 2};
    auto cols = ops::DecodeCSV(root, Strings({"a,skipped,3,more,fields", "b,\"x\",4"}),
                               {Required<std::string>(), Required<int32_t>()}, options);
    const auto out = RunOk(root, cols);
    CHECK(Values<std::string>(out[0]) == std::vector<std::string>{"a", "b"});
    CHECK(Values<int32_t>(out[1]) == std::vector<int32_t>{3, 4});
  }
}

TEST_CASE("DecodeCSV: bad fields are InvalidArgument naming the record and the field") {
  Status s = DecodeCSVStatus({"1,2", "x1,3"}, {0, 0});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("Field 0 in record 1") && Contains("int32") && Contains("'x1'"));
  s = DecodeCSVStatus({"1,2", ",3"}, {Required<int32_t>(), 0});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("Field 0 is required but missing in record 1"));
  s = DecodeCSVStatus({"1,2,3"}, {0, 0});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("Expect 2 fields but have 3 in record 0"));
  s = DecodeCSVStatus({"1,2", "2.5,1"}, {0.f, 1e30});
  CHECK(s.code() == Code::kOk);
  s = DecodeCSVStatus({"1,2", "3,1e999x"}, {0.f, 0.0});
  CHECK_THAT(s.message(), Contains("Field 1 in record 1") && Contains("double"));
  s = DecodeCSVStatus({"\"abc\"d,1"}, {std::string(), 0});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("record 0"));
  s = DecodeCSVStatus({"ab\"c,1"}, {std::string(), 0});
  CHECK_THAT(s.message(), Contains("Unquoted fields cannot have quotes") && Contains("record 0"));
  s = DecodeCSVStatus({"2147483648,1"}, {0, 0});  // int32 overflow
  CHECK_THAT(s.message(), Contains("Field 0 in record 0"));
  ops::DecodeCSVOptions bad;
  bad.field_delim = "::";
  s = DecodeCSVStatus({"1"}, {0}, bad);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("field_delim"));
  // A default that is not a scalar or a vector of at most one value: refused when the graph is built.
  Scope root = Scope::NewRootScope();
  ops::DecodeCSV(root, Strings({"1"}), {MakeTensor<int32_t>({1, 2}, TensorShape{2})});
  CHECK(root.status().code() == Code::kInvalidArgument);
  CHECK_THAT(root.status().message(), Contains("length-0 or length-1"));
}

TEST_CASE("DecodeRaw: little and big endian, any shape, bytes as uint8") {
  auto run = [](const Tensor& bytes, DataType type, bool little) {
    Scope root = Scope::NewRootScope();
    auto out = ops::DecodeRaw(root, bytes, type, little);
    return RunOk(root, {out})[0];
  };
  const Tensor two = Strings({std::string("\x01\x00\x00\x00\x00\x01\x00\x00", 8),
                              std::string("\xff\xff\xff\xff\x10\x00\x00\x00", 8)});
  Tensor le = run(two, DT_INT32, true);
  CHECK(le.shape() == TensorShape{2, 2});
  CHECK(Values<int32_t>(le) == std::vector<int32_t>{1, 256, -1, 16});
  Tensor be = run(two, DT_INT32, false);
  CHECK(Values<int32_t>(be) == std::vector<int32_t>{16777216, 65536, -1, 268435456});
  CHECK(Values<uint16_t>(run(two, DT_UINT16, false)) ==
        std::vector<uint16_t>{256, 0, 1, 0, 65535, 65535, 4096, 0});
  Tensor bytes = run(two, DT_UINT8, false);  // one-byte types: no order to change
  CHECK(bytes.shape() == TensorShape{2, 8});
  CHECK(Values<uint8_t>(bytes)[8] == 255);
  // Floats: 1.5f little-endian is 00 00 c0 3f.
  const float f = run(Strings({std::string("\x00\x00\xc0\x3f", 4)}), DT_FLOAT, true).data<float>()[0];
  CHECK(f == 1.5f);
  CHECK(run(Strings({std::string("\x3f\xc0\x00\x00", 4)}), DT_FLOAT, false).data<float>()[0] == 1.5f);
  // A [2, 1] tensor of strings gives [2, 1, n]; empty strings a last dimension of 0.
  CHECK(run(MakeTensor<std::string>({"ab", "cd"}, TensorShape{2, 1}), DT_INT8, true).shape() ==
        TensorShape{2, 1, 2});
  CHECK(run(Strings({"", ""}), DT_DOUBLE, true).shape() == TensorShape{2, 0});
  CHECK(Values<bool>(run(Strings({std::string("\x00\x02\x01", 3)}), DT_BOOL, true)) ==
        std::vector<bool>{false, true, true});
}

TEST_CASE("DecodeRaw: a length that is no multiple of the type, or strings of different lengths") {
  Scope root = Scope::NewRootScope();
  auto out = ops::DecodeRaw(root, Strings({"1234567"}), DT_FLOAT);
  Status s = RunStatus(root, {out});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("length 7 that is not a multiple of 4"));
  Scope root2 = Scope::NewRootScope();
  out = ops::DecodeRaw(root2, Strings({"1234", "12345678"}), DT_INT32);
  s = RunStatus(root2, {out});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("same size") && Contains("element 1"));
}

TEST_CASE("StringToNumber: floats, doubles and integers as TensorFlow reads them") {
  auto run = [](const std::vector<std::string>& text, DataType type) {
    Scope root = Scope::NewRootScope();
    auto out = ops::StringToNumber(root, Strings(text), type);
    return RunOk(root, {out})[0];
  };
  const auto floats = Values<float>(run({"1.5", " -2 ", "1e3", "+.25", "INF", "-infinity", "1e39"}, DT_FLOAT));
  CHECK(floats[0] == 1.5f);
  CHECK(floats[1] == -2.f);
  CHECK(floats[2] == 1000.f);
  CHECK(floats[3] == 0.25f);
  CHECK(floats[4] == std::numeric_limits<float>::infinity());
  CHECK(floats[5] == -std::numeric_limits<float>::infinity());
  CHECK(floats[6] == std::numeric_limits<float>::infinity());  // too large: inf
  CHECK(std::isnan(run({"nan"}, DT_FLOAT).data<float>()[0]));
  CHECK(run({"0.1"}, DT_DOUBLE).data<double>()[0] == 0.1);
  CHECK(Values<int32_t>(run({"42", "-2147483648", "+7"}, DT_INT32)) == std::vector<int32_t>{42, -2147483648, 7});
  CHECK(Values<int64_t>(run({"9223372036854775807"}, DT_INT64)) ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::max()});
}

TEST_CASE("StringToNumber: text that is no number is InvalidArgument quoting it") {
  const std::vector<std::pair<std::string, DataType>> bad = {
      {"12abc", DT_FLOAT}, {"", DT_FLOAT}, {"0x10", DT_FLOAT},       {"1.5", DT_INT32},
      {"2147483648", DT_INT32}, {"+-1", DT_INT64}, {"1 2", DT_DOUBLE}, {"9223372036854775808", DT_INT64}};
  for (const auto& [text, type] : bad) {
    INFO("'" << text << "' as " << DataTypeString(type));
    Scope root = Scope::NewRootScope();
    auto out = ops::StringToNumber(root, Strings({"1", text}), type);
    const Status s = RunStatus(root, {out});
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Contains("could not correctly convert string: '" + text + "'") && Contains("element 1"));
  }
}

TEST_CASE("parsing ops decode what the file readers read: TFRecords by DecodeRaw, CSV lines by DecodeCSV") {
  const std::string path = "/tmp/af_parsing_ops_test_" + std::to_string(::getpid());
  // Records as `actorflow records convert-idx` writes them: a label byte, then the pixels.
  std::unique_ptr<io::RecordWriter> writer;
  REQUIRE(io::RecordWriter::Create(path, {}, &writer).ok());
  REQUIRE(writer->WriteRecord(std::string("\x03\x00\x80\xff\x01", 5)).ok());
  REQUIRE(writer->WriteRecord(std::string("\x08\x10\x20\x30\x40", 5)).ok());
  REQUIRE(writer->Close().ok());
  std::unique_ptr<io::FileRecordReader> reader;
  REQUIRE(io::TFRecordFileReader::Create({}, &reader).ok());
  REQUIRE(reader->Open(path).ok());
  std::vector<std::string> records;
  std::string key, value;
  while (reader->ReadRecord(&key, &value).ok()) records.push_back(value);
  REQUIRE(records.size() == 2);
  Scope root = Scope::NewRootScope();
  auto bytes = ops::DecodeRaw(root, Strings(records), DT_UINT8);
  Tensor decoded = RunOk(root, {bytes})[0];
  CHECK(decoded.shape() == TensorShape{2, 5});
  CHECK(Values<uint8_t>(decoded) == std::vector<uint8_t>{3, 0, 128, 255, 1, 8, 16, 32, 48, 64});

  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fputs("x,y\r\n1.5,2\r\n-3,4\r\n", f);
  std::fclose(f);
  REQUIRE(io::TextLineReader::Create({1, io::Compression::kNone}, &reader).ok());
  REQUIRE(reader->Open(path).ok());
  std::vector<std::string> lines;
  while (reader->ReadRecord(&key, &value).ok()) lines.push_back(value);
  Scope root2 = Scope::NewRootScope();
  auto cols = ops::DecodeCSV(root2, Strings(lines), {0.f, 0});
  const auto out = RunOk(root2, cols);
  CHECK(Values<float>(out[0]) == std::vector<float>{1.5f, -3.f});
  CHECK(Values<int32_t>(out[1]) == std::vector<int32_t>{2, 4});
  std::remove(path.c_str());
}
