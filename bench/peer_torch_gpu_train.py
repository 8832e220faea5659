"""Peer for bench_gpu_train: PyTorch training the MLP 784-h-h-10 (ReLU, mean
cross-entropy, plain SGD at 0.01) on the same GPU the same way: each step copies
the batch from host memory, runs forward, backward and the update, and waits
for the GPU once. Shapes (h/batch) as bench_gpu_train: 256/64, 1024/256,
4096/1024, 4096/8192, or those given as arguments ("1024x256").

Prints one JSON line per shape in bench/run_all.sh's format (ms per step)."""
import json
import statistics
import sys
import time

import torch

if not torch.cuda.is_available():
    print("peer_torch_gpu_train: no GPU here: nothing to measure")
    sys.exit(0)

torch.manual_seed(0)
dev = torch.device("cuda")


def measure(hidden, batch):
    model = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                                torch.nn.ReLU(), torch.nn.Linear(hidden, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x_host = torch.rand(batch, 784)
    y_host = torch.randint(0, 10, (batch,))

    def step():
        x = x_host.to(dev)
        y = y_host.to(dev)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()

    block = 5 if batch >= 4096 else 50
    for _ in range(block):
        step()
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(block):
            step()
        times.append((time.perf_counter() - t0) / block * 1e3)
    times.sort()
    print(json.dumps({"bench": "gpu_train_step", "params": {"hidden": hidden, "batch": batch, "impl": "pytorch"},
                      "metric": "time", "unit": "ms", "median": statistics.median(times), "min": times[0],
                      "max": times[-1], "reps": len(times)}), flush=True)


shapes = [(256, 64), (1024, 256), (4096, 1024), (4096, 8192)]
if len(sys.argv) > 1:
    shapes = [tuple(int(v) for v in a.split("x")) for a in sys.argv[1:]]
for h, b in shapes:
    measure(h, b)
