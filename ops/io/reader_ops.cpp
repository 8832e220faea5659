// Reader ops (TensorFlow's V2 io ops): the reader declarations
// TFRecordReaderV2, TextLineReaderV2, FixedLengthRecordReaderV2 and
// IdentityReaderV2, which output a DT_RESOURCE reader handle, and the
// operations on a handle: ReaderReadV2, ReaderReadUpToV2,
// ReaderNumRecordsProducedV2, ReaderNumWorkUnitsCompletedV2, ReaderResetV2.
//
// A declaration's kernel (shared by the session's plans, being stateful)
// holds its reader's state, a ReaderResource (ops/io/reader_resource.hpp);
// the other ops find it by the handle. Reads are asynchronous: they wait for
// filenames in the queue actor and read files on the compute pool.
//
// Beyond TensorFlow: TextLineReaderV2 takes `compression_type` ("", "GZIP",
// "ZLIB") as TFRecordReaderV2 does; the builder sets it only when not "", so
// graphs that do not use it stay loadable by TensorFlow. The file readers take
// `max_record_bytes` (default io::kDefaultMaxRecordBytes, 256 MiB; > 0): the
// longest record, line or fixed-length window (record_bytes + footer_bytes)
// they read. A longer one in a file is DataLoss naming the file and offset;
// attrs that are negative, overflow or exceed it are InvalidArgument naming
// the node and the attr when the kernel is made (core/io/record_limits.hpp).
// The builder sets it only when asked to, as compression_type.
#include <atomic>

#include "actorflow/core/io/compression.hpp"
#include "actorflow/core/io/fixed_length_record_reader.hpp"
#include "actorflow/core/io/record_limits.hpp"
#include "actorflow/core/io/text_line_reader.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/io/reader_resource.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_READER_COMMON_ATTRS                 \
  .Output("reader_handle: resource")           \
      .Attr("container: string = ''")          \
      .Attr("shared_name: string = ''")        \
      .SetIsStateful()                         \
      .SetShapeFn(shape_fns::Scalar)

// 268435456 is io::kDefaultMaxRecordBytes (the static_assert checks it).
#define AF_MAX_RECORD_BYTES_ATTR "max_record_bytes: int = 268435456"
static_assert(io::kDefaultMaxRecordBytes == 268435456, "the attr default is the reader's");

AF_REGISTER_OP("TFRecordReaderV2")
    .Attr("compression_type: string = ''")
    .Attr(AF_MAX_RECORD_BYTES_ATTR) AF_READER_COMMON_ATTRS
    .Doc("A reader of the records of TFRecord files; keys are 'FILENAME:OFFSET'.");
AF_REGISTER_OP("TextLineReaderV2")
    .Attr("skip_header_lines: int = 0")
    .Attr("compression_type: string = ''")
    .Attr(AF_MAX_RECORD_BYTES_ATTR) AF_READER_COMMON_ATTRS
    .Doc("A reader of the lines of text files; keys are 'FILENAME:LINE' (from 1, header lines counted).");
AF_REGISTER_OP("FixedLengthRecordReaderV2")
    .Attr("header_bytes: int = 0")
    .Attr("record_bytes: int")
    .Attr("footer_bytes: int = 0")
    .Attr("hop_bytes: int = 0")
    .Attr("encoding: string = ''")
    .Attr(AF_MAX_RECORD_BYTES_ATTR) AF_READER_COMMON_ATTRS
    .Doc("A reader of fixed-length records between a header and a footer; keys are 'FILENAME:INDEX'.");
AF_REGISTER_OP("IdentityReaderV2") AF_READER_COMMON_ATTRS
    .Doc("A reader that outputs each queued work unit (filename) as both key and value.");
#undef AF_READER_COMMON_ATTRS
#undef AF_MAX_RECORD_BYTES_ATTR

// IdentityReaderV2's "file": the work unit itself, one record.
class IdentityRecordReader : public io::FileRecordReader {
 public:
  Status Open(const std::string& filename) override {
    filename_ = filename;
    pending_ = true;
    return Status::OK();
  }
  Status ReadRecord(std::string* key, std::string* value) override {
    if (!pending_) return errors::OutOfRange("work unit '", filename_, "' produced");
    pending_ = false;
    *key = filename_;
    *value = filename_;
    return Status::OK();
  }
  void Close() override {
    filename_.clear();
    pending_ = false;
  }
  const std::string& filename() const override { return filename_; }

 private:
  std::string filename_;
  bool pending_ = false;
};

// Declares a reader: finds or makes its ReaderResource on first run, then
// outputs its handle. A reader with no shared_name is this kernel's own.
class ReaderDeclOp : public OpKernel {
 public:
  explicit ReaderDeclOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string container, shared_name;
    c->SetStatus(c->GetAttr("container", &container));
    c->SetStatus(c->GetAttr("shared_name", &shared_name));
    encoded_ = DeclaredResourceHandle(c->device() ? c->device()->name() : "", container, shared_name, name()).Encode();
    handle_ = Tensor(DT_RESOURCE, TensorShape{});
    handle_.scalar<std::string>() = encoded_;
  }

  void Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!resource_) {
        auto make = [this](std::shared_ptr<ReaderResource>* out) {
          if (!reader_) return errors::Internal(name(), ": its reader was given away");
          *out = std::make_shared<ReaderResource>(name(), std::move(reader_));
          return Status::OK();
        };
        AF_REQUIRES_OK(ctx, ReaderRegistry::Global()->LookupOrCreate(encoded_, signature_, make, &resource_));
      }
    }
    ctx->set_output(0, handle_);
  }

 protected:
  /// Called by each subclass's constructor: the file reader and how it was declared.
  void SetReader(OpKernelConstruction* c, Status made, std::unique_ptr<io::FileRecordReader> reader,
                 std::string signature) {
    if (!made.ok()) {
      c->SetStatus(Status(made.code(), name() + ": " + made.message()));
      return;
    }
    reader_ = std::move(reader);
    signature_ = type_string() + "(" + signature + ")";
  }

 private:
  std::string encoded_;
  Tensor handle_;
  std::string signature_;
  std::mutex mu_;
  std::unique_ptr<io::FileRecordReader> reader_;  // guarded by mu_: until the resource takes it
  std::shared_ptr<ReaderResource> resource_;      // guarded by mu_: held while the kernel lives
};

Status ParseCompressionAttr(OpKernelConstruction* c, const char* attr, io::Compression* out, std::string* name) {
  AF_RETURN_IF_ERROR(c->GetAttr(attr, name));
  return io::ParseCompression(*name, out);
}

// The max_record_bytes attr: > 0.
Status MaxRecordBytesAttr(OpKernelConstruction* c, uint64_t* out) {
  int64_t v = 0;
  AF_RETURN_IF_ERROR(c->GetAttr("max_record_bytes", &v));
  AF_RETURN_IF_ERROR(io::CheckMaxRecordBytes("max_record_bytes", v));
  *out = static_cast<uint64_t>(v);
  return Status::OK();
}

class TFRecordReaderOp : public ReaderDeclOp {
 public:
  explicit TFRecordReaderOp(OpKernelConstruction* c) : ReaderDeclOp(c) {
    io::TFRecordFileReader::Options o;
    std::string compression;
    Status s = ParseCompressionAttr(c, "compression_type", &o.compression, &compression);
    if (s.ok()) s = MaxRecordBytesAttr(c, &o.max_record_bytes);
    std::unique_ptr<io::FileRecordReader> r;
    if (s.ok()) s = io::TFRecordFileReader::Create(o, &r);
    SetReader(c, s, std::move(r),
              "compression_type='" + compression + "', max_record_bytes=" + std::to_string(o.max_record_bytes));
  }
};

class TextLineReaderOp : public ReaderDeclOp {
 public:
  explicit TextLineReaderOp(OpKernelConstruction* c) : ReaderDeclOp(c) {
    io::TextLineReader::Options o;
    std::string compression;
    Status s = c->GetAttr("skip_header_lines", &o.skip_header_lines);
    if (s.ok()) s = ParseCompressionAttr(c, "compression_type", &o.compression, &compression);
    if (s.ok()) s = MaxRecordBytesAttr(c, &o.max_record_bytes);
    std::unique_ptr<io::FileRecordReader> r;
    if (s.ok()) s = io::TextLineReader::Create(o, &r);
    SetReader(c, s, std::move(r),
              "skip_header_lines=" + std::to_string(o.skip_header_lines) + ", compression_type='" + compression +
                  "', max_record_bytes=" + std::to_string(o.max_record_bytes));
  }
};

class FixedLengthRecordReaderOp : public ReaderDeclOp {
 public:
  explicit FixedLengthRecordReaderOp(OpKernelConstruction* c) : ReaderDeclOp(c) {
    io::FixedLengthRecordReader::Options o;
    std::string encoding;
    Status s = c->GetAttr("header_bytes", &o.header_bytes);
    if (s.ok()) s = c->GetAttr("record_bytes", &o.record_bytes);
    if (s.ok()) s = c->GetAttr("footer_bytes", &o.footer_bytes);
    if (s.ok()) s = c->GetAttr("hop_bytes", &o.hop_bytes);
    if (s.ok()) s = ParseCompressionAttr(c, "encoding", &o.compression, &encoding);
    if (s.ok()) s = MaxRecordBytesAttr(c, &o.max_record_bytes);
    std::unique_ptr<io::FileRecordReader> r;
    if (s.ok()) s = io::FixedLengthRecordReader::Create(o, &r);
    SetReader(c, s, std::move(r),
              "header_bytes=" + std::to_string(o.header_bytes) + ", record_bytes=" + std::to_string(o.record_bytes) +
                  ", footer_bytes=" + std::to_string(o.footer_bytes) + ", hop_bytes=" + std::to_string(o.hop_bytes) +
                  ", encoding='" + encoding + "', max_record_bytes=" + std::to_string(o.max_record_bytes));
  }
};

class IdentityReaderOp : public ReaderDeclOp {
 public:
  explicit IdentityReaderOp(OpKernelConstruction* c) : ReaderDeclOp(c) {
    SetReader(c, Status::OK(), std::make_unique<IdentityRecordReader>(), "");
  }
};

AF_REGISTER_KERNEL(KernelDefBuilder("TFRecordReaderV2").Device(DEVICE_CPU), TFRecordReaderOp);
AF_REGISTER_KERNEL(KernelDefBuilder("TextLineReaderV2").Device(DEVICE_CPU), TextLineReaderOp);
AF_REGISTER_KERNEL(KernelDefBuilder("FixedLengthRecordReaderV2").Device(DEVICE_CPU), FixedLengthRecordReaderOp);
AF_REGISTER_KERNEL(KernelDefBuilder("IdentityReaderV2").Device(DEVICE_CPU), IdentityReaderOp);

// ---------------------------------------------------------------------------
// Operations on a reader handle.

Status KeyValueScalars(InferenceContext* c) {
  c->set_output(0, PartialTensorShape::Scalar());
  c->set_output(1, PartialTensorShape::Scalar());
  return Status::OK();
}

Status KeyValueVectors(InferenceContext* c) {
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1}));
  c->set_output(1, PartialTensorShape(std::vector<int64_t>{-1}));
  return Status::OK();
}

AF_REGISTER_OP("ReaderReadV2")
    .Input("reader_handle: resource")
    .Input("queue_handle: resource")
    .Output("key: string")
    .Output("value: string")
    .SetIsStateful()
    .SetShapeFn(KeyValueScalars)
    .Doc("The next record of the reader; dequeues the next filename when its file is done. OutOfRange once the "
         "queue is closed and empty.");
AF_REGISTER_OP("ReaderReadUpToV2")
    .Input("reader_handle: resource")
    .Input("queue_handle: resource")
    .Input("num_records: int64")
    .Output("keys: string")
    .Output("values: string")
    .SetIsStateful()
    .SetShapeFn(KeyValueVectors)
    .Doc("Up to num_records records of one file (fewer at the file's end).");
AF_REGISTER_OP("ReaderNumRecordsProducedV2")
    .Input("reader_handle: resource")
    .Output("records_produced: int64")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar)
    .Doc("How many records the reader has produced.");
AF_REGISTER_OP("ReaderNumWorkUnitsCompletedV2")
    .Input("reader_handle: resource")
    .Output("units_completed: int64")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar)
    .Doc("How many files (work units) the reader has finished.");
AF_REGISTER_OP("ReaderResetV2")
    .Input("reader_handle: resource")
    .SetIsStateful()
    .Doc("Returns the reader to its initial state: no file, counters zero.");

// The reader named by input 0.
Status FindReader(const OpKernel& k, OpKernelContext* ctx, std::shared_ptr<ReaderResource>* out) {
  const Tensor& handle = ctx->input(0);
  if (handle.dtype() != DT_RESOURCE || handle.NumElements() != 1)
    return errors::InvalidArgument(k.name(), ": input 0 is not a reader handle");
  return ReaderRegistry::Global()->Lookup(handle.scalar<std::string>(), out);
}

class ReaderReadOp : public AsyncOpKernel {
 public:
  ReaderReadOp(OpKernelConstruction* c, bool up_to) : AsyncOpKernel(c), up_to_(up_to) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    std::shared_ptr<ReaderResource> reader;
    const Status found = FindReader(*this, ctx, &reader);
    AF_REQUIRES_ASYNC(ctx, found.ok(), found, done);
    const Tensor& queue = ctx->input(1);
    AF_REQUIRES_ASYNC(ctx, queue.dtype() == DT_RESOURCE && queue.NumElements() == 1,
                      errors::InvalidArgument(name(), ": input 1 is not a queue handle"), done);
    int64_t n = 1;
    if (up_to_) {
      const Tensor& num = ctx->input(2);
      AF_REQUIRES_ASYNC(ctx, num.dtype() == DT_INT64 && num.NumElements() == 1,
                        errors::InvalidArgument(name(), ": num_records must be an int64 scalar"), done);
      n = num.data<int64_t>()[0];
      AF_REQUIRES_ASYNC(ctx, n >= 0, errors::InvalidArgument(name(), ": num_records must be >= 0, got ", n), done);
      if (n == 0) {
        ctx->set_output(0, Tensor(DT_STRING, TensorShape{0}));
        ctx->set_output(1, Tensor(DT_STRING, TensorShape{0}));
        done();
        return;
      }
    }
    const bool up_to = up_to_;
    reader->Read(ctx, queue.scalar<std::string>(), n, [ctx, done, up_to](ReaderResource::Result& r) {
      if (!r.status.ok()) {
        ctx->SetStatus(r.status);
      } else if (up_to) {
        const int64_t got = static_cast<int64_t>(r.keys.size());
        Tensor keys(DT_STRING, TensorShape{got}), values(DT_STRING, TensorShape{got});
        for (int64_t i = 0; i < got; ++i) {
          keys.data<std::string>()[i] = std::move(r.keys[static_cast<size_t>(i)]);
          values.data<std::string>()[i] = std::move(r.values[static_cast<size_t>(i)]);
        }
        ctx->set_output(0, std::move(keys));
        ctx->set_output(1, std::move(values));
      } else {
        Tensor key(DT_STRING, TensorShape{}), value(DT_STRING, TensorShape{});
        key.scalar<std::string>() = std::move(r.keys[0]);
        value.scalar<std::string>() = std::move(r.values[0]);
        ctx->set_output(0, std::move(key));
        ctx->set_output(1, std::move(value));
      }
      done();
    });
  }

 private:
  bool up_to_;
};

struct ReaderReadKernel : ReaderReadOp {
  explicit ReaderReadKernel(OpKernelConstruction* c) : ReaderReadOp(c, false) {}
};
struct ReaderReadUpToKernel : ReaderReadOp {
  explicit ReaderReadUpToKernel(OpKernelConstruction* c) : ReaderReadOp(c, true) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("ReaderReadV2").Device(DEVICE_CPU), ReaderReadKernel);
AF_REGISTER_KERNEL(KernelDefBuilder("ReaderReadUpToV2").Device(DEVICE_CPU), ReaderReadUpToKernel);

class ReaderCountOp : public OpKernel {
 public:
  ReaderCountOp(OpKernelConstruction* c, bool work_units) : OpKernel(c), work_units_(work_units) {}
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<ReaderResource> reader;
    AF_REQUIRES_OK(ctx, FindReader(*this, ctx, &reader));
    ctx->set_output(0, Tensor::Scalar<int64_t>(work_units_ ? reader->NumWorkUnitsCompleted()
                                                           : reader->NumRecordsProduced()));
  }

 private:
  bool work_units_;
};
struct ReaderNumRecordsKernel : ReaderCountOp {
  explicit ReaderNumRecordsKernel(OpKernelConstruction* c) : ReaderCountOp(c, false) {}
};
struct ReaderNumWorkUnitsKernel : ReaderCountOp {
  explicit ReaderNumWorkUnitsKernel(OpKernelConstruction* c) : ReaderCountOp(c, true) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("ReaderNumRecordsProducedV2").Device(DEVICE_CPU), ReaderNumRecordsKernel);
AF_REGISTER_KERNEL(KernelDefBuilder("ReaderNumWorkUnitsCompletedV2").Device(DEVICE_CPU), ReaderNumWorkUnitsKernel);

// Waits its turn behind reads in progress, as TensorFlow's (under the reader's lock).
class ReaderResetOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    std::shared_ptr<ReaderResource> reader;
    Status s = FindReader(*this, ctx, &reader);
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    reader->Reset(ctx, [ctx, done](ReaderResource::Result& r) {
      if (!r.status.ok()) ctx->SetStatus(r.status);
      done();
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ReaderResetV2").Device(DEVICE_CPU), ReaderResetOp);

AF_REGISTER_NO_GRADIENT("TFRecordReaderV2");
AF_REGISTER_NO_GRADIENT("TextLineReaderV2");
AF_REGISTER_NO_GRADIENT("FixedLengthRecordReaderV2");
AF_REGISTER_NO_GRADIENT("IdentityReaderV2");
AF_REGISTER_NO_GRADIENT("ReaderReadV2");
AF_REGISTER_NO_GRADIENT("ReaderReadUpToV2");
AF_REGISTER_NO_GRADIENT("ReaderNumRecordsProducedV2");
AF_REGISTER_NO_GRADIENT("ReaderNumWorkUnitsCompletedV2");
AF_REGISTER_NO_GRADIENT("ReaderResetV2");

}  // namespace
}  // namespace actorflow
