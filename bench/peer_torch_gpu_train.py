"""Peers of bench_gpu_train: PyTorch training the MLP 784-h-h-10 (ReLU, mean
cross-entropy, plain SGD at 0.01, full float32: no TF32) on the same GPU, two ways:

  pytorch             the same work as bench_gpu_train: each step copies the batch
                      from pinned host memory (non_blocking copies), runs forward,
                      backward and the update, and waits for the GPU once
  pytorch_cuda_graph  PyTorch at its best on that GPU: the batch resident on the GPU,
                      the whole step (forward, backward, the SGD update, written out
                      so that it is captured) one CUDA graph (torch.cuda.graph: a
                      static input, warm-up on a side stream), replayed with no
                      synchronisation inside the timed loop (one at the end of a block)

Shapes (h/batch) as bench_gpu_train: 256/64, 1024/256, 4096/1024, 4096/8192, or
those given as arguments ("1024x256"); --mode measures one way alone (e.g. under
a profiler). Prints one JSON line per shape and way, in
bench/run_all.sh's format (ms per step); with --beside FILE (bench_gpu_train's
output), also a ratio line per shape: PyTorch's ms over actorflow's (above 1,
actorflow is faster). Without a GPU it says so and exits 0 (nothing to measure);
--check-cpu runs both ways' step code a few times on the CPU (no pinning, no
graph) and checks the hand-written update against torch.optim.SGD."""
import argparse
import json
import statistics
import sys
import time

import torch

LR = 0.01
ROUNDS = 7


def model_for(hidden, dev):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                               torch.nn.ReLU(), torch.nn.Linear(hidden, 10)).to(dev)


def batch_for(batch):
    g = torch.Generator().manual_seed(0)
    return torch.rand(batch, 784, generator=g), torch.randint(0, 10, (batch,), generator=g)


def eager_step(hidden, batch, dev):
    """The same work as bench_gpu_train: a step that copies the batch in and waits for the device."""
    model = model_for(hidden, dev)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()
    x_host, y_host = batch_for(batch)
    if dev.type == "cuda":
        x_host, y_host = x_host.pin_memory(), y_host.pin_memory()

    def step():
        x = x_host.to(dev, non_blocking=True)
        y = y_host.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()

    return step, model


def sgd_step(model, x, y, loss_fn):
    """Forward, backward and a plain SGD update written out (p -= LR * grad), so
    that all of it is GPU work a CUDA graph can capture."""
    loss = loss_fn(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-LR)
    return loss


def graph_step(hidden, batch, dev):
    """PyTorch's whole-network capture recipe: warm up on a side stream, capture
    with static inputs and grads set to None (backward then writes, rather than
    adds to, the graph's own .grad tensors on every replay)."""
    model = model_for(hidden, dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    x_host, y_host = batch_for(batch)
    static_x, static_y = x_host.to(dev), y_host.to(dev)  # resident: filled once
    if dev.type != "cuda":  # --check-cpu: the same step, not captured
        def step():
            model.zero_grad(set_to_none=True)
            sgd_step(model, static_x, static_y, loss_fn)

        return step, model
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model.zero_grad(set_to_none=True)
            sgd_step(model, static_x, static_y, loss_fn)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    model.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        sgd_step(model, static_x, static_y, loss_fn)
    return graph.replay, model


def timed(step, block, sync_per_block):
    """ms per step: a warm-up block, then ROUNDS blocks of `block` steps."""
    for _ in range(block):
        step()
    sync_per_block()
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(block):
            step()
        sync_per_block()
        times.append((time.perf_counter() - t0) / block * 1e3)
    return sorted(times)


def emit(hidden, batch, impl, times):
    print(json.dumps({"bench": "gpu_train_step", "params": {"hidden": hidden, "batch": batch, "impl": impl},
                      "metric": "time", "unit": "ms", "median": statistics.median(times), "min": times[0],
                      "max": times[-1], "reps": len(times)}), flush=True)
    return statistics.median(times)


def actorflow_figures(path):
    """(hidden, batch) -> median ms from bench_gpu_train's JSON lines: the first figure per shape, the default
    configuration's (device_run.sh runs the AF_GPU_VARIANTS after it, into the same log)."""
    out = {}
    try:
        f = open(path)
    except OSError:
        return out  # then each shape's ratio row says there is no figure
    with f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            p = row.get("params", {})
            if row.get("bench") == "gpu_train_step" and p.get("impl") == "actorflow":
                out.setdefault((p["hidden"], p["batch"]), row["median"])
    return out


def check_cpu():
    """Both ways' step code on the CPU: the hand-written update is torch.optim.SGD's."""
    torch.set_num_threads(2)
    dev = torch.device("cpu")
    eager, m1 = eager_step(32, 16, dev)
    graphed, m2 = graph_step(32, 16, dev)
    for _ in range(3):
        eager()
        graphed()
    worst = max((a - b).abs().max().item() for a, b in zip(m1.parameters(), m2.parameters()))
    times = timed(graphed, 2, lambda: None)
    print(f"peer_torch_gpu_train --check-cpu: 3 steps each way, largest parameter difference {worst:.3g}, "
          f"{statistics.median(times):.3f} ms per CPU step", flush=True)
    return worst < 1e-5


def parse_shape(text):
    try:
        h, b = (int(v) for v in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shapes are HIDDENxBATCH, e.g. 1024x256; got '{text}'")
    if h <= 0 or b <= 0:
        raise argparse.ArgumentTypeError(f"shapes are positive; got '{text}'")
    return h, b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="*", type=parse_shape, metavar="HIDDENxBATCH")
    ap.add_argument("--beside", metavar="FILE", help="bench_gpu_train's output: print ratios to its figures")
    ap.add_argument("--mode", choices=["both", "pytorch", "pytorch_cuda_graph"], default="both",
                    help="which way(s) to measure (one alone, e.g. under a profiler)")
    ap.add_argument("--check-cpu", action="store_true", help="run the step code on the CPU and check it")
    args = ap.parse_args()
    if args.check_cpu:
        return 0 if check_cpu() else 1
    if not torch.cuda.is_available():
        print("peer_torch_gpu_train: no GPU here: nothing to measure")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # full float32, as actorflow's cuBLASLt products
    dev = torch.device("cuda")
    ours = actorflow_figures(args.beside) if args.beside else {}
    shapes = args.shapes or [(256, 64), (1024, 256), (4096, 1024), (4096, 8192)]
    for h, b in shapes:
        block = 5 if b >= 4096 else 50
        ms = {}
        if args.mode in ("both", "pytorch"):
            step, _ = eager_step(h, b, dev)
            ms["pytorch"] = emit(h, b, "pytorch", timed(step, block, lambda: None))
            del step
        if args.mode in ("both", "pytorch_cuda_graph"):
            replay, _ = graph_step(h, b, dev)
            ms["pytorch_cuda_graph"] = emit(h, b, "pytorch_cuda_graph", timed(replay, block, torch.cuda.synchronize))
            del replay
        torch.cuda.empty_cache()
        if (h, b) in ours:
            ratios = {impl: round(v / ours[(h, b)], 3) for impl, v in ms.items()}
            print(json.dumps({"bench": "gpu_train_step_ratio", "params": {"hidden": h, "batch": b},
                              "metric": "pytorch ms / actorflow ms", "unit": "ratio", **ratios}), flush=True)
        elif args.beside:
            print(json.dumps({"bench": "gpu_train_step_ratio", "params": {"hidden": h, "batch": b},
                              "error": f"no actorflow figure for this shape in {args.beside}"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
