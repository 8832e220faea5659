"""Peer of bench_conv: PyTorch's conv2d forward, a layer's forward pass
(relu_ of conv2d with a bias: the bias in the convolution, the ReLU in place,
as torchvision's layers run), its input and weight gradients (torch.nn.grad)
and max_pool2d on the same shapes (NCHW, PyTorch's layout), one JSON line per
figure in bench/run_all.sh's format.
Threads: ACTORFLOW_NUM_THREADS."""
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

threads = int(os.environ.get("ACTORFLOW_NUM_THREADS", "2"))
torch.set_num_threads(threads)


def measure(fn, warmup=3, reps=20):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(t * 1e3 for t in times)


def emit(bench, layer, vals):
    b, s, i, o = layer
    print(json.dumps({"bench": bench, "params": {"batch": b, "size": s, "in": i, "out": o, "threads": threads,
                                                 "impl": "pytorch"},
                      "metric": "time", "unit": "ms", "median": statistics.median(vals), "min": vals[0],
                      "max": vals[-1], "reps": len(vals)}), flush=True)


with torch.no_grad():
    for layer in [(32, 28, 1, 32), (32, 14, 32, 64), (16, 28, 64, 64)]:
        b, s, i, o = layer
        x = torch.randn(b, i, s, s)
        w = torch.randn(o, i, 3, 3)
        dy = torch.randn(b, o, s, s)
        bias = torch.randn(o)
        emit("conv2d_forward", layer, measure(lambda: F.conv2d(x, w, padding=1)))
        emit("conv2d_forward_bias_relu", layer, measure(lambda: F.relu_(F.conv2d(x, w, bias, padding=1))))
        emit("conv2d_backprop_input", layer,
             measure(lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1)))
        emit("conv2d_backprop_filter", layer,
             measure(lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1)))
        emit("conv2d_maxpool", layer, measure(lambda: F.max_pool2d(dy, 2)))
