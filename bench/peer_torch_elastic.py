"""The chaos suite's peer (bench/chaos.sh --modes torch): what a PyTorch user
runs for fault-tolerant data-parallel training, under torchrun.

  torchrun --standalone --nproc_per_node 3 --max_restarts 100 --monitor_interval 1 \
      bench/peer_torch_elastic.py --epochs 40 --dir CKPT --log-steps PREFIX

The same work as train_distributed --mode allreduce: the Fashion-MNIST MLP
784-256-10 (Glorot-uniform weights, zero biases), Adam at 0.001 x workers
decayed by 0.8 each epoch (staircase), batch 100 per worker, gradients
averaged by DDP over gloo, one thread per process. TorchElastic's contract:
torchrun restarts every worker when one fails, and the script resumes from
its last checkpoint (rank 0 writes one every --save-every steps: model,
optimizer, global step); the data position is the global step's (each step
reads workers x batch examples of one stream of reshuffled epochs), so
after a restart the steps since that checkpoint are done again.

Each step appends "unix_ms global_step position members rank" to
PREFIX.worker_RANK (chaos_report.py); each start prints
"[launch] worker:RANK started (pid N)" (chaos.sh finds its victims so), rank
0 a progress line every 100 steps and "[worker:0] trained N steps: test
accuracy X%" at the end.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(kind):
    x = idx(f"{DATA}/{kind}-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255.0
    y = idx(f"{DATA}/{kind}-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--save-every", type=int, default=300)
    p.add_argument("--dir", required=True)
    p.add_argument("--log-steps", default="")
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[launch] worker:{rank} started (pid {os.getpid()})", flush=True)
    torch.manual_seed(2024)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    for m in model:
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=0.001 * world)
    train_x, train_y = load("train")
    steps_per_epoch = len(train_x) // (a.batch * world)
    total = a.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.8 ** (step // steps_per_epoch))
    os.makedirs(a.dir, exist_ok=True)
    ckpt = os.path.join(a.dir, "latest.pt")
    step = 0
    if os.path.exists(ckpt):  # TorchElastic: every (re)start resumes from the last checkpoint
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        print(f"[worker:{rank}] resumed from step {step}", flush=True)
    log = open(f"{a.log_steps}.worker_{rank}", "a") if a.log_steps else None
    loss_fn = nn.CrossEntropyLoss()
    per_step = world * a.batch
    order, order_epoch = None, -1
    first_step, started = step, time.time()
    while step < total:
        position = step * per_step
        epoch, at = divmod(position, len(train_x))
        if epoch != order_epoch:  # one stream of reshuffled epochs, the same in every process
            order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(2024 + epoch))
            order_epoch = epoch
        batch = order[at + rank * a.batch: at + (rank + 1) * a.batch]
        opt.zero_grad()
        loss = loss_fn(ddp(train_x[batch]), train_y[batch])
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if log:
            log.write(f"{int(time.time() * 1000)} {step} {position} {world} {rank}\n")
            log.flush()
        if rank == 0 and step % 100 == 0:  # progress (chaos.sh starts its failures after the first)
            now = time.time()
            if step > first_step:
                rate = (step - first_step) * per_step / (now - started)
                print(f"[worker:0] step {step}/{total}  loss {loss.item():.4f}  {rate:.0f} examples/s in the cluster",
                      flush=True)
        if rank == 0 and step % a.save_every == 0:
            tmp = ckpt + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                        "step": step}, tmp)
            os.replace(tmp, ckpt)
    if rank == 0:
        test_x, test_y = load("t10k")
        with torch.no_grad():
            acc = (model(test_x).argmax(1) == test_y).float().mean().item() * 100
        print(f"[worker:0] trained {step} steps: test accuracy {acc:.2f}%", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
