#!/usr/bin/env bash
# Runs every actorflow benchmark beside its peers and prints one JSON line per
# figure; all figures of one invocation come from the same run (these shared
# machines are noisy: compare within a run, by ratio).
#   bench/run_all.sh                 # builds (Release) into build/ first
#   bench/run_all.sh --against REV   # then the runtime's own figures here beside
#                                    # those at REV (bench/compare_rev.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
against=""
if [ "${1:-}" = "--against" ]; then against=${2:?--against needs a revision}; fi
./setup.sh --bench
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target bench_executor bench_matmul bench_checkpoint bench_train bench_recv_scheduling bench_devices bench_gpu_train \
  bench_records bench_queue bench_control_flow bench_transport actorflow_cli peer_tbb_flow bench_allreduce \
  train_distributed bench_conv >/dev/null

# One process per (threads, size): actorflow and Eigen interleaved call by
# call; OpenBLAS alone, since its threads spin long after each call.
for t in 1 2; do
  for n in 256 1024 2048; do
    # OpenBLAS starts its threads when loaded and they spin: none unless measured.
    ACTORFLOW_NUM_THREADS=$t OPENBLAS_NUM_THREADS=1 ./build/bench/bench_matmul $n actorflow,eigen
    ACTORFLOW_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t ./build/bench/bench_matmul $n openblas
  done
done
ACTORFLOW_NUM_THREADS=2 ./build/bench/bench_executor
# Inter-step concurrency: one thread per kernel, so a second client has a core to use.
ACTORFLOW_NUM_THREADS=2 ACTORFLOW_INTRA_OP_THREADS=1 ./build/bench/bench_executor concurrent
ACTORFLOW_NUM_THREADS=2 ./build/bench/peer_tbb_flow
# Save and restore of 64 MiB beside plain write()+fsync and read() of the same
# bytes, in build/: on a real disk, where /tmp may be tmpfs (fsync costs nothing).
ACTORFLOW_NUM_THREADS=2 ./build/bench/bench_checkpoint build
# TFRecord reading (~200 MB of 64-float records, CRCs checked) beside fread of
# the same file, both from the page cache.
./build/bench/bench_records build
ACTORFLOW_NUM_THREADS=1 /usr/bin/python3 bench/peer_torch.py
# Conv2D, its backprops and MaxPool in a small CNN's shapes, beside PyTorch's
# (its conv2d and max_pool2d, NCHW), at 1 and 2 threads.
for t in 1 2; do
  ACTORFLOW_NUM_THREADS=$t ./build/bench/bench_conv
  ACTORFLOW_NUM_THREADS=$t /usr/bin/python3 bench/peer_torch_conv.py
done
# Records/s through a RandomShuffleQueue (2 producers, enqueue-many 256 and 4096,
# dequeue-many 64) beside a mutex+condvar queue, then PyTorch's DataLoader.
./build/bench/bench_queue
/usr/bin/python3 bench/peer_torch_dataloader.py
# Loops: time per iteration of a trivial loop beside plain C++ and PyTorch,
# independent MatMul iterations with parallel_iterations 10 vs 1, memory of a
# 1M-iteration loop.
./build/bench/bench_control_flow
/usr/bin/python3 bench/peer_torch_loop.py
# Peak memory and step time with _Recvs scheduled late and as soon as possible
# (two CPU devices in one process).
ACTORFLOW_NUM_THREADS=2 ./build/bench/bench_recv_scheduling
# Several CPU devices in one process: two branches on one vs two devices,
# placement strategies, the cost of a Send/Recv pair.
ACTORFLOW_NUM_THREADS=2 ./build/bench/bench_devices
# One SGD training step (MLP 784-256-10 at batch 64 and 256, softmax regression
# 64-10 at batch 32) beside PyTorch training the same models the same way.
# Per figure, three rounds of actorflow at 1 and 2 threads, then the peer
# (which tries 1 and 2 threads itself), back to back: train_ratio.py prints
# best over best per round.
/usr/bin/python3 bench/peer_torch_train.py --check
for round in 1 2 3; do
  for figure in mlp64 mlp256 softmax32; do
    ACTORFLOW_NUM_THREADS=1 ./build/bench/bench_train $figure
    ACTORFLOW_NUM_THREADS=2 ./build/bench/bench_train $figure
    /usr/bin/python3 bench/peer_torch_train.py $figure
  done
done | /usr/bin/python3 bench/train_ratio.py
# Tensors between two processes: throughput 4 KiB..64 MiB beside raw Boost.Asio and
# CAF remote messages, 16-bit compression, a 4-byte round trip; then a 2-partition
# step across processes beside the same partitions on two devices of one process.
ACTORFLOW_NUM_THREADS=1 ./build/bench/bench_transport
ACTORFLOW_NUM_THREADS=1 ./build/bench/bench_transport tls
ACTORFLOW_NUM_THREADS=1 ./build/bench/bench_transport link
ACTORFLOW_NUM_THREADS=1 ./build/bench/bench_transport steps ./build/actorflow
# All-reduce between two processes, 4 KiB..64 MiB, beside gloo called directly and
# torch.distributed.all_reduce (gloo).
ACTORFLOW_NUM_THREADS=1 ./build/bench/bench_allreduce /usr/bin/python3
# Data-parallel training across processes (1 thread each): examples/s in every mode
# beside PyTorch DDP (torchrun, gloo) and one actorflow process; recovery times.
bench/bench_distributed_train.sh build
# The MLP 784-h-h-10 training step on a GPU (default placement) beside PyTorch on
# the same GPU, ms per step; both say so and measure nothing where there is no GPU.
./build/bench/bench_gpu_train
/usr/bin/python3 bench/peer_torch_gpu_train.py
if [ -n "$against" ]; then bench/compare_rev.sh "$against"; fi
