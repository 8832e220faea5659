"""tf.python_io: TFRecord files written (TFRecordWriter) and read back (tf_record_iterator), in TensorFlow's
format (length, masked CRC-32C, data, masked CRC-32C), optionally GZIP or ZLIB compressed."""

from actorflow import _actorflow

__all__ = ["TFRecordWriter", "TFRecordOptions", "TFRecordCompressionType", "tf_record_iterator"]


class TFRecordCompressionType(object):
    NONE, ZLIB, GZIP = 0, 1, 2


class TFRecordOptions(object):
    def __init__(self, compression_type=None):
        names = {None: "", TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
                 TFRecordCompressionType.GZIP: "GZIP", "": "", "ZLIB": "ZLIB", "GZIP": "GZIP"}
        self.compression_type = names[compression_type]

    @staticmethod
    def get_compression_type_string(options):
        return options.compression_type if options is not None else ""


class TFRecordWriter(object):
    def __init__(self, path, options=None):
        self._w = _actorflow.RecordWriter(path, TFRecordOptions.get_compression_type_string(options))

    def write(self, record):
        self._w.write(record if isinstance(record, bytes) else bytes(record))

    def flush(self):
        self._w.flush()

    def close(self):
        self._w.close()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()


def tf_record_iterator(path, options=None):
    return iter(_actorflow.read_records(path, TFRecordOptions.get_compression_type_string(options)))
