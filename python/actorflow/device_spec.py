"""Device names as TensorFlow writes them ("/job:ps/replica:0/task:1/device:CPU:0", "/cpu:0", "GPU:1"): parsed
into fields and merged (an inner tf.device fills in what the outer one leaves open), and the view of an op
that a device function (tf.device(fn), replica_device_setter) gets."""

import re

__all__ = ["DeviceSpec"]

_DEVICE_FIELDS = re.compile(r"/(job|replica|task|device|cpu|gpu)(?::([^/]*))?", re.IGNORECASE)


def _parse_device(spec):
    out = {}
    if not spec:
        return out
    for key, value in _DEVICE_FIELDS.findall(spec):
        key = key.lower()
        if key in ("cpu", "gpu"):
            out["device"] = "%s:%s" % (key.upper(), value or "0")
        elif key == "device":
            parts = value.split(":")
            out["device"] = "%s:%s" % (parts[0].upper(), parts[1] if len(parts) > 1 else "*")
        else:
            out[key] = value
    if not out and spec.upper() in ("CPU", "GPU") or re.match(r"^(cpu|gpu):\d+$", spec, re.IGNORECASE):
        kind, _, index = spec.partition(":")
        out["device"] = "%s:%s" % (kind.upper(), index or "0")
    return out


def _device_string(fields):
    s = ""
    for key in ("job", "replica", "task"):
        if key in fields:
            s += "/%s:%s" % (key, fields[key])
    if "device" in fields:
        s += "/device:" + fields["device"]
    return s


def _merge_device(outer, inner):
    """TensorFlow's device merging: the inner spec's fields over the outer's."""
    if not outer:
        return inner or ""
    if not inner:
        return outer
    merged = _parse_device(outer)
    merged.update(_parse_device(inner))
    return _device_string(merged)


class _OpStub(object):
    """What a device function sees of an op about to be built (TensorFlow passes its NodeDef)."""

    def __init__(self, op_type, name, device):
        self.type = op_type
        self.name = name
        self.device = device
        self.node_def = self
        self.op = op_type


class DeviceSpec(object):
    """tf.DeviceSpec: a device name's fields (job, replica, task, device_type, device_index)."""

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job, self.replica, self.task = job, replica, task
        self.device_type, self.device_index = device_type, device_index

    @staticmethod
    def from_string(spec):
        f = _parse_device(spec)
        kind, _, index = f.get("device", "").partition(":")
        return DeviceSpec(f.get("job"), int(f["replica"]) if "replica" in f else None,
                          int(f["task"]) if "task" in f else None, kind or None,
                          int(index) if index not in ("", "*") else None)

    def to_string(self):
        fields = {}
        if self.job is not None:
            fields["job"] = self.job
        if self.replica is not None:
            fields["replica"] = self.replica
        if self.task is not None:
            fields["task"] = self.task
        if self.device_type is not None:
            fields["device"] = "%s:%s" % (self.device_type.upper(), "*" if self.device_index is None else
                                          self.device_index)
        return _device_string(fields)

    def merge_from(self, dev):
        for k in ("job", "replica", "task", "device_type", "device_index"):
            if getattr(dev, k) is not None:
                setattr(self, k, getattr(dev, k))
