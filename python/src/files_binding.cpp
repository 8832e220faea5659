// The files half of _actorflow: TensorFlow's FileWriter
// (client/train/summary_writer.hpp) for tf.summary.FileWriter; events files
// read back as Python objects (tf.train.summary_iterator): each event's wall
// time, step, and its summary values (tag, simple_value or histogram
// min/max/num/sum), graph or file version; TFRecord files written and read
// (tf.python_io.TFRecordWriter, tf_record_iterator); and a SavedModel's parts
// (client/saved_model.hpp) for tf.saved_model.loader.load, which imports the
// graph into the Python graph and runs the restore and main ops itself.
#include <pybind11/stl.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actorflow/client/saved_model.hpp"
#include "actorflow/client/train/summary_writer.hpp"
#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "actorflow/core/proto/event.pb.h"
#include "bindings.hpp"
#include "numpy_tensor.hpp"

namespace actorflow {
namespace python {

namespace {

class PyFileWriter {
 public:
  PyFileWriter(const std::string& logdir, int max_queue, double flush_secs, const std::string& suffix) {
    FileWriter::Options o;
    o.max_queue = max_queue;
    o.flush_secs = flush_secs;
    o.filename_suffix = suffix;
    Status s = FileWriter::Create(logdir, o, &writer_);
    if (!s.ok()) RaiseStatus(s);
  }
  void AddSummary(const py::object& summary, int64_t step) {
    std::string bytes;
    if (py::isinstance<py::bytes>(summary)) {
      bytes = summary.cast<std::string>();
    } else {  // a fetched scalar string array
      py::object item = summary.attr("item")();
      bytes = item.cast<std::string>();
    }
    Check(writer_->AddSummary(bytes, step));
  }
  void AddScalar(const std::string& tag, double value, int64_t step) { Check(writer_->AddScalar(tag, value, step)); }
  void AddGraph(const py::bytes& graph_def, int64_t step) {
    proto::GraphDef def;
    if (!def.ParseFromString(graph_def.cast<std::string>())) throw py::value_error("not a GraphDef");
    Check(writer_->AddGraph(def, step));
  }
  void Flush() { Check(writer_->Flush()); }
  void Close() { Check(writer_->Close()); }
  std::string filename() const { return writer_->filename(); }

 private:
  static void Check(const Status& s) {
    if (!s.ok()) RaiseStatus(s);
  }
  std::unique_ptr<FileWriter> writer_;
};

// Every record of a TFRecord file ("", "GZIP" or "ZLIB").
std::vector<std::string> Records(const std::string& path, const std::string& compression) {
  io::TFRecordFileReader::Options o;
  if (compression == "GZIP") o.compression = io::Compression::kGzip;
  else if (compression == "ZLIB") o.compression = io::Compression::kZlib;
  std::unique_ptr<io::FileRecordReader> reader;
  Status s = io::TFRecordFileReader::Create(o, &reader);
  if (s.ok()) s = reader->Open(path);
  if (!s.ok()) RaiseStatus(s);
  std::vector<std::string> out;
  for (;;) {
    std::string key, value;
    s = reader->ReadRecord(&key, &value);
    if (s.code() == Code::kOutOfRange) return out;
    if (!s.ok()) RaiseStatus(s);
    out.push_back(std::move(value));
  }
}

py::list ReadEvents(const std::string& path) {
  py::module_ types = py::module_::import("types");
  py::list out;
  for (const std::string& value : Records(path, "")) {
    proto::Event e;
    if (!e.ParseFromString(value)) RaiseStatus(errors::DataLoss("a record of ", path, " is not an Event"));
    py::dict ev;
    ev["wall_time"] = e.wall_time();
    ev["step"] = e.step();
    ev["file_version"] = e.file_version();
    ev["graph_def"] = py::bytes(e.graph_def());
    py::list values;
    for (const auto& v : e.summary().value()) {
      py::dict d;
      d["tag"] = v.tag();
      d["simple_value"] = v.value_case() == proto::Summary::Value::kSimpleValue ? py::object(py::float_(v.simple_value()))
                                                                                 : py::object(py::none());
      if (v.has_histo()) {
        py::dict h;
        h["min"] = v.histo().min();
        h["max"] = v.histo().max();
        h["num"] = v.histo().num();
        h["sum"] = v.histo().sum();
        h["sum_squares"] = v.histo().sum_squares();
        h["bucket_limit"] = std::vector<double>(v.histo().bucket_limit().begin(), v.histo().bucket_limit().end());
        h["bucket"] = std::vector<double>(v.histo().bucket().begin(), v.histo().bucket().end());
        d["histo"] = types.attr("SimpleNamespace")(**h);
      } else {
        d["histo"] = py::none();
      }
      values.append(types.attr("SimpleNamespace")(**d));
    }
    py::dict summary;
    summary["value"] = values;
    ev["summary"] = types.attr("SimpleNamespace")(**summary);
    out.append(types.attr("SimpleNamespace")(**ev));
  }
  return out;
}

class PyRecordWriter {
 public:
  PyRecordWriter(const std::string& path, const std::string& compression) {
    io::RecordWriterOptions o;
    Status s = io::RecordWriterOptions::FromCompressionType(compression, &o);
    if (s.ok()) s = io::RecordWriter::Create(path, o, &writer_);
    if (!s.ok()) RaiseStatus(s);
  }
  void Write(const py::bytes& record) {
    if (!writer_) RaiseStatus(errors::FailedPrecondition("the TFRecordWriter is closed"));
    char* data = nullptr;
    Py_ssize_t len = 0;
    PyBytes_AsStringAndSize(record.ptr(), &data, &len);
    Status s = writer_->WriteRecord(std::string_view(data, static_cast<size_t>(len)));
    if (!s.ok()) RaiseStatus(s);
  }
  void Flush() {
    if (writer_) {
      Status s = writer_->Flush();
      if (!s.ok()) RaiseStatus(s);
    }
  }
  void Close() {
    if (!writer_) return;
    Status s = writer_->Close();
    writer_.reset();
    if (!s.ok()) RaiseStatus(s);
  }

 private:
  std::unique_ptr<io::RecordWriter> writer_;
};

py::list ReadRecords(const std::string& path, const std::string& compression) {
  py::list out;
  for (const std::string& r : Records(path, compression)) out.append(py::bytes(r));
  return out;
}

// The one op a collection names ("" when none).
std::string CollectionOp(const proto::MetaGraphDef& meta, const std::string& key) {
  auto it = meta.collection_def().find(key);
  if (it == meta.collection_def().end() || it->second.node_list().value_size() != 1) return "";
  const std::string& name = it->second.node_list().value(0);
  return name.substr(0, name.find(':'));
}

py::dict SavedModelParts(const std::string& dir, const std::set<std::string>& tags) {
  proto::SavedModel model;
  Status s = ReadSavedModel(dir, &model);
  const proto::MetaGraphDef* meta = nullptr;
  if (s.ok()) s = FindMetaGraph(model, tags, &meta);
  if (!s.ok()) RaiseStatus(s);
  py::dict out;
  out["graph_def"] = py::bytes(meta->graph_def().SerializeAsString());
  out["meta_graph_def"] = py::bytes(meta->SerializeAsString());
  const std::string variables = file_io::JoinPath(file_io::JoinPath(dir, "variables"), "variables");
  const bool has_variables = meta->has_saver_def() && file_io::FileExists(variables + ".index");
  out["variables"] = has_variables ? py::object(py::str(variables)) : py::object(py::none());
  out["filename_tensor"] = meta->saver_def().filename_tensor_name();
  out["restore_op"] = meta->saver_def().restore_op_name();
  // The init op, where TensorFlow's loader looks for it.
  std::string main_op;
  auto init = meta->signature_def().find("__saved_model_init_op");
  if (init != meta->signature_def().end()) {
    auto o = init->second.outputs().find("__saved_model_init_op");
    if (o != init->second.outputs().end()) main_op = o->second.name().substr(0, o->second.name().find(':'));
  }
  if (main_op.empty()) main_op = CollectionOp(*meta, "saved_model_main_op");
  if (main_op.empty()) main_op = CollectionOp(*meta, "legacy_init_op");
  out["main_op"] = main_op;
  py::dict assets;
  for (const auto& a : meta->asset_file_def())
    assets[py::str(a.tensor_info().name())] = file_io::JoinPath(file_io::JoinPath(dir, "assets"), a.filename());
  out["assets"] = assets;
  py::dict signatures;
  for (const auto& [key, sig] : meta->signature_def()) {
    auto names = [](const google::protobuf::Map<std::string, proto::TensorInfo>& m) {
      py::dict d;
      for (const auto& [k, info] : m) {
        py::dict i;
        i["name"] = info.name();
        i["dtype"] = static_cast<int>(info.dtype());
        d[py::str(k)] = i;
      }
      return d;
    };
    py::dict d;
    d["inputs"] = names(sig.inputs());
    d["outputs"] = names(sig.outputs());
    d["method_name"] = sig.method_name();
    signatures[py::str(key)] = d;
  }
  out["signatures"] = signatures;
  py::list tag_list;
  for (const auto& t : meta->meta_info_def().tags()) tag_list.append(t);
  out["tags"] = tag_list;
  return out;
}

}  // namespace

void BindFiles(py::module_& m) {
  m.def("saved_model_parts", &SavedModelParts);
  py::class_<PyRecordWriter>(m, "RecordWriter")
      .def(py::init<const std::string&, const std::string&>(), py::arg("path"), py::arg("compression") = "")
      .def("write", &PyRecordWriter::Write)
      .def("flush", &PyRecordWriter::Flush)
      .def("close", &PyRecordWriter::Close);
  m.def("read_records", &ReadRecords, py::arg("path"), py::arg("compression") = "");
  py::class_<PyFileWriter>(m, "FileWriter")
      .def(py::init<const std::string&, int, double, const std::string&>(), py::arg("logdir"),
           py::arg("max_queue") = 10, py::arg("flush_secs") = 120.0, py::arg("filename_suffix") = "")
      .def("add_summary", &PyFileWriter::AddSummary)
      .def("add_scalar", &PyFileWriter::AddScalar)
      .def("add_graph", &PyFileWriter::AddGraph)
      .def("flush", &PyFileWriter::Flush)
      .def("close", &PyFileWriter::Close)
      .def_property_readonly("filename", &PyFileWriter::filename);
  m.def("read_events", &ReadEvents);
}

}  // namespace python
}  // namespace actorflow
