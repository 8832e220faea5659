"""Peer of bench_variable_update's small_update_overhead: what each update of a
small parameter costs PyTorch's SGD step.

16 parameters of 4 floats, each updated in place as torch.optim.SGD does
without foreach (`p.add_(grad, alpha=-lr)` under no_grad), timed against an
empty loop body; microseconds per update, one JSON line (bench_util format).
Threads: ACTORFLOW_NUM_THREADS (torch.set_num_threads), as the C++ side.
"""
import json
import os
import statistics
import time

import torch

VARS = 16
BLOCK = 500


def main():
    threads = int(os.environ.get("ACTORFLOW_NUM_THREADS", "1"))
    torch.set_num_threads(threads)
    params = [torch.ones(4) for _ in range(VARS)]
    grads = [torch.tensor([1.0, 2.0, 3.0, 4.0]) for _ in range(VARS)]

    def step():
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.add_(g, alpha=-0.5)

    def empty():
        with torch.no_grad():
            for p, g in zip(params, grads):
                pass

    per = []
    for fn in (step, empty):
        for _ in range(BLOCK):
            fn()
    for _ in range(15):
        t = []
        for fn in (step, empty):
            t0 = time.perf_counter()
            for _ in range(BLOCK):
                fn()
            t.append((time.perf_counter() - t0) / BLOCK)
        per.append((t[0] - t[1]) / VARS * 1e6)
    per.sort()
    print(json.dumps({"bench": "small_update_overhead",
                      "params": {"vars": VARS, "elements": 4, "threads": threads, "impl": "pytorch"},
                      "metric": "time_per_update", "unit": "us", "median": statistics.median(per),
                      "min": per[0], "max": per[-1], "reps": len(per)}))


if __name__ == "__main__":
    main()
