#include "tools/records_command.hpp"

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorflow/core/io/buffered_input_stream.hpp"
#include "actorflow/core/io/file_input_stream.hpp"
#include "actorflow/core/io/record_reader.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "actorflow/core/status.hpp"

namespace actorflow {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitOutOfMemory = 1;  // as for the other actorflow commands
constexpr int kExitError = 2;

constexpr char kUsage[] = R"(usage:
  actorflow records convert-idx --images F --labels F --out F.tfrecord [--compression GZIP|ZLIB]
  actorflow records convert-csv --in F.csv --out F.tfrecord [--skip-header] [--compression GZIP|ZLIB]
  actorflow records count [--compression NONE|GZIP|ZLIB] FILE...
  actorflow records print [--compression NONE|GZIP|ZLIB] [--limit N] [--hex] FILE

convert-idx  Writes one TFRecord per example of an IDX image file and its label
             file (MNIST, Fashion-MNIST; gzip-compressed or not): the label byte,
             then the image's bytes, so that DecodeRaw(uint8) reads it.
convert-csv  Writes one TFRecord per line of a text file (gzip-compressed or not;
             a CR before the LF dropped, blank lines skipped); --skip-header skips
             the first line.
             --compression GZIP|ZLIB compresses the output file (default: none).
count        Prints "N FILE" for each TFRecord file ("N total" too for several).
print        Prints each record of FILE on its own line, escaped (\n \t \\ \xHH),
             or in hex with --hex; --limit N prints the first N only.
             A file read by count or print is taken as gzip-compressed when it
             starts as gzip does, as plain otherwise; --compression says which.
Exit status: 0 done, 1 out of memory, 2 a usage error or a file that cannot be read
or written (a damaged or truncated record, or one longer than the readers accept,
included: the message names the file and the record's offset).
)";

int Fail(const Status& s) {
  std::cerr << "actorflow records: " << s.ToString() << "\n";
  return kExitError;
}

int UsageError(const Status& s) {
  std::cerr << "actorflow records: " << s.ToString() << "\nRun 'actorflow records help' for usage.\n";
  return kExitError;
}

// The flags of one subcommand: "--flag VALUE" or "--flag=VALUE" for `valued`,
// bare `switches`, anything else not starting with "--" a positional argument.
struct Args {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> switches;
  std::vector<std::string> positional;
  bool help = false;
};

Status ParseArgs(const std::vector<std::string>& argv, const std::vector<std::string>& valued,
                 const std::vector<std::string>& switches, Args* out) {
  auto is = [](const std::vector<std::string>& names, const std::string& name) {
    for (const auto& n : names)
      if (n == name) return true;
    return false;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      out->help = true;
      return Status::OK();
    }
    if (flag.rfind("--", 0) != 0) {
      out->positional.push_back(flag);
      continue;
    }
    if (is(switches, flag)) {
      out->switches[flag] = true;
      continue;
    }
    std::string value;
    const size_t eq = flag.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (!is(valued, flag)) return errors::InvalidArgument("unknown argument '", argv[i], "'");
    if (!inline_value) {
      if (i + 1 >= argv.size()) return errors::InvalidArgument(flag, " needs a value");
      value = argv[++i];
    }
    if (value.empty()) return errors::InvalidArgument(flag, " needs a non-empty value");
    if (out->values.count(flag)) return errors::InvalidArgument(flag, " is given twice");
    out->values[flag] = value;
  }
  return Status::OK();
}

Status Required(const Args& args, const std::string& flag, std::string* out) {
  auto it = args.values.find(flag);
  if (it == args.values.end()) return errors::InvalidArgument(flag, " is required");
  *out = it->second;
  return Status::OK();
}

// --compression for a file written: GZIP or ZLIB (or NONE), none when absent.
Status OutputCompression(const Args& args, io::Compression* out) {
  *out = io::Compression::kNone;
  auto it = args.values.find("--compression");
  if (it == args.values.end() || it->second == "NONE") return Status::OK();
  const Status s = io::ParseCompression(it->second, out);
  if (!s.ok()) return errors::InvalidArgument("--compression expects NONE, GZIP or ZLIB, got '", it->second, "'");
  return Status::OK();
}

// A file's compression: --compression when given, else gzip when it starts
// with gzip's magic bytes (1f 8b), none otherwise.
Status InputCompression(const Args& args, const std::string& path, io::Compression* out) {
  if (args.values.count("--compression")) return OutputCompression(args, out);
  std::unique_ptr<io::FileInputStream> file;
  AF_RETURN_IF_ERROR(io::FileInputStream::Open(path, &file));
  unsigned char magic[2] = {0, 0};
  size_t got = 0;
  AF_RETURN_IF_ERROR(file->Read(magic, 2, &got));
  *out = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b ? io::Compression::kGzip : io::Compression::kNone;
  return Status::OK();
}

// A file read whole or in parts, its compression detected.
Status OpenInput(const std::string& path, std::unique_ptr<io::BufferedInputStream>* out) {
  Args none;
  io::Compression c;
  AF_RETURN_IF_ERROR(InputCompression(none, path, &c));
  return io::BufferedInputStream::Open(path, c, out);
}

// Writes records to `out_path`, removing the file when anything fails.
class OutputFile {
 public:
  Status Create(const std::string& path, io::Compression compression) {
    path_ = path;
    io::RecordWriterOptions options;
    options.compression = compression;
    return io::RecordWriter::Create(path, options, &writer_);
  }
  io::RecordWriter* writer() { return writer_.get(); }
  Status Commit() {
    const Status s = writer_->Close();
    if (s.ok()) committed_ = true;
    return s;
  }
  ~OutputFile() {
    if (writer_ && !committed_) {
      writer_.reset();
      std::remove(path_.c_str());
    }
  }

 private:
  std::string path_;
  std::unique_ptr<io::RecordWriter> writer_;
  bool committed_ = false;
};

// ---------------------------------------------------------------------------
// convert-idx

uint32_t BigEndian32(const std::string& s, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// Reads `n` bytes of an IDX file, DataLoss naming it and `what` when it ends first.
Status ReadIdx(io::BufferedInputStream* in, size_t n, const std::string& what, std::string* out) {
  const Status s = in->ReadNBytes(n, out);
  if (errors::IsOutOfRange(s))
    return errors::DataLoss("'", in->filename(), "' is truncated: it ends at offset ", in->Tell(), " in ", what);
  return s;
}

// What convert-idx and convert-csv were asked for.
struct ConvertArgs {
  std::string images, labels;  // convert-idx
  std::string in;              // convert-csv
  bool skip_header = false;
  std::string out;
  io::Compression compression = io::Compression::kNone;
};

Status ConvertIdx(const ConvertArgs& args, int64_t* written) {
  std::unique_ptr<io::BufferedInputStream> images, labels;
  AF_RETURN_IF_ERROR(OpenInput(args.images, &images));
  AF_RETURN_IF_ERROR(OpenInput(args.labels, &labels));
  std::string image_header, label_header;
  AF_RETURN_IF_ERROR(ReadIdx(images.get(), 16, "its header", &image_header));
  AF_RETURN_IF_ERROR(ReadIdx(labels.get(), 8, "its header", &label_header));
  if (BigEndian32(image_header, 0) != 0x803)
    return errors::InvalidArgument("'", args.images, "' is not an IDX image file (magic 0x00000803: uint8, 3 dims)");
  if (BigEndian32(label_header, 0) != 0x801)
    return errors::InvalidArgument("'", args.labels, "' is not an IDX label file (magic 0x00000801: uint8, 1 dim)");
  const uint32_t n = BigEndian32(image_header, 4), rows = BigEndian32(image_header, 8),
                 cols = BigEndian32(image_header, 12);
  if (BigEndian32(label_header, 4) != n)
    return errors::InvalidArgument("'", args.images, "' has ", n, " images but '", args.labels, "' has ",
                                   BigEndian32(label_header, 4), " labels");
  const uint64_t pixels = uint64_t{rows} * cols;
  if (pixels == 0 || pixels > (uint64_t{1} << 30))
    return errors::InvalidArgument("'", args.images, "' has images of ", rows, "x", cols, " pixels");

  OutputFile out;
  AF_RETURN_IF_ERROR(out.Create(args.out, args.compression));
  std::string record, image;
  for (uint32_t i = 0; i < n; ++i) {
    const std::string what = "example " + std::to_string(i) + " of " + std::to_string(n);
    AF_RETURN_IF_ERROR(ReadIdx(labels.get(), 1, what, &record));  // the label byte first
    AF_RETURN_IF_ERROR(ReadIdx(images.get(), static_cast<size_t>(pixels), what, &image));
    record += image;
    AF_RETURN_IF_ERROR(out.writer()->WriteRecord(record));
  }
  AF_RETURN_IF_ERROR(out.Commit());
  *written = n;
  return Status::OK();
}

Status ConvertCsv(const ConvertArgs& args, int64_t* written) {
  std::unique_ptr<io::BufferedInputStream> in;
  AF_RETURN_IF_ERROR(OpenInput(args.in, &in));
  OutputFile out;
  AF_RETURN_IF_ERROR(out.Create(args.out, args.compression));
  std::string line;
  bool skip = args.skip_header;
  *written = 0;
  for (;;) {
    const Status s = in->ReadLine(&line);
    if (errors::IsOutOfRange(s)) break;
    AF_RETURN_IF_ERROR(s);
    if (skip) {
      skip = false;
      continue;
    }
    if (line.empty()) continue;
    AF_RETURN_IF_ERROR(out.writer()->WriteRecord(line));
    ++*written;
  }
  return out.Commit();
}

Status ParseConvertArgs(bool idx, const std::vector<std::string>& argv, bool* help, ConvertArgs* out) {
  Args args;
  using Names = std::vector<std::string>;
  const Names valued = idx ? Names{"--images", "--labels", "--out", "--compression"}
                           : Names{"--in", "--out", "--compression"};
  AF_RETURN_IF_ERROR(ParseArgs(argv, valued, idx ? Names{} : Names{"--skip-header"}, &args));
  *help = args.help;
  if (args.help) return Status::OK();
  if (!args.positional.empty()) return errors::InvalidArgument("unexpected argument '", args.positional[0], "'");
  if (idx) {
    AF_RETURN_IF_ERROR(Required(args, "--images", &out->images));
    AF_RETURN_IF_ERROR(Required(args, "--labels", &out->labels));
  } else {
    AF_RETURN_IF_ERROR(Required(args, "--in", &out->in));
    out->skip_header = args.switches.count("--skip-header") > 0;
  }
  AF_RETURN_IF_ERROR(Required(args, "--out", &out->out));
  return OutputCompression(args, &out->compression);
}

int ConvertCommand(const std::string& sub, const std::vector<std::string>& argv) {
  const bool idx = sub == "convert-idx";
  ConvertArgs args;
  bool help = false;
  const Status parsed = ParseConvertArgs(idx, argv, &help, &args);
  if (help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  int64_t written = 0;
  const Status s = idx ? ConvertIdx(args, &written) : ConvertCsv(args, &written);
  if (!s.ok()) return Fail(s);
  std::cout << "wrote " << written << " records to " << args.out << "\n";
  return kExitOk;
}

// ---------------------------------------------------------------------------
// count and print

Status OpenRecords(const Args& args, const std::string& path, std::unique_ptr<io::RecordReader>* out) {
  io::Compression c;
  AF_RETURN_IF_ERROR(InputCompression(args, path, &c));
  return io::RecordReader::Open(path, c, out);
}

int CountCommand(const std::vector<std::string>& argv) {
  Args args;
  const Status parsed = ParseArgs(argv, {"--compression"}, {}, &args);
  if (args.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  if (args.positional.empty()) return UsageError(errors::InvalidArgument("count needs at least one FILE"));
  io::Compression c;
  if (const Status s = OutputCompression(args, &c); !s.ok()) return UsageError(s);
  int64_t total = 0;
  for (const std::string& path : args.positional) {
    std::unique_ptr<io::RecordReader> reader;
    Status s = OpenRecords(args, path, &reader);
    if (!s.ok()) return Fail(s);
    int64_t n = 0;
    std::string record;
    while ((s = reader->ReadRecord(&record)).ok()) ++n;
    if (!errors::IsOutOfRange(s)) return Fail(s);
    std::cout << n << " " << path << "\n";
    total += n;
  }
  if (args.positional.size() > 1) std::cout << total << " total\n";
  return kExitOk;
}

std::string Escaped(const std::string& record) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(record.size());
  for (char ch : record) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
  }
  return out;
}

std::string Hex(const std::string& record) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * record.size());
  for (char ch : record) {
    const auto c = static_cast<unsigned char>(ch);
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

int PrintCommand(const std::vector<std::string>& argv) {
  Args args;
  const Status parsed = ParseArgs(argv, {"--compression", "--limit"}, {"--hex"}, &args);
  if (args.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(parsed);
  if (args.positional.size() != 1)
    return UsageError(errors::InvalidArgument("print needs exactly one FILE, got ", args.positional.size()));
  io::Compression c;
  if (const Status s = OutputCompression(args, &c); !s.ok()) return UsageError(s);
  int64_t limit = -1;
  if (auto it = args.values.find("--limit"); it != args.values.end()) {
    const std::string& text = it->second;
    if (text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
      return UsageError(errors::InvalidArgument("--limit expects a count of records, got '", text, "'"));
    limit = std::stoll(text);
  }
  const bool hex = args.switches.count("--hex") > 0;
  std::unique_ptr<io::RecordReader> reader;
  Status s = OpenRecords(args, args.positional[0], &reader);
  if (!s.ok()) return Fail(s);
  std::string record;
  for (int64_t n = 0; limit < 0 || n < limit; ++n) {
    s = reader->ReadRecord(&record);
    if (errors::IsOutOfRange(s)) break;
    if (!s.ok()) {
      std::cout.flush();
      return Fail(s);
    }
    std::cout << (hex ? Hex(record) : Escaped(record)) << '\n';
  }
  return kExitOk;
}

}  // namespace

int RecordsCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::cerr << kUsage;
    return kExitError;
  }
  const std::string& sub = argv[0];
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (sub == "help" || sub == "--help" || sub == "-h") {
    std::cout << kUsage;
    return kExitOk;
  }
  try {
    if (sub == "convert-idx" || sub == "convert-csv") return ConvertCommand(sub, rest);
    if (sub == "count") return CountCommand(rest);
    if (sub == "print") return PrintCommand(rest);
  } catch (const std::bad_alloc& e) {  // a reader or writer that could not allocate
    std::cout.flush();
    Fail(errors::ResourceExhausted("out of memory in records ", sub, " (", e.what(), ")"));
    return kExitOutOfMemory;
  } catch (const std::length_error& e) {
    std::cout.flush();
    Fail(errors::ResourceExhausted("out of memory in records ", sub, " (", e.what(), ")"));
    return kExitOutOfMemory;
  }
  return UsageError(errors::InvalidArgument("unknown records command '", sub, "'"));
}

}  // namespace actorflow
