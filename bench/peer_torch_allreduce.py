"""Peer of bench_allreduce: torch.distributed.all_reduce (gloo backend) of
float32 tensors between two processes of this machine, one thread each.
Prints "bytes median_ms" per size given on the command line (rank 0)."""
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def reps(nbytes):
    return max(15, min(300, (512 << 20) // nbytes))


def run(rank, port, sizes, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    out = []
    for nbytes in sizes:
        x = torch.full((nbytes // 4,), float(rank + 1))
        times = []
        for r in range(reps(nbytes) + 3):
            x.fill_(float(rank + 1))
            t0 = time.perf_counter()
            dist.all_reduce(x)
            dt = (time.perf_counter() - t0) * 1e3
            assert x[-1].item() == 3.0
            if r >= 3:
                times.append(dt)
        out.append((nbytes, statistics.median(times)))
    dist.destroy_process_group()
    if rank == 0:
        queue.put(out)


def main():
    sizes = [int(s) for s in sys.argv[1:]]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=run, args=(r, port, sizes, queue)) for r in range(2)]
    for p in procs:
        p.start()
    out = queue.get(timeout=600)
    for p in procs:
        p.join(timeout=60)
    for nbytes, ms in out:
        print(nbytes, f"{ms:.4f}")


if __name__ == "__main__":
    main()
