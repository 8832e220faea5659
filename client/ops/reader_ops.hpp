// Builder functions for the reader ops (ops/io/reader_ops.cpp): a reader
// declaration gives a reader handle; a read takes it and a queue of filenames.
//
//   Scope root = Scope::NewRootScope();
//   auto files = ops::FIFOQueue(root, {DT_STRING});
//   auto reader = ops::TFRecordReader(root.WithOpName("reader"), {/*compression_type=*/"GZIP"});
//   auto kv = ops::ReaderRead(root, reader, files);       // kv.key "a.tfrecord:0", kv.value the record
//   auto batch = ops::ReaderReadUpTo(root, reader, files, int64_t{32});
//
// Reads dequeue the next filename when a file is done and fail with
// OutOfRange once the queue is closed and empty (ops/io/reader_resource.hpp).
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

/// container/shared_name as for queues: shared_name "" makes the reader the
/// session's own.
struct ReaderOptions {
  std::string container;
  std::string shared_name;
};

/// max_record_bytes (an actorflow extension, set in the node only when not 0):
/// the longest record, line or fixed-length record plus footer the reader
/// reads; 0 leaves the op's default, io::kDefaultMaxRecordBytes (256 MiB). A
/// longer one in a file fails the read with DataLoss naming file and offset.
struct FileReaderOptions : ReaderOptions {
  int64_t max_record_bytes = 0;
};
struct TFRecordReaderOptions : FileReaderOptions {
  std::string compression_type;  // "", "GZIP" or "ZLIB"
};
struct TextLineReaderOptions : FileReaderOptions {
  int64_t skip_header_lines = 0;
  std::string compression_type;  // an actorflow extension: set in the node only when not ""
};
struct FixedLengthRecordReaderOptions : FileReaderOptions {
  int64_t header_bytes = 0;
  int64_t record_bytes = 0;  // required: > 0
  int64_t footer_bytes = 0;
  int64_t hop_bytes = 0;     // 0: record_bytes
  std::string encoding;      // "", "GZIP" or "ZLIB"
};

Output TFRecordReader(const Scope& s, const TFRecordReaderOptions& o = {});
Output TextLineReader(const Scope& s, const TextLineReaderOptions& o = {});
Output FixedLengthRecordReader(const Scope& s, const FixedLengthRecordReaderOptions& o);
Output IdentityReader(const Scope& s, const ReaderOptions& o = {});

struct ReaderReadOutput {
  Output key, value;  // scalars: "FILENAME:N" and the record
};
ReaderReadOutput ReaderRead(const Scope& s, Input reader, Input queue);
/// keys and values: vectors of up to num_records (an int64 scalar) records of one file.
struct ReaderReadUpToOutput {
  Output keys, values;
};
ReaderReadUpToOutput ReaderReadUpTo(const Scope& s, Input reader, Input queue, Input num_records);
Output ReaderNumRecordsProduced(const Scope& s, Input reader);
Output ReaderNumWorkUnitsCompleted(const Scope& s, Input reader);
Operation ReaderReset(const Scope& s, Input reader);

}  // namespace ops
}  // namespace actorflow
