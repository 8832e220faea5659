"""Peer for bench_train: PyTorch 1.13 (CPU) training the same models the same
way -- the MLP 784-256-10 (ReLU) and softmax regression 64-10, mean softmax
cross-entropy, plain SGD, one step = forward, backward, update -- at its best
thread setting here (1 and 2 threads are both measured; the best is printed).

Prints JSON lines in bench/run_all.sh's format: examples/s per model and batch.
First checks that torch.mm runs on an optimized BLAS (Debian's python3-torch
uses the reference BLAS, ~5 GFLOP/s, unless libopenblas0 is installed), with
OpenBLAS's best kernels for this CPU (bench/openblas_core.py).

On OpenBLAS, torch.set_num_threads leaves OpenBLAS's own pool alone (as many
threads as cores): PyTorch's default "one thread" runs its GEMMs on every core.
Each row names that pool's size ("blas_threads"; "own" where PyTorch's BLAS is
not this process's OpenBLAS, e.g. MKL, which follows torch.set_num_threads).
The default figures keep PyTorch's defaults, its best on 2 cores (2026-12-01,
2-vCPU Xeon, mlp256: 164k examples/s at 1 thread with the GEMMs on 2; 120k with
PEER_TORCH_THREADS=1; 48k with PEER_TORCH_THREADS=2, where OpenMP's and
OpenBLAS's threads spin against each other). PEER_TORCH_THREADS's
per-thread-count rows pin OpenBLAS's pool to the same count, so row N uses N
cores."""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openblas_core  # noqa: E402  (before torch loads OpenBLAS)

OPENBLAS_CORE = openblas_core.configure()
import torch  # noqa: E402

torch.manual_seed(0)


def emit(params, values):
    vals = sorted(values)
    print(json.dumps({"bench": "train_step", "params": params, "metric": "throughput", "unit": "examples/s",
                      "median": statistics.median(vals), "min": vals[0], "max": vals[-1], "reps": len(vals)}),
          flush=True)


def blas_check(report=True):
    torch.set_num_threads(1)
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    torch.mm(a, b)
    t0 = time.perf_counter()
    for _ in range(5):
        torch.mm(a, b)
    gflops = 5 * 2 * 1024 ** 3 / (time.perf_counter() - t0) / 1e9
    if report:
        print(json.dumps({"bench": "torch_mm_check", "params": {"n": 1024, "threads": 1, "impl": "pytorch",
                                                                "blas_threads": blas_threads(),
                                                                "openblas_core": OPENBLAS_CORE},
                          "metric": "throughput", "unit": "GFLOP/s", "median": gflops, "min": gflops,
                          "max": gflops, "reps": 5}), flush=True)
    if gflops < 20:
        print("peer_torch_train: torch.mm runs at %.1f GFLOP/s: install libopenblas0 (setup.sh --bench)" % gflops,
              file=sys.stderr)


def blas_threads():
    n = openblas_core.threads()
    return "own" if n is None else n


def model(kind):
    if kind == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)), 784
    return torch.nn.Sequential(torch.nn.Linear(64, 10)), 64


def steps_per_second(kind, batch, threads, seconds=1.0, rounds=7):
    torch.set_num_threads(threads)
    if PIN_BLAS:
        openblas_core.set_threads(threads)
    net, features = model(kind)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(batch, features)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(20):
        step()
    rates = []
    for _ in range(rounds):
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds / rounds * 3:
            step()
            n += 1
        rates.append(n * batch / (time.perf_counter() - t0))
    return rates


# Arguments (optional): which figures to run, as bench_train takes them
# (mlp64, mlp256, softmax32), or --check for the BLAS check alone. Without
# arguments: the check, then every figure. PEER_TORCH_THREADS=N (or a list,
# "4,8") measures those thread counts instead of 1 and 2, for the scaling
# figures of a many-core machine.
FIGURES = {"mlp64": ("mlp", 64), "mlp256": ("mlp", 256), "softmax32": ("softmax", 32)}
args = sys.argv[1:]
THREADS = [int(t) for t in os.environ.get("PEER_TORCH_THREADS", "1,2").split(",")]
PIN_BLAS = bool(os.environ.get("PEER_TORCH_THREADS"))
# Always run: besides checking, the large product warms OpenBLAS up (without
# it, the MLP steps measured 2.5x slower here).
blas_check(report=not args or args == ["--check"])
figures = [] if args == ["--check"] else (args or list(FIGURES))
for kind, batch in (FIGURES[f] for f in figures):
    best = None
    for threads in THREADS:
        rates = steps_per_second(kind, batch, threads)
        if best is None or statistics.median(rates) > statistics.median(best[1]):
            best = (threads, rates, blas_threads())
    emit({"model": kind, "batch": batch, "threads": best[0], "blas_threads": best[2], "impl": "pytorch"}, best[1])
