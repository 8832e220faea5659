"""Peer of train_distributed --report: PyTorch DistributedDataParallel (gloo)
training the same MLP 784-256-10 (ReLU, softmax cross-entropy, Adam) with
2 processes x 1 thread, launched by torchrun:

  OMP_NUM_THREADS=1 python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
      bench/peer_torch_ddp.py --batch 256 --steps 400

Each process draws its batch from its own shard of 10000 random images
(indexing, as the example gathers its batches). Rank 0 prints the cluster's
examples/s from the 10th step to the last, as a JSON line."""
import argparse
import json
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=400)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    images = torch.rand(10000, 784)
    labels = torch.randint(0, 10, (10000,))
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    model = DistributedDataParallel(net)
    opt = torch.optim.Adam(model.parameters(), lr=0.001 * world)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(100 + rank)
    t0 = None
    for step in range(a.steps):
        if step == 10:
            dist.barrier()
            t0 = time.perf_counter()
        idx = torch.randint(0, images.shape[0], (a.batch,), generator=gen)
        x, y = images.index_select(0, idx), labels.index_select(0, idx)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    dist.barrier()
    secs = time.perf_counter() - t0
    if rank == 0:
        rate = (a.steps - 10) * a.batch * world / secs
        print(json.dumps({"bench": "train_ddp_peer", "params": {"batch": a.batch, "workers": world, "impl": "pytorch_ddp"},
                          "metric": "throughput", "unit": "examples/s", "median": rate}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
