"""Fashion-MNIST as numpy arrays, read from the IDX files Debian's dataset-fashion-mnist installs (setup.sh does)."""

import gzip
import os

import numpy as np

DIR = os.environ.get("ACTORFLOW_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def _idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load():
    """(train_images float32 [60000, 784] in [0, 1], train_labels int32, test_images, test_labels)."""
    try:
        out = []
        for kind in ("train", "t10k"):
            images = _idx(os.path.join(DIR, "%s-images-idx3-ubyte.gz" % kind))
            labels = _idx(os.path.join(DIR, "%s-labels-idx1-ubyte.gz" % kind))
            out += [images.reshape(len(images), 784).astype(np.float32) / 255.0, labels.astype(np.int32)]
        return tuple(out)
    except OSError as e:
        raise SystemExit("%s (install the data with ./setup.sh: Debian's dataset-fashion-mnist)" % e)
