#!/usr/bin/env bash
# Training examples/s of the Fashion-MNIST MLP across processes, 1 thread per
# process, in every mode of examples/train_distributed (async and sync: 1 ps +
# 2 workers; allreduce: 2 workers), beside PyTorch DDP (gloo, 2 processes x 1
# thread, torchrun: bench/peer_torch_ddp.py) and actorflow in one process
# (1 worker, 1 thread), all in the same run, at batch 256 and 1024 per worker.
# Then the time from kill -9 of a worker (allreduce), and of the ps task
# (async), to training going on again. One JSON line per figure.
#   bench/bench_distributed_train.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
py=/usr/bin/python3
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d /tmp/af_bench_dist_XXXXXX)
trap 'rm -rf "$work"' EXIT

cluster() {  # cluster NPS NWORKERS -> file
  local f="$work/cluster_$1_$2.json" ps="" ws=""
  for ((i = 0; i < $1; i++)); do ps+="${ps:+, }\"127.0.0.1:$(free_port)\""; done
  for ((i = 0; i < $2; i++)); do ws+="${ws:+, }\"127.0.0.1:$(free_port)\""; done
  if [ "$1" -gt 0 ]; then echo "{\"ps\": [$ps], \"worker\": [$ws]}" >"$f"; else echo "{\"worker\": [$ws]}" >"$f"; fi
  echo "$f"
}

run() {  # run MODE NPS NWORKERS BATCH STEPS -> the chief's JSON line
  local f; f=$(cluster "$2" "$3")
  rm -rf "$work/ckpt"
  ACTORFLOW_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout 600 "$build/actorflow" launch --cluster "$f" -- \
    "$build/examples/train_distributed" --mode "$1" --batch "$4" --steps "$5" --save-every 1000000 \
    --dir "$work/ckpt" --report 2>&1 | grep -o '{"bench":"train_distributed".*}' || echo "{\"bench\":\"train_distributed\",\"params\":{\"mode\":\"$1\",\"batch\":$4},\"error\":\"no figure\"}"
}

for batch in 256 1024; do
  steps=$((batch == 256 ? 600 : 200))
  run allreduce 0 1 "$batch" "$steps"   # one process, 1 thread: the scaling's base
  run allreduce 0 2 "$batch" "$steps"
  run sync 1 2 "$batch" "$steps"
  run async 1 2 "$batch" "$((steps * 2))"
  OMP_NUM_THREADS=1 timeout 600 "$py" -m torch.distributed.run --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
    bench/peer_torch_ddp.py --batch "$batch" --steps "$steps" 2>/dev/null | grep -o '{"bench": "train_ddp_peer".*}' ||
    echo "{\"bench\":\"train_ddp_peer\",\"params\":{\"batch\":$batch},\"error\":\"no figure (torchrun failed or printed none)\"}"
done

# Recovery: kill -9 a worker (allreduce) or the ps (async) in the middle of
# training; the time until a surviving worker's first step after it.
recover() {  # recover MODE NPS VICTIM
  local f log="$work/recover.log"; f=$(cluster "$2" 2)
  rm -rf "$work/ckpt"
  ACTORFLOW_NUM_THREADS=1 timeout 600 "$build/actorflow" launch --cluster "$f" --max-restarts 2 -- \
    "$build/examples/train_distributed" --mode "$1" --batch 100 --steps 6000 --save-every 200 \
    --dir "$work/ckpt" >"$log" 2>&1 &
  local launcher=$!
  for _ in $(seq 100); do grep -q "steps; from step" "$log" 2>/dev/null && break; sleep 0.1; done
  sleep 3
  local pid; pid=$(grep -o "$3 started (pid [0-9]*" "$log" | head -1 | grep -o '[0-9]*$')
  local killed_ms; killed_ms=$("$py" -c 'import time; print(int(time.time()*1000))')
  kill -9 "$pid"
  wait "$launcher" || true
  local back_ms; back_ms=$(grep -o 'training goes on at step [0-9]* \[unix ms [0-9]*' "$log" | head -1 | grep -o '[0-9]*$' || true)
  if [ -n "$back_ms" ]; then
    echo "{\"bench\":\"train_recovery\",\"params\":{\"mode\":\"$1\",\"killed\":\"$3\"},\"metric\":\"time to training again\",\"unit\":\"s\",\"median\":$(( back_ms - killed_ms ))e-3,\"exit\":\"$(tail -1 "$log" | tr -d '"')\"}"
  else
    echo "{\"bench\":\"train_recovery\",\"params\":{\"mode\":\"$1\",\"killed\":\"$3\"},\"error\":\"no recovery line\"}"
  fi
}
recover allreduce 0 worker:1
recover async 1 ps:0
