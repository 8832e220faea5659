"""Peers for the executor benchmarks: PyTorch eager and TorchScript per-op cost
(a chain of scalar negations) and the latency of one tiny eager call.
Prints JSON lines in bench/run_all.sh's format. Threads: ACTORFLOW_NUM_THREADS."""
import json
import os
import statistics
import time

import torch

threads = int(os.environ.get("ACTORFLOW_NUM_THREADS", "2"))
torch.set_num_threads(threads)


def measure(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def emit(bench, params, metric, unit, times, scale):
    vals = sorted(t * scale for t in times)
    print(json.dumps({"bench": bench, "params": params, "metric": metric, "unit": unit,
                      "median": statistics.median(vals), "min": vals[0], "max": vals[-1], "reps": len(vals)}),
          flush=True)


N = 100000
x0 = torch.tensor(1.0)


def eager_chain():
    x = x0
    for _ in range(N):
        x = torch.neg(x)
    return x


@torch.jit.script
def script_chain(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = torch.neg(x)
    return x


with torch.no_grad():
    emit("executor_chain", {"nodes": N, "threads": threads, "impl": "pytorch_eager"}, "time_per_node", "us",
         measure(eager_chain, 1, 5), 1e6 / N)
    emit("executor_chain", {"nodes": N, "threads": threads, "impl": "torchscript"}, "time_per_node", "us",
         measure(lambda: script_chain(x0, N), 2, 5), 1e6 / N)
    emit("session_run_one_node", {"threads": threads, "impl": "pytorch_eager_op"}, "latency", "us",
         measure(lambda: torch.neg(x0), 200, 5000), 1e6)
