"""Peer of bench_allreduce: torch.distributed.all_reduce (gloo backend) of
float32 tensors among N processes of this machine, one thread each, each call
timed alone on rank 0 (the tensor is refilled outside the timing, as
bench_allreduce refills gloo's buffer).

  peer_torch_allreduce.py [--ranks N]            driven block by block (bench_allreduce
                                                 interleaves it with its own figures):
      prints "ready" once the group has formed, then reads "BYTES CALLS" lines and
      answers each with one line: the CALLS times in ms; "0 0" or end of input ends it
  peer_torch_allreduce.py [--ranks N] BYTES...   alone: 3 warm-up calls, then
      max(15, min(300, 512 MiB / BYTES)) timed; prints "BYTES median_ms" per size

  peer_torch_allreduce.py --ranks N --rank R --master ADDR:PORT
                                                 one rank of a group whose ranks were started
      apart (one per simulated host: bench_allreduce_hosts); rank R joins at ADDR:PORT
      (rank 0 listens there) over the interface GLOO_SOCKET_IFNAME names; rank 0 is
      driven as above, the others follow it; a barrier (untimed) before each call

This process is rank 0; it starts ranks 1..N-1 (multiprocessing, spawn), which
take each block's size from rank 0 by a broadcast (outside the timing)."""
import argparse
import datetime
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

TIMEOUT = datetime.timedelta(seconds=120)


def join(rank, ranks, port, addr="127.0.0.1"):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=ranks,
                            timeout=TIMEOUT)


class Block:
    """`calls` all-reduces of `nbytes` of float32; each rank contributes rank + 1."""

    def __init__(self, rank, ranks, barrier=False):
        self.rank, self.ranks, self.x, self.barrier = rank, ranks, None, barrier
        self.expected = float(ranks * (ranks + 1) // 2)

    def run(self, nbytes, calls):
        if self.x is None or self.x.numel() != nbytes // 4:
            self.x = None  # one size's tensor at a time
            self.x = torch.empty(nbytes // 4)
        times = []
        for _ in range(calls):
            self.x.fill_(float(self.rank + 1))
            if self.barrier:  # untimed: no rank starts before rank 0's clock runs
                dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(self.x)
            times.append((time.perf_counter() - t0) * 1e3)
            if self.x[-1].item() != self.expected or self.x[0].item() != self.expected:
                raise SystemExit(f"peer_torch_allreduce: rank {self.rank} got {self.x[-1].item()}, "
                                 f"not {self.expected}")
        return times


def command(nbytes=0, calls=0):
    """Rank 0 sends (nbytes, calls) to every rank; the others receive it."""
    cmd = torch.tensor([nbytes, calls], dtype=torch.int64)
    dist.broadcast(cmd, 0)
    return int(cmd[0]), int(cmd[1])


def other_rank(rank, ranks, port, addr="127.0.0.1", barrier=False):
    join(rank, ranks, port, addr)
    block = Block(rank, ranks, barrier)
    while True:
        nbytes, calls = command()
        if nbytes <= 0:
            break
        block.run(nbytes, calls)
    dist.destroy_process_group()


def reps(nbytes):
    return max(15, min(300, (512 << 20) // nbytes))


def drive(block):
    """Rank 0: "BYTES CALLS" lines on stdin, each answered with the calls' ms."""
    print("ready", flush=True)
    for line in sys.stdin:
        nbytes, calls = (int(v) for v in line.split())
        if nbytes <= 0:
            break
        command(nbytes, calls)
        print(" ".join(f"{t:.4f}" for t in block.run(nbytes, calls)), flush=True)
    command(0, 0)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("sizes", type=int, nargs="*", help="bytes per all-reduce (alone)")
    ap.add_argument("--rank", type=int, help="this rank alone (with --master)")
    ap.add_argument("--master", help="ADDR:PORT of rank 0 (with --rank)")
    args = ap.parse_args()
    if args.ranks < 2 or any(s < 4 for s in args.sizes):
        ap.error("--ranks is at least 2 and sizes at least 4 bytes")
    if (args.rank is None) != (args.master is None) or (args.rank is not None and args.sizes):
        ap.error("--rank and --master go together, without sizes")
    if args.rank is not None:
        addr, port = args.master.rsplit(":", 1)
        if args.rank == 0:
            join(0, args.ranks, int(port), addr)
            drive(Block(0, args.ranks, barrier=True))
        else:
            other_rank(args.rank, args.ranks, int(port), addr, barrier=True)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=other_rank, args=(r, args.ranks, port)) for r in range(1, args.ranks)]
    for p in procs:
        p.start()
    try:
        join(0, args.ranks, port)
        block = Block(0, args.ranks)
        if args.sizes:
            for nbytes in args.sizes:
                command(nbytes, 3 + reps(nbytes))
                times = block.run(nbytes, 3 + reps(nbytes))[3:]
                print(nbytes, f"{statistics.median(times):.4f}", flush=True)
            command(0, 0)
            dist.destroy_process_group()
        else:
            drive(block)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit("peer_torch_allreduce: a rank failed")


if __name__ == "__main__":
    main()
