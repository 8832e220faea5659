// `actorflow records`: TFRecord files from the command line (core/io).
//
//   actorflow records convert-idx --images F --labels F --out F.tfrecord [--compression GZIP|ZLIB]
//   actorflow records convert-csv --in F.csv --out F.tfrecord [--skip-header] [--compression GZIP|ZLIB]
//   actorflow records count [--compression C] FILE...
//   actorflow records print [--compression C] [--limit N] [--hex] FILE
//
// convert-idx writes one record per example of an IDX image file and its
// label file (MNIST, Fashion-MNIST; gzip-compressed or not): 1 label byte,
// then the image's bytes (784 for 28x28), so that DecodeRaw(uint8) reads it.
// convert-csv writes one record per line of a text file (gzip or not; CR
// before LF dropped, blank lines skipped), the first line skipped with
// --skip-header. count prints "N FILE" per file (and "N total" for several);
// print writes each record on a line, escaped (\n, \t, \\, \xHH) or in hex.
// A TFRecord file read by count or print is taken as gzip-compressed when it
// starts as gzip does, as plain otherwise; --compression NONE|GZIP|ZLIB says.
//
// Exit status: 0 done, 2 for a usage error or a file that cannot be read or
// written (the message names the file, and the offset of a damaged record):
// every error a reader returns (DataLoss for a damaged, truncated or
// over-long record, NotFound, ...) is one. 1 when memory runs out
// (std::bad_alloc becomes RESOURCE_EXHAUSTED on stderr), as for `run`.
#pragma once

#include <string>
#include <vector>

namespace actorflow {

/// Runs `actorflow records ARGS...`; returns the exit status.
int RecordsCommand(const std::vector<std::string>& argv);

}  // namespace actorflow
