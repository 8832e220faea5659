#!/usr/bin/env bash
# Runs every actorflow benchmark beside its peers and prints one JSON line per
# figure; all figures of one invocation come from the same run (these shared
# machines are noisy: compare within a run, by ratio).
#   bench/run_all.sh                 # builds (Release) into build/ first
#   bench/run_all.sh --only SECTION  # one section (several: repeat --only); sections below
#   bench/run_all.sh --no-build ...  # build/ as it is (no set-up, no build)
#   bench/run_all.sh --against REV   # then the runtime's own figures here beside
#                                    # those at REV (bench/compare_rev.sh)
# A program or peer that fails (non-zero exit) or prints no figure gets an
# error row, {"bench": NAME, "error": "..."}, so a missing figure is visible;
# the script goes on and exits 1 at the end if any row was an error.
# Sections: matmul executor variables checkpoint records torch conv queue loop python
# recv_scheduling devices train transport allreduce distributed multihost elastic (with chaos) gpu
set -euo pipefail
cd "$(dirname "$0")/.."
against="" only=" " build=1
while [ $# -gt 0 ]; do
  case $1 in
    --against) against=${2:?--against needs a revision}; shift 2 ;;
    --only) only+="${2:?--only needs a section} "; shift 2 ;;
    --no-build) build=0; shift ;;
    *) sed -n 2,14p "$0" >&2; exit 2 ;;
  esac
done
if [ $build = 1 ]; then
  ./setup.sh --bench
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j2 --target bench_executor bench_matmul bench_checkpoint bench_train bench_recv_scheduling bench_devices bench_gpu_train \
    bench_records bench_queue bench_control_flow bench_transport actorflow_cli peer_tbb_flow bench_variable_update bench_allreduce \
    train_distributed bench_conv transport_peer bench_allreduce_hosts restore_checkpoints bench_session actorflow_python >/dev/null
fi

# The peers on OpenBLAS (PyTorch's matmul, bench_matmul's) at their best: its
# kernels for this CPU where OpenBLAS 0.3.21 does not know the model (bench/openblas_core.py).
core=$(/usr/bin/python3 bench/openblas_core.py 2>/dev/null || true)
[ -z "$core" ] || export OPENBLAS_CORETYPE=$core
errors=$(mktemp)  # one line per error row (figure may run in a pipeline's subshell)
trap 'rm -f "$errors"' EXIT
# section NAME: whether NAME runs (all of them unless --only names some).
section() { [ "$only" = " " ] || [[ $only == *" $1 "* ]]; }
# figure NAME CMD...: runs CMD (a program, or a function of several), its
# output passing through; an error row when it exits non-zero or prints no
# JSON line (its last line says why).
figure() {
  local name=$1 log rc why
  shift
  log=$(mktemp)
  if "$@" 2>&1 | tee "$log"; then rc=0; else rc=${PIPESTATUS[0]}; fi
  if [ "$rc" -ne 0 ] || ! grep -q '^{' "$log"; then
    why=$(grep -v '^{' "$log" | grep -v '^\s*$' | tail -1 | tr -d '"\\' | cut -c1-200 || true)  # may be no line
    printf '{"bench":"%s","error":"%s%s"}\n' "$name" "$([ "$rc" -ne 0 ] && echo "exit $rc" || echo "no figure")" \
      "${why:+: $why}"
    echo "$name" >> "$errors"
  elif grep -q '^{.*"error"' "$log"; then  # an error row of its own (bench_distributed_train.sh's)
    echo "$name" >> "$errors"
  fi
  rm -f "$log"
}

if section matmul; then
  # One process per (threads, size): actorflow and Eigen interleaved call by
  # call; OpenBLAS alone, since its threads spin long after each call.
  for t in 1 2; do
    for n in 256 1024 2048; do
      # OpenBLAS starts its threads when loaded and they spin: none unless measured.
      ACTORFLOW_NUM_THREADS=$t OPENBLAS_NUM_THREADS=1 figure matmul_f32 ./build/bench/bench_matmul $n actorflow,eigen
      ACTORFLOW_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t figure matmul_f32_openblas ./build/bench/bench_matmul $n openblas
    done
  done
fi
if section executor; then
  ACTORFLOW_NUM_THREADS=2 figure executor ./build/bench/bench_executor
  # Inter-step concurrency: one thread per kernel, so a second client has a core to use.
  ACTORFLOW_NUM_THREADS=2 ACTORFLOW_INTRA_OP_THREADS=1 figure concurrent_matmul_steps ./build/bench/bench_executor concurrent
  ACTORFLOW_NUM_THREADS=2 figure executor_tbb_peer ./build/bench/peer_tbb_flow
fi
if section variables; then
  # One ApplyGradientDescent step of a 0.8 MB and a 64 MB variable (GB/s of memory
  # touched) beside a plain parallel loop over the same bytes with as many threads,
  # and what an update of a small variable adds to a step beside PyTorch's in-place
  # update of a parameter; at 1 and 2 threads.
  for t in 1 2; do
    ACTORFLOW_NUM_THREADS=$t figure variable_update ./build/bench/bench_variable_update
    ACTORFLOW_NUM_THREADS=$t figure small_update_torch_peer /usr/bin/python3 bench/peer_torch_update.py
  done
fi
if section checkpoint; then
  # Save and restore of 64 MiB beside plain write()+fsync and read() of the same
  # bytes, in build/: on a real disk, where /tmp may be tmpfs (fsync costs nothing).
  ACTORFLOW_NUM_THREADS=2 figure checkpoint ./build/bench/bench_checkpoint build
fi
if section records; then
  # TFRecord reading (~200 MB of 64-float records, CRCs checked) beside fread of
  # the same file, both from the page cache.
  figure records_read ./build/bench/bench_records build
fi
if section torch; then
  ACTORFLOW_NUM_THREADS=1 figure executor_torch_peer /usr/bin/python3 bench/peer_torch.py
fi
if section conv; then
  # Conv2D, its backprops and MaxPool in a small CNN's shapes, beside PyTorch's
  # (its conv2d and max_pool2d, NCHW), at 1 and 2 threads.
  for t in 1 2; do
    ACTORFLOW_NUM_THREADS=$t figure conv2d ./build/bench/bench_conv
    ACTORFLOW_NUM_THREADS=$t figure conv2d_torch_peer /usr/bin/python3 bench/peer_torch_conv.py
  done
fi
if section queue; then
  # Records/s through a RandomShuffleQueue (2 producers, enqueue-many 256 and 4096,
  # dequeue-many 64) beside a mutex+condvar queue fed in the same batches, then
  # PyTorch's DataLoader.
  figure queue_records ./build/bench/bench_queue
  figure queue_records_torch_peer /usr/bin/python3 bench/peer_torch_dataloader.py
fi
if section python; then
  # The Python front-end beside C++ (bench_session, bench_train) and PyTorch, in rounds:
  # sess.run's cost over C++'s, a 64 MiB feed and fetch, the MLP training loop.
  figure python /usr/bin/python3 bench/bench_python.py --build build --rounds 5
fi
if section loop; then
  # Loops: time per iteration of a trivial loop beside plain C++ and PyTorch,
  # independent MatMul iterations with parallel_iterations 10 vs 1, memory of a
  # 1M-iteration loop.
  figure loop ./build/bench/bench_control_flow
  figure loop_torch_peer /usr/bin/python3 bench/peer_torch_loop.py
fi
if section recv_scheduling; then
  # Peak memory and step time with _Recvs scheduled late and as soon as possible
  # (two CPU devices in one process).
  ACTORFLOW_NUM_THREADS=2 figure recv_scheduling ./build/bench/bench_recv_scheduling
fi
if section devices; then
  # Several CPU devices in one process: two branches on one vs two devices,
  # placement strategies, the cost of a Send/Recv pair.
  ACTORFLOW_NUM_THREADS=2 figure devices ./build/bench/bench_devices
fi
if section train; then
  # One SGD training step (MLP 784-256-10 at batch 64 and 256, softmax regression
  # 64-10 at batch 32) beside PyTorch training the same models the same way.
  # Per figure, three rounds of actorflow at 1 and 2 threads, then the peer
  # (which tries 1 and 2 threads itself), back to back: train_ratio.py prints
  # best over best per round.
  figure train_torch_check /usr/bin/python3 bench/peer_torch_train.py --check
  train_rounds() {
    local round fig
    for round in 1 2 3; do
      for fig in mlp64 mlp256 softmax32; do
        ACTORFLOW_NUM_THREADS=1 figure train_step ./build/bench/bench_train $fig
        ACTORFLOW_NUM_THREADS=2 figure train_step ./build/bench/bench_train $fig
        figure train_step_torch_peer /usr/bin/python3 bench/peer_torch_train.py $fig
      done
    done
  }
  train_rounds | /usr/bin/python3 bench/train_ratio.py
fi
if section transport; then
  # Tensors between two processes: throughput 4 KiB..64 MiB beside raw Boost.Asio and
  # CAF remote messages, 16-bit compression, a 4-byte round trip; then a 2-partition
  # step across processes beside the same partitions on two devices of one process.
  ACTORFLOW_NUM_THREADS=1 figure transport ./build/bench/bench_transport
  ACTORFLOW_NUM_THREADS=1 figure transport_tls ./build/bench/bench_transport tls
  ACTORFLOW_NUM_THREADS=1 figure transport_link ./build/bench/bench_transport link
  ACTORFLOW_NUM_THREADS=1 figure step_two_partitions ./build/bench/bench_transport steps ./build/actorflow
  # Between two simulated hosts (tests/netns/hosts.sh; root): link rate vs achieved, beside a TCP stream.
  ACTORFLOW_NUM_THREADS=1 figure transport_multihost bench/transport_multihost.sh
fi
if section allreduce; then
  # All-reduce among 2 and among 3 processes (the ring), 4 KiB..64 MiB: actorflow with
  # the same-host path off beside gloo called directly and torch.distributed.all_reduce
  # (gloo), interleaved, then as it runs on one host (labelled same_host, with how many
  # tensors took that path); each run checks its sums against gloo's.
  ACTORFLOW_NUM_THREADS=1 figure allreduce ./build/bench/bench_allreduce --ranks 2 /usr/bin/python3
  ACTORFLOW_NUM_THREADS=1 figure allreduce_3 ./build/bench/bench_allreduce --ranks 3 /usr/bin/python3
fi
if section distributed; then
  # Data-parallel training across processes (1 thread each): examples/s in every mode
  # beside PyTorch DDP (torchrun, gloo) and one actorflow process; recovery times.
  figure train_distributed bench/bench_distributed_train.sh build
fi
if section multihost; then
  # Across 4 simulated hosts (a network + PID namespace each, 1 Gbit/s tbf links:
  # tests/netns/hosts.sh), 2 tasks each: all-reduce busbw (nccl-tests' units) of actorflow
  # as it chooses (one leader per host), sharded, the flat ring and torch.distributed gloo, for block
  # and cyclic placements; then one worker per host: MLP training examples/s in allreduce,
  # sync and async beside DDP (gloo). A "skipped" row each where namespaces cannot be made.
  figure allreduce_multihost bench/bench_allreduce_multihost.sh build
  figure train_multihost bench/bench_train_multihost.sh build
fi
if section elastic; then
  # Elastic all-reduce (3 workers, --min-workers 2): a random worker killed every 10 s and
  # restarted: time from a kill to the survivors' sync, from a comeback to the group grown,
  # examples/s with failures / without, accuracy, checkpoint restores (0), hangs (0).
  figure elastic bench/bench_elastic.sh build
  # The chaos suite: all-reduce (--elastic) beside its peer (PyTorch DDP under torchrun,
  # which restarts every worker from the last checkpoint), async and sync (--backup-workers 1),
  # and across simulated hosts, each run beside the same one without failures; a failure every
  # ~10 s at random (kill -9, SIGSTOP, ps kill, link down): efficiency, time to resume, steps
  # lost, accuracy, hangs (0), checkpoints that restore.
  figure chaos bench/chaos.sh build
fi
if section gpu; then
  # The MLP 784-h-h-10 training step on a GPU (default placement) beside PyTorch on
  # the same GPU, ms per step: the same work (pinned, non_blocking copies) and at its
  # best (resident batch, one CUDA graph per step), with their ratios to ours; both say
  # so and measure nothing where there is no GPU: a "skipped" row each there (no
  # error: nothing could be measured), an error row where a GPU is and a figure fails.
  if nvidia-smi -L >/dev/null 2>&1; then
    figure gpu_train_step bash -c 'set -o pipefail; ./build/bench/bench_gpu_train | tee build/gpu_train_step.json'
    figure gpu_train_step_torch_peer /usr/bin/python3 bench/peer_torch_gpu_train.py --beside build/gpu_train_step.json
  else
    for name in gpu_train_step gpu_train_step_torch_peer; do
      printf '{"bench":"%s","skipped":"no GPU here (nvidia-smi -L fails)"}\n' "$name"
    done
  fi
fi
if [ -n "$against" ]; then figure compare_rev bench/compare_rev.sh "$against"; fi
if [ -s "$errors" ]; then
  echo "run_all: $(wc -l < "$errors") error row(s) above: $(sort -u "$errors" | paste -sd' ')" >&2
  exit 1
fi
